"""Small helpers for printing command results."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from core.jsonable import to_jsonable


def print_json(value: Any) -> None:
    json.dump(to_jsonable(value), sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def short_time(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "-"


def on_terminal(stream) -> bool:
    """True when `stream` is an interactive terminal (not a pipe, a file, or closed)."""
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # replaced by a stand-in, or closed
        return False


def progress_printer(label: str):
    """A Progress callback that rewrites one stderr line, on a terminal only: in a
    pipe or a log (cron, CI) the `\r` rewrites would pile up, so nothing is written
    there (rich's and tqdm's convention); the command's result still is."""

    def progress(done: int, total: int, message: str = "") -> None:
        if not on_terminal(sys.stderr):
            return
        of = f"/{total}" if total else ""
        sys.stderr.write(f"\r{label}: {done}{of} {message}".ljust(79)[:79])
        if total and done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return progress


def ask(prompt: str, refusal: str) -> str:
    """What the user types in answer to `prompt` at a terminal. Without a terminal
    to ask at (stdin closed or a pipe: cron, CI, a script), nothing is asked and
    the command fails with `refusal` and how to go on without asking (--yes)."""
    from core import EngramError

    if not on_terminal(sys.stdin):
        raise EngramError(f"{refusal} without a confirmation, and there is no terminal to "
                          "ask at (stdin is not one): pass --yes to go ahead without asking")
    try:
        return input(prompt)
    except EOFError:  # Ctrl-D at the prompt: no answer is no
        print()
        return ""


# Beyond this a limit or offset means nothing (no bank holds as many rows) and
# would overflow DuckDB's BIGINT; refused in the parser, with the reason.
MAX_COUNT = 10**9


def count_arg(*, minimum: int = 0, maximum: int = MAX_COUNT):
    """An argparse `type` for limits, offsets and budgets: a whole number in
    [minimum, maximum], or a one-line usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"{value} is out of range: give a number from {minimum} to {maximum:,}"
            )
        return value

    parse.__name__ = "count"
    return parse


def iso_time(text: str) -> datetime:
    """An argparse `type` for dates and times: ISO 8601 (`2024-05-01`,
    `2024-05-01T09:30`, with or without an offset), or a one-line usage error."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or date-time: {text!r}") from None


def iso_time_or_none(text: str) -> datetime | None:
    """`iso_time`, or None for 'none' (clears a time)."""
    return None if text.lower() == "none" else iso_time(text)
