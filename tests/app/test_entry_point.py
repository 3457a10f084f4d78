"""`engram`: one parser tree; a subcommand runs headless, no subcommand opens the studio;
help, bank listings and argument errors load nothing heavy."""

from __future__ import annotations

import json

import pytest

from app.main import build_parser
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


@pytest.mark.slow
def test_open_imports_a_snapshot_and_opens_it(qtbot, make_window, small_bank, tmp_path):
    """`engram --open FILE` (the desktop's "open with" for .engram files)."""
    from core import Engine

    args = build_parser().parse_args(["--open", str(tmp_path / "a.engram")])
    assert args.command is None and args.open == str(tmp_path / "a.engram")
    path = tmp_path / "small.engram"
    small_bank.export_snapshot(path)
    with Engine(tmp_path / "elsewhere") as other:
        window = make_window(engine=other)
        window.start(open_last=False)
        window.open_snapshot(path)
        qtbot.waitUntil(
            lambda: window.state.bank is not None and window.state.bank.name == "Small",
            timeout=60_000,
        )
        assert window.state.bank.count() == small_bank.count()
        window.close()
