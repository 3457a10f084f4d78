"""Literal escaping for the two places SQL-like text is built by hand.

DuckDB gets bound parameters everywhere; LanceDB's `where` takes a string, so
values that go into it are quoted here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable


def sql_string(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def sql_string_list(values: Iterable[str]) -> str:
    return "(" + ", ".join(sql_string(v) for v in values) + ")"


def like_pattern(text: str) -> str:
    """A LIKE pattern matching `text` anywhere, with % and _ taken literally (ESCAPE '\\')."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
