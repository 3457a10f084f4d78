"""Text hygiene at the edges: what may come in from files, models and arguments.

Python strings can hold what no UTF-8 store can (lone surrogates from a JSON
`"\\ud800"` escape or a non-UTF-8 command-line byte); names can carry control
and bidirectional-override characters that make a list lie about what it
shows (U+202E turns "evil\u202eexe.txt" around). These helpers find or remove
them, so every caller refuses or normalises the same way.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls and DEL except tab, newline and carriage return.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Bidirectional embeddings, overrides, isolates and marks.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
REPLACEMENT = "\ufffd"


def has_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def without_surrogates(text: str) -> str:
    """Lone surrogates become U+FFFD (after `json.loads`, a valid pair is already
    one character, so whatever surrogate is left is lone)."""
    return _SURROGATE.sub(REPLACEMENT, text)


def clean_text(text: str) -> str:
    """Text fit to store: no lone surrogates, no NUL or other control characters
    but tab and line breaks."""
    return _CONTROL.sub("", without_surrogates(text))


def clean_name(text: str) -> str:
    """A name fit to list: clean text without line breaks or bidirectional
    overrides, whitespace collapsed."""
    return " ".join(_BIDI.sub("", clean_text(text)).split())


def repair_strings(value: Any) -> Any:
    """`value` (parsed JSON) with every string's lone surrogates replaced. Iterative:
    a value nested as deep as the parser allows must not overflow the stack here."""
    if isinstance(value, str):
        return without_surrogates(value)
    if not isinstance(value, list | dict):
        return value
    root: list[Any] = [value]
    stack: list[list | dict] = [root]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, item in list(items):
            if isinstance(item, str):
                node[key] = without_surrogates(item)
            elif isinstance(item, list | dict):
                stack.append(item)
        if isinstance(node, dict) and any(isinstance(k, str) and has_surrogate(k) for k in node):
            fixed = {without_surrogates(k) if isinstance(k, str) else k: v for k, v in node.items()}
            node.clear()
            node.update(fixed)
    return root[0]


def printable(text: str) -> str:
    """How a possibly broken string reads in a one-line message."""
    return repr(without_surrogates(text))
