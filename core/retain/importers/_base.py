"""What every importer shares: limits, error wording, decoding and turn collection."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn

from core.limits import NAME_CHARS as MAX_SPEAKER_CHARS
from core.limits import TURN_CHARS as MAX_TURN_CHARS
from core.text import clean_name, has_surrogate
from core.types import Document, InvalidInputError, Turn

_BOM = b"\xef\xbb\xbf"


def located(name: str, where: str, message: str) -> str:
    """'chat.jsonl line 7: …' for line positions, 'chat.json: messages[3]: …' for JSON paths."""
    if not where:
        return f"{name}: {message}"
    if where.startswith("line "):
        return f"{name} {where}: {message}"
    return f"{name}: {where}: {message}"


def fail(name: str, where: str, message: str) -> NoReturn:
    raise InvalidInputError(located(name, where, message))


def kind_of(value: Any) -> str:
    """How a JSON value's type reads in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def preview(text: str, limit: int = 40) -> str:
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "…")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode_utf8(data: bytes, name: str) -> str:
    """The text of `data`; a UTF-8 BOM is accepted, anything not UTF-8 is refused by position."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        fail(name, "", "the file is UTF-16, not UTF-8; save it as UTF-8 and import it again")
    start = len(_BOM) if data.startswith(_BOM) else 0
    nul = data.find(b"\x00", start)
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        fail(
            name,
            f"line {line}",
            f"holds a NUL byte (offset {nul}): this is not a text file, or it is UTF-16/32;"
            " save it as UTF-8 text and import it again",
        )
    try:
        # Old Mac line endings (CR alone) would run every line into one turn.
        return data[start:].decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = data.count(b"\n", 0, offset) + 1
        column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
        fail(
            name,
            f"line {line}",
            f"not valid UTF-8 at byte offset {offset} (column {column}, byte "
            f"0x{data[offset]:02x}); save the file as UTF-8 and import it again",
        )


def too_long(subject: str) -> str:
    return (
        f"{subject}, over the limit of {MAX_TURN_CHARS:,} characters per turn; "
        "split it into smaller messages"
    )


@dataclass
class _Pending:
    speaker: str
    text: str
    where: str
    given_id: str | None
    timestamp: datetime | None
    session: str


class TurnCollector:
    """Gathers turns for one document, checks them, and gives them stable ids.

    Turns whose text is empty or only whitespace are dropped: there is nothing
    in them to remember."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._pending: list[_Pending] = []
        self._given: dict[str, str] = {}

    def add(
        self,
        *,
        speaker: str,
        text: str,
        where: str,
        given_id: str | None = None,
        timestamp: datetime | None = None,
        session: str = "",
    ) -> None:
        if len(text) > MAX_TURN_CHARS:
            fail(self.name, where, too_long(f"the message is {len(text):,} characters"))
        if len(speaker) > MAX_SPEAKER_CHARS:
            fail(
                self.name,
                where,
                f"the speaker's name is {len(speaker):,} characters; a name is at most"
                f" {MAX_SPEAKER_CHARS}",
            )
        for label, value in (("speaker", speaker), ("message", text)):
            if "\x00" in value:
                fail(self.name, where, f"the {label} holds a NUL character; remove it")
            if has_surrogate(value):
                fail(
                    self.name,
                    where,
                    f"the {label} holds a lone UTF-16 surrogate (like \\ud800), which is not"
                    " text; fix the escape",
                )
        # Bidirectional overrides and control characters in a name make lists lie.
        speaker = clean_name(speaker)
        if not speaker:
            fail(self.name, where, "the speaker's name is empty once control characters go")
        if given_id is not None:
            first = self._given.get(given_id)
            if first is not None:
                fail(
                    self.name,
                    where,
                    f"id {given_id!r} is already used by {first}; turn ids must be unique",
                )
            self._given[given_id] = where
        if not text.strip():
            return
        self._pending.append(_Pending(speaker, text, where, given_id, timestamp, session))

    def build(
        self,
        *,
        content_hash: str,
        title: str,
        source_path: str,
        format: str,
        speakers: tuple[str, ...] = (),
        where: str = "",
    ) -> Document:
        if not self._pending:
            fail(self.name, where, "no turns found")
        turns: list[Turn] = []
        for index, p in enumerate(self._pending):
            turn_id = p.given_id
            if turn_id is None:
                turn_id = f"{content_hash[:8]}-{index}"
                if turn_id in self._given:
                    fail(
                        self.name,
                        self._given[turn_id],
                        f"id {turn_id!r} clashes with the id generated for the turn at "
                        f"{p.where}; rename it",
                    )
            turns.append(
                Turn(
                    id=turn_id,
                    speaker=p.speaker,
                    text=p.text,
                    timestamp=p.timestamp,
                    session=p.session,
                    index=index,
                )
            )
        ordered = list(speakers)
        for t in turns:
            if t.speaker not in ordered:
                ordered.append(t.speaker)
        return Document(
            id=content_hash[:16],
            title=title,
            turns=tuple(turns),
            source_path=source_path,
            content_hash=content_hash,
            format=format,
            speakers=tuple(ordered),
        )
