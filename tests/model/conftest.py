"""The real-model check's fixtures: the llama.cpp server (in the model venv,
`make test-model` says where: ENGRAM_LLAMA_PYTHON) with every assembled model,
one engine home per session, the demo conversations."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.model import models as model_sources  # stdlib only: no llama_cpp here

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DEMO = ROOT / "resources" / "demo"

# Loading a GGUF and reading its header on a busy machine.
START_TIMEOUT = 300.0


def llama_python() -> Path:
    return Path(os.environ["ENGRAM_LLAMA_PYTHON"])


def available_models() -> list[tuple[str, Path]]:
    venv = llama_python().parent.parent
    return model_sources.available(venv)


class LlamaServer:
    """`tests/model/llama_server.py` running in the model venv, on 127.0.0.1."""

    def __init__(self, folder: Path, models: list[tuple[str, Path]]) -> None:
        self.models = [name for name, _ in models]
        port_file = folder / "port"
        self.log = (folder / "server.log").open("wb")
        argv = [str(llama_python()), str(HERE / "llama_server.py"), "--port-file", str(port_file)]
        for name, path in models:
            argv += ["--model", f"{name}={path}"]
        # Two runs side by side on two cores: a thread each (llama.cpp's threads
        # wait on one another, and a preempted one stalls its partner).
        if threads := os.environ.get("ENGRAM_LLAMA_THREADS"):
            argv += ["--threads", threads]
        self.process = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while not port_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the llama server did not start (see {folder}/server.log)")
            time.sleep(0.2)
        self.url = f"http://127.0.0.1:{int(port_file.read_text())}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[LlamaServer]:
    models = available_models()
    if not models:
        pytest.fail("no model assembled in the model venv: run `make test-model`")
    server = LlamaServer(tmp_path_factory.mktemp("llama"), models)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def model_name() -> str:
    """The model the check runs on: the first available (Qwen2.5-Coder 0.5B), or
    ENGRAM_TEST_MODEL."""
    names = [name for name, _ in available_models()]
    wanted = os.environ.get("ENGRAM_TEST_MODEL") or names[0]
    assert wanted in names, f"{wanted} is not assembled (have: {', '.join(names)})"
    return wanted


def demo_files() -> list[Path]:
    files = sorted(p for p in DEMO.iterdir() if p.suffix in (".txt", ".json", ".jsonl"))
    files = [p for p in files if p.name not in ("queries.txt", "bank.json")]
    # ENGRAM_TEST_MODEL_DOCS: a count (the first N files) or file-name prefixes ("06,08").
    # ("06" is the file 06-…, not six files: a count is "first:N").
    chosen = os.environ.get("ENGRAM_TEST_MODEL_DOCS", "").strip()
    if chosen.startswith("first:"):
        return files[: int(chosen.split(":", 1)[1])]
    if chosen:
        prefixes = [c.strip() for c in chosen.split(",") if c.strip()]
        return [p for p in files if any(p.name.startswith(x) for x in prefixes)]
    return files


def demo_profile() -> dict:
    return json.loads((DEMO / "bank.json").read_text("utf-8"))


def demo_queries() -> list[str]:
    return [q for q in (DEMO / "queries.txt").read_text("utf-8").splitlines() if q.strip()]
