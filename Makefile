# Two commands on a fresh machine with Python 3.11 and make:
#   make run   set up .venv and start the studio on the demo bank
#   make test  set up .venv with dev extras and run ruff, import-linter and every test
#   make check the developers' fast loop: the same without the tests marked slow

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
# pip is pointed at torch's CPU wheel by the pin in pyproject.toml (torch==2.13.0).
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: run test check lint unit fast bench screenshots clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[dev]'
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(BIN)/engram

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check core app tests benchmarks
	$(BIN)/lint-imports

unit: $(VENV)/.installed-dev
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n 2

test: lint unit

fast: $(VENV)/.installed-dev
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n 2 -m "not slow"

check: lint fast

screenshots: $(VENV)/.installed
	QT_QPA_PLATFORM=offscreen $(BIN)/engram screenshot --out docs/screenshots

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/store_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
