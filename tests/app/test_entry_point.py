"""`engram`: one parser tree; a subcommand runs headless, no subcommand opens the studio;
help, bank listings and argument errors load nothing heavy."""

from __future__ import annotations

import json

import pytest

from app.main import build_parser
from tests.app.conftest import REPO, wait_idle
from tests.support.interpreter import run_python

HEAVY = ("duckdb", "lancedb", "torch", "onnxruntime", "sentence_transformers", "PySide6", "pyarrow")


@pytest.mark.parametrize(
    ("args", "command"),
    [
        ([], None),
        (["--home", "/tmp/banks"], None),
        (["--home", "/tmp/banks", "--no-demo"], None),
        (["--home=/tmp/banks"], None),
        (["banks"], "banks"),
        (["--home", "/tmp/banks", "recall", "b", "q"], "recall"),
        (["screenshot", "--out", "x"], "screenshot"),
    ],
)
def test_the_subcommand_is_the_first_word_that_is_no_option(args, command):
    assert build_parser().parse_args(args).command == command


def test_help_lists_every_command_including_screenshot():
    parser = build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    listed = parser.format_help()
    assert "screenshot" in sub.choices
    for name in sub.choices:
        assert f"    {name}" in listed


def test_home_before_screenshot_reaches_it():
    args = build_parser().parse_args(["--home", "/tmp/h", "screenshot", "--out", "o"])
    assert (args.home, args.out, args.standalone.__name__) == ("/tmp/h", "o", "run")


def _modules_after(argv: list[str], home) -> tuple[int, list[str]]:
    """Run `engram ARGV` in a fresh interpreter; its exit code and the heavy modules it loaded."""
    code = f"""
import json, sys
from app.main import main
try:
    rc = main({argv!r})
except SystemExit as stop:
    rc = stop.code
print(json.dumps([rc, [m for m in {HEAVY!r} if m in sys.modules]]))
"""
    done = run_python(["-c", code], ENGRAM_HOME=str(home))
    rc, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    return rc, loaded


@pytest.mark.parametrize(
    ("argv", "expected_rc"),
    [
        (["--help"], 0),
        (["banks"], 0),
        (["recall"], 2),  # missing arguments
        (["recall", "b", "q", "--level", "nope"], 2),  # a bad choice
        (["no-such-command"], 2),
    ],
)
def test_help_banks_and_argument_errors_load_nothing_heavy(tmp_path, argv, expected_rc):
    rc, loaded = _modules_after(argv, tmp_path)
    assert rc == expected_rc
    assert loaded == []


def test_the_launcher_without_a_file_opens_the_studio():
    """The menu runs the launcher's `Exec=engram --open %f` with %f dropped: that is
    the studio (it exited 2, "expected one argument", and nothing showed)."""
    desktop = (REPO / "packaging" / "engram-studio.desktop").read_text("utf-8")
    [exec_line] = [line for line in desktop.splitlines() if line.startswith("Exec=")]
    words = exec_line.removeprefix("Exec=").split()
    assert words[0] == "engram" and "%f" in words
    from_menu = [w for w in words[1:] if w != "%f"]
    args = build_parser().parse_args(from_menu)
    assert args.command is None and args.open is None
    opened = build_parser().parse_args([w.replace("%f", "/x/a.engram") for w in words[1:]])
    assert opened.command is None and opened.open == "/x/a.engram"


def _offer(qtbot, window):
    from PySide6.QtWidgets import QMessageBox

    box = window.findChild(QMessageBox, "offer-import")
    qtbot.waitUntil(lambda: box.isVisible())
    return box


@pytest.mark.slow
def test_open_offers_to_import_a_snapshot_and_opens_it(qtbot, make_window, small_bank, tmp_path):
    """`engram --open FILE` (the desktop's "open with" for .engram files): asked
    first, then imported and opened."""
    from core import Engine

    path = tmp_path / "small.engram"
    small_bank.export_snapshot(path)
    with Engine(tmp_path / "elsewhere") as other:
        window = make_window(engine=other)
        window.start(open_last=False)
        window.open_snapshot(path)
        box = _offer(qtbot, window)
        assert "small.engram" in box.text() and other.banks() == []  # nothing before a yes
        box.buttons()[0].click()  # Import (the default button)
        qtbot.waitUntil(
            lambda: window.state.bank is not None and window.state.bank.name == "Small",
            timeout=60_000,
        )
        assert window.state.bank.count() == small_bank.count()
        window.close()


def test_a_declined_snapshot_is_not_imported(qtbot, make_window, engine, tmp_path):
    from PySide6.QtWidgets import QMessageBox

    path = tmp_path / "any.engram"
    path.write_bytes(b"not looked at before a yes")
    window = make_window()
    window.start(open_last=False)
    window.open_snapshot(path)
    box = _offer(qtbot, window)
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: "Did not import any.engram" in window.statusBar().currentMessage())
    assert not any("Importing" in job.label for job in window.runner.jobs())
    wait_idle(qtbot, window.runner)
    assert engine.banks() == []
    window.close()
