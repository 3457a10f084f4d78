"""The demo bank builds from resources/demo in rules mode; `engram screenshot` renders every pane."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

from app.demo import DEMO_NAME, build_demo_bank, demo_files, start_demo_build
from app.main import main as engram_main
from core import CancelledError, CancelToken, Engine, Network
from tests.app.conftest import DEMO, REPO, wait_idle


@pytest.fixture
def demo_folder(tmp_path):
    """bank.json and two of the demo conversations (the whole demo takes minutes)."""
    folder = tmp_path / "demo"
    folder.mkdir()
    for name in (
        "bank.json",
        "03-may-beacon-beta.json",
        "06-june-atlas-incident.jsonl",
        "README.md",
    ):
        shutil.copy(DEMO / name, folder / name)
    return folder


def test_demo_files_are_the_numbered_conversations():
    names = [p.name for p in demo_files(DEMO)]
    assert names[0].startswith("01-") and len(names) == 8
    assert "README.md" not in names and "bank.json" not in names and "queries.txt" not in names


@pytest.mark.slow
def test_first_start_builds_the_demo_bank_in_the_runner(
    qtbot, make_window, engine, embedder, demo_folder, monkeypatch
):
    monkeypatch.setenv("ENGRAM_DEMO_DIR", str(demo_folder))
    window = make_window()
    progress = []
    said = []  # what the bank list and a pane said while it was built
    window.runner.job_started.connect(
        lambda job: job.progressed.connect(lambda d, t, m: progress.append(m))
    )
    window.state.building_changed.connect(
        lambda _b: said.append((window.bank_list.empty.text(), window.pane("world").empty.text()))
    )
    start_demo_build(window)
    qtbot.waitUntil(lambda: window.state.bank is not None, timeout=120_000)
    wait_idle(qtbot, window.runner)
    assert window.state.building is None
    assert any(
        re.search(r"Building the bank “Demo: Juniper”… [1-9]\d?%", listed)
        and "03-may-beacon-beta.json" in pane
        for listed, pane in said
    )
    bank = window.state.bank
    label = json.loads((demo_folder / "bank.json").read_text("utf-8"))
    assert bank.name == DEMO_NAME == label["name"]
    profile = bank.profile()
    assert profile.agent_name == "Juniper"
    assert profile.disposition.empathy == label["disposition"]["empathy"]
    for network in Network:
        assert bank.count(network) > 0, network
    assert all(u.extraction_mode == "rules" for u in bank.units(Network.WORLD, limit=20))
    assert any("03-may-beacon-beta.json" in m for m in progress)
    assert any(m.startswith("observations") for m in progress)
    qtbot.waitUntil(lambda: DEMO_NAME in window.bank_list.names())


def test_a_cancelled_demo_build_leaves_no_half_bank(engine, demo_folder):
    token = CancelToken()
    token.cancel()
    with pytest.raises(CancelledError):
        build_demo_bank(engine, cancel=token, folder=demo_folder)
    assert engine.banks() == []


def _screenshot(tmp_path, demo_subset_home, *options: str):
    """`engram screenshot --out <tmp>/shots --home <a copy of the demo subset> OPTIONS`."""
    home = tmp_path / "home"
    shutil.copytree(demo_subset_home, home)
    with Engine(home) as engine:
        engine.rename_bank("Demo", DEMO_NAME)
    out = tmp_path / "shots"
    # A process of its own: the tool sets up its own QApplication, theme and QSettings.
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "app.main", "screenshot", "--out", str(out)]
    done = subprocess.run(
        [*command, "--home", str(home), *options],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return done, out


@pytest.mark.slow
def test_screenshot_renders_every_pane(tmp_path, demo_subset_home):
    done, out = _screenshot(tmp_path, demo_subset_home, "--size", "1200x800")
    names = sorted(p.name for p in out.glob("*.png"))
    for slug in (
        "world",
        "experience",
        "opinion",
        "observation",
        "entities",
        "ingest",
        "snapshots",
        "audit",
        "settings",
    ):
        assert any(n.endswith(f"-{slug}.png") for n in names), slug
    assert "dialog-shortcuts.png" in names
    image = QImage(str(out / "01-world.png"))
    assert (image.width(), image.height()) == (1200, 800)
    # Not a blank canvas: the table, text and badges put many colours on it.
    colours = {image.pixel(x, y) for x in range(0, 1200, 7) for y in range(0, 800, 7)}
    assert len(colours) > 20
    assert "QThread: Destroyed" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_screenshot_animate_writes_the_replay_as_numbered_frames(tmp_path, demo_subset_home):
    """`engram screenshot --animate`: the graph's replay of the demo query, two frames
    a step, numbered, each a different picture (the animation checked without a display)."""
    done, out = _screenshot(tmp_path, demo_subset_home, "--animate", "--size", "1000x700")
    frames = sorted(out.glob("*.png"))
    assert [f.name for f in frames] == [f"graph-frame-{n:03d}.png" for n in range(len(frames))]
    assert done.stdout.split() == [str(f) for f in frames]
    # The seeds, then each step half-way and whole: at least two steps on this subset.
    assert len(frames) >= 5 and len(frames) % 2 == 1
    images = [QImage(str(f)) for f in frames]
    assert all((i.width(), i.height()) == (1000, 700) for i in images)
    assert all(a != b for a, b in zip(images, images[1:], strict=False))
    assert "Traceback" not in done.stderr


def test_engram_screenshot_is_routed_to_the_studio(capsys):
    with pytest.raises(SystemExit) as exit_:
        engram_main(["screenshot", "--help"])
    assert exit_.value.code == 0
    assert "engram screenshot" in capsys.readouterr().out


def test_closing_during_the_demo_build_cancels_it_cleanly(
    qtbot, make_window, engine, embedder, demo_folder, monkeypatch, capfd
):
    monkeypatch.setenv("ENGRAM_DEMO_DIR", str(demo_folder))
    window = make_window()
    started = []
    window.runner.job_started.connect(
        lambda job: job.progressed.connect(lambda *a: started.append(a))
    )
    start_demo_build(window)
    qtbot.waitUntil(lambda: bool(started), timeout=60_000)
    window.close()  # cancels the build and waits for it
    assert not window.runner.busy
    assert engine.banks() == []  # the half-built demo bank was removed
    err = capfd.readouterr().err
    assert "QThread: Destroyed" not in err and "has been deleted" not in err
