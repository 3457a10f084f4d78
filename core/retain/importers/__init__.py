"""Conversation importers: bytes on disk -> Documents of Turns. Pure parsing, no store.

Formats (see each module's docstring for the exact grammar):
- `txt`    `Name: text` lines with optional session date headers (lines.py)
- `md`     the same plus `**Name:** text`, list items and dated headings (lines.py)
- `json`   a list of messages or `{"messages": [...]}` (messages.py)
- `jsonl`  one message object per line (messages.py)
- `locomo` the LoCoMo benchmark layout, one Document per conversation (locomo.py)

Ids are stable so that importing the same bytes twice gives the same ids:
`content_hash` is the sha256 hex of the file's raw bytes (per conversation for
LoCoMo, see locomo.py), `Document.id` is its first 16 characters, and a turn
without an id of its own gets f"{content_hash[:8]}-{index}", index being its
0-based position in the document. Given ids must be unique within a document.

Every timestamp is a naive UTC datetime: aware values are converted to UTC,
values without a zone are taken as UTC (dates.py).

Bad input raises InvalidInputError naming the file and the line (txt, md,
jsonl) or the JSON path (json, locomo), with what to do about it.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path, PurePath
from typing import Any

from core.text import without_surrogates
from core.types import Document, InvalidInputError

from ._base import MAX_TURN_CHARS, TurnCollector, decode_utf8, fail, sha256_hex
from .lines import parse_markdown, parse_text
from .locomo import documents_from_locomo, looks_like_locomo
from .messages import load_json, messages_from_json, messages_from_jsonl

__all__ = [
    "FORMATS",
    "MAX_FILE_BYTES",
    "MAX_TURN_CHARS",
    "detect_format",
    "load_document",
    "load_documents",
    "parse_document",
    "parse_documents",
]

FORMATS = ("txt", "json", "jsonl", "md", "locomo")
MAX_FILE_BYTES = 200 * 1024 * 1024

# How much of a file detect_format looks at.
HEAD_BYTES = 64 * 1024

_LOCOMO_HEAD = re.compile(r'"conversation"\s*:\s*\{')
_LOCOMO_KEYS = re.compile(r'"(?:speaker_[ab]|session_\d+(?:_date_time)?)"\s*:')
_MARKDOWN_HEAD = re.compile(
    # [ \t], never \s: \s would run across newlines and make the scan quadratic.
    r"^(?:#{1,6}[ \t]|[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+[^\s:][^:\n]{0,60}:[ \t]"
    r"|[ \t]*\*\*[^*\n]{1,60}(?::\*\*|\*\*:))",
    re.MULTILINE,
)


def detect_format(path: Path, head: bytes) -> str:
    """Which of FORMATS a file is, from its name and first bytes.

    The extension decides for .txt, .md/.markdown, .jsonl/.ndjson; for .json
    and unknown extensions the content does (LoCoMo keys, one object per line,
    Markdown markers, else plain text). load_documents/parse_documents in
    "auto" mode confirm a JSON guess from the whole parsed value."""
    suffix = PurePath(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".md", ".markdown"):
        return "md"
    if suffix == ".txt":
        return "txt"
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \t\r\n")
    if suffix == ".json" or text.startswith(("[", "{")):
        if _LOCOMO_HEAD.search(text) and _LOCOMO_KEYS.search(text):
            return "locomo"
        if _looks_like_jsonl(text):
            return "jsonl"
        return "json"
    if _MARKDOWN_HEAD.search(text):
        return "md"
    return "txt"


def _looks_like_jsonl(text: str) -> bool:
    lines = [line.strip() for line in text.split("\n", 2)[:2]]
    return (
        len(lines) == 2
        and lines[0].startswith("{")
        and lines[0].endswith("}")
        and lines[1].startswith("{")
    )


def load_documents(path: str | Path, format: str = "auto") -> list[Document]:
    """Read a conversation file: one Document, or one per conversation for LoCoMo."""
    p = Path(path)
    _check_format(format, p.name)
    data = _read_regular_file(p)
    return _parse(data, format, p.name, str(p.resolve()))


def _read_regular_file(p: Path) -> bytes:
    """The bytes of a regular file, refusing devices, FIFOs and sockets (reading
    /dev/zero never ends, a FIFO blocks) and reading at most the size limit
    (a file may grow while it is read)."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer would block before any check.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InvalidInputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{p}: is a folder; choose a conversation file") from None
    except OSError as exc:
        raise InvalidInputError(f"{p}: cannot read it ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise InvalidInputError(f"{p}: is a folder; choose a conversation file")
        raise InvalidInputError(
            f"{p}: is not a regular file (a device, pipe or socket); save the"
            " conversation to a file and import that"
        )
    with os.fdopen(fd, "rb") as handle:
        os.set_blocking(fd, True)
        _check_size(os.fstat(fd).st_size, p.name)
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise InvalidInputError(f"{p}: cannot read it ({exc.strerror})") from None
    _check_size(len(data), p.name)
    return data


def parse_documents(data: bytes, format: str, name: str = "") -> list[Document]:
    """Parse bytes already in memory; `name` (a file name) is used in errors and as the title."""
    display = name or "<input>"
    _check_format(format, display)
    _check_size(len(data), display)
    return _parse(data, format, display, name)


def load_document(path: str | Path, format: str = "auto") -> Document:
    """Like load_documents, for a file that must hold exactly one conversation."""
    return _single(load_documents(path, format), Path(path).name)


def parse_document(data: bytes, format: str, name: str = "") -> Document:
    return _single(parse_documents(data, format, name), name or "<input>")


def _single(documents: list[Document], name: str) -> Document:
    if len(documents) != 1:
        raise InvalidInputError(
            f"{name}: holds {len(documents)} conversations; import it with load_documents"
        )
    return documents[0]


def _check_format(format: str, name: str) -> None:
    if format != "auto" and format not in FORMATS:
        raise InvalidInputError(
            f"{name}: unknown format {format!r}; choose one of auto, {', '.join(FORMATS)}"
        )


def _check_size(size: int, name: str) -> None:
    if size > MAX_FILE_BYTES:
        raise InvalidInputError(
            f"{name}: the file is {size / 1_048_576:,.1f} MB; the limit is "
            f"{MAX_FILE_BYTES / 1_048_576:,.0f} MB — split it into smaller files"
        )


def _parse(data: bytes, format: str, name: str, source_path: str) -> list[Document]:
    text = decode_utf8(data, name)
    if not text.strip():
        fail(name, "", "no turns found (the file is empty)")
    auto = format == "auto"
    if auto:
        format = detect_format(PurePath(name), data[:HEAD_BYTES])
        if format == "jsonl" and PurePath(name).suffix.lower() not in (".jsonl", ".ndjson"):
            format = "json"  # only a guess from the head: let _auto_json decide
    # A file name is not always UTF-8 (Linux allows any bytes): keep what reads.
    name, source_path = without_surrogates(name), without_surrogates(source_path)
    title = PurePath(name).stem or "conversation"
    content_hash = sha256_hex(data)

    def one(collector: TurnCollector, fmt: str) -> list[Document]:
        return [
            collector.build(
                content_hash=content_hash, title=title, source_path=source_path, format=fmt
            )
        ]

    if format == "txt":
        return one(parse_text(text, name), "txt")
    if format == "md":
        return one(parse_markdown(text, name), "md")
    if format == "jsonl":
        return one(messages_from_jsonl(text, name), "jsonl")
    value = load_json(text, name) if not auto else _auto_json(text, name)
    if value is _JSONL:
        return one(messages_from_jsonl(text, name), "jsonl")
    if format == "locomo" or (auto and looks_like_locomo(value)):
        return list(documents_from_locomo(value, name, source_path))
    return one(messages_from_json(value, name), "json")


_JSONL = object()


def _auto_json(text: str, name: str) -> Any:
    """The parsed value of a JSON-looking file, or _JSONL if it is one message object per line."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and _starts_with_object(text):
            return _JSONL
        return load_json(text, name)  # raises, naming line and column
    except (RecursionError, ValueError):
        return load_json(text, name)  # raises, saying what is wrong
    if (
        isinstance(value, dict)
        and "messages" not in value
        and ("speaker" in value or "role" in value)
    ):
        return _JSONL  # a single message on one line
    return value


def _starts_with_object(text: str) -> bool:
    try:
        first, _ = json.JSONDecoder().raw_decode(text.lstrip())
    except (ValueError, RecursionError):
        return False
    return isinstance(first, dict)
