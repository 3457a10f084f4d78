"""A stand-in terminal for the CLI's confirmation prompts (core/cli/output.py `ask`),
which ask only at a terminal: pytest's stdin is none."""

from __future__ import annotations

import io


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def at_a_terminal(monkeypatch, *answers: str) -> list[str]:
    """stdin is a terminal and the user types `answers`, one a prompt; returns the
    prompts asked."""
    asked: list[str] = []
    replies = iter(answers)

    def typed(prompt: str = "") -> str:
        asked.append(prompt)
        return next(replies)

    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.setattr("builtins.input", typed)
    return asked
