"""`engram`: a subcommand runs headless, no subcommand opens the studio."""

from __future__ import annotations

import pytest

from app.main import command_of


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
    assert command_of(args) == command
