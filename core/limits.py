"""The input limits every way in shares: one table, read by the file importers,
the engine, the HTTP API, MCP and the CLI, so each refuses the same thing in
the same words.

A value over its limit, or holding what no UTF-8 store can keep (a lone
surrogate from a JSON `"\\ud800"` escape) or a NUL, is refused with a
`FieldError` naming the field; over HTTP that is a 422 whose `loc` is the
field, over MCP a tool error, in the CLI its one-line message. A request body
over `BODY_BYTES` is refused before it is read (413).

Import-light (the CLI's argument checks run before any store loads).
"""

from __future__ import annotations

from typing import Any

from core.home import MAX_NAME as BANK_NAME_CHARS
from core.text import has_surrogate, without_surrogates
from core.types import MAX_UNIT_CHARS, Document, InvalidInputError

# -- sizes ------------------------------------------------------------------------------

TURN_CHARS = 100_000  # one message: a turn of a file, one retained item's content
NAME_CHARS = 200  # a speaker, an entity, the agent's name
ID_CHARS = 200  # a document id, a turn id, an operation id
TITLE_CHARS = 1_000  # a document's title (Hindsight's `context`)
REASON_CHARS = 1_000  # why a memory was hidden or edited (kept in its audit entry)
QUERY_CHARS = TURN_CHARS  # a recall or reflect question: at most a message
BACKGROUND_CHARS = 20_000  # a bank's background (Hindsight's `mission`)
UNIT_CHARS = MAX_UNIT_CHARS  # one memory unit's text
TAG_CHARS = 200  # one tag, one metadata key
TAGS = 100  # tags on one item, keys in one item's metadata
METADATA_VALUE_CHARS = 10_000
# Nested lists and objects in one JSON value (a `/call` argument, a setting):
# deeper is no real request, and walking it would cost the stack.
NESTING = 32
# A page's offset and size: DuckDB's BIGINT overflows long before, and no bank
# holds a billion units.
OFFSET = 10**9
PAGE = 100_000
BODY_BYTES = 8 * 2**20  # one JSON request
SNAPSHOT_BYTES = 4 * 2**30  # one uploaded `.engram` file

__all__ = [
    "BACKGROUND_CHARS",
    "BANK_NAME_CHARS",
    "BODY_BYTES",
    "ID_CHARS",
    "METADATA_VALUE_CHARS",
    "NAME_CHARS",
    "NESTING",
    "OFFSET",
    "PAGE",
    "QUERY_CHARS",
    "REASON_CHARS",
    "SNAPSHOT_BYTES",
    "TAGS",
    "TAG_CHARS",
    "TITLE_CHARS",
    "TURN_CHARS",
    "UNIT_CHARS",
    "FieldError",
    "check_document",
    "check_page",
    "check_text",
    "field_name",
    "first_unstorable",
]


Loc = tuple[str | int, ...]


class FieldError(InvalidInputError):
    """A value refused by a limit. `loc` is the field's path in the caller's
    input (`("items", 3, "content")`), `field` the same as one would write it
    (`items[3].content`); `kind` says which rule it broke."""

    def __init__(self, field: str | Loc, message: str, kind: str = "value_error") -> None:
        self.loc: Loc = (field,) if isinstance(field, str) else tuple(field)
        self.field = field_name(self.loc)
        super().__init__(f"{self.field}: {message}")
        self.reason = message
        self.kind = kind


def field_name(loc: Loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "value"


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored, or None."""
    if has_surrogate(text):
        return "holds a lone UTF-16 surrogate (like \\ud800), which is not text; fix the escape"
    if "\x00" in text:
        return "holds a NUL character; remove it"
    return None


def check_text(field: str | Loc, value: Any, limit: int, *, required: bool = False) -> str:
    """`value` if it is text within `limit` characters that a store can keep;
    else FieldError naming `field`. None passes unless `required`."""
    if value is None and not required:
        return value
    if not isinstance(value, str):
        raise FieldError(field, "must be text", "string_type")
    if len(value) > limit:
        raise FieldError(
            field,
            f"is {len(value):,} characters, over the limit of {limit:,}",
            "string_too_long",
        )
    why = unstorable(value)
    if why is not None:
        raise FieldError(field, why, "unstorable_text")
    if required and not value.strip():
        raise FieldError(field, "cannot be empty", "string_too_short")
    return value


def check_document(document: Document) -> None:
    """A conversation's fields within their limits: what the importers check as
    they read a file, for a Document built by hand or sent over `/call`."""
    check_text("id", document.id, ID_CHARS)
    check_text("title", document.title, TITLE_CHARS)
    for i, turn in enumerate(document.turns):
        check_text(("turns", i, "id"), turn.id, ID_CHARS)
        check_text(("turns", i, "speaker"), turn.speaker, NAME_CHARS)
        check_text(("turns", i, "text"), turn.text, TURN_CHARS)
        check_text(("turns", i, "session"), turn.session, ID_CHARS)


def check_page(offset: Any, limit: Any, *, field_prefix: str = "") -> None:
    """A page's offset (0..OFFSET) and size (None: all, else 0..PAGE)."""
    for name, value, top, optional in (
        ("offset", offset, OFFSET, False),
        ("limit", limit, PAGE, True),
    ):
        if value is None and optional:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(field_prefix + name, "must be a whole number", "int_type")
        if not 0 <= value <= top:
            raise FieldError(
                field_prefix + name, f"must be between 0 and {top:,}, not {value}", "out_of_range"
            )


def first_unstorable(value: Any, loc: Loc = (), *, nesting: int = NESTING) -> FieldError | None:
    """The first problem in a parsed JSON value (or any nest of lists, tuples
    and dicts): a string no store can keep (keys too), or nesting deeper than
    `nesting`. Iterative, so a value as deep as the parser allows costs no stack."""
    stack: list[tuple[Loc, Any]] = [(tuple(loc), value)]
    base = len(loc)
    while stack:
        path, item = stack.pop()
        if len(path) - base > nesting:
            return FieldError(path, f"is nested deeper than {nesting} levels", "too_deep")
        if isinstance(item, str):
            why = unstorable(item)
            if why is not None:
                return FieldError(path, why, "unstorable_text")
        elif isinstance(item, dict):
            for key, child in item.items():
                key = str(key)
                if unstorable(key) is not None:
                    name = (*path, without_surrogates(key))
                    return FieldError(name, f"(the key) {unstorable(key)}", "unstorable_text")
                stack.append(((*path, key), child))
        elif isinstance(item, list | tuple):
            # Pushed last to first, so the first problem found is the first in order.
            stack.extend(((*path, i), item[i]) for i in range(len(item) - 1, -1, -1))
    return None
