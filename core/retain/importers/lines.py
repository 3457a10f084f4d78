"""Plain-text and Markdown transcripts: one `Name: text` line per turn.

Plain text (`txt`):
- `Name: text` starts a turn. A name is at most 60 characters and 4 words and
  has no colon; the colon must be followed by a space or the end of the line
  (so `https://…` is not a speaker).
- Any other non-blank line continues the previous turn (joined with a newline);
  blank lines are ignored.
- Session header lines start a session, and every following turn takes the
  session's date as its timestamp:
    `## 2023-05-08 13:56`          a heading that is a date (see below)
    `Session 2 — 8 May 2023`        `Session N`, optionally with a date after
                                    `—`, `–`, `-`, `:`, `,`, `|` or in parentheses
    `[2023-05-08]`                  a bracketed date alone on its line
    `Date: 8 May 2023 1:56 pm`      also `**Date:** …` in Markdown; nobody is
                                    called Date, so an unreadable date is an error
  Dates may be ISO 8601, "8 May 2023", "May 8, 2023", "1:56 pm on 8 May, 2023"
  and most other absolute English forms; month and year are required.
  Sessions are named `session_N` from the header's number, or numbered on.
  A `#` heading that is not a session header is a title and is ignored.
  Turns before the first header have no session and no timestamp. Consecutive
  headers with no turn between them describe one session.

Headings of any level (`#` to `######`) whose text is a date, `Session N …`,
`[date]` or `Title — date` (also `- | : ,` before the date) start sessions.

Markdown (`md`) reads everything above and also `**Name:** text`,
`**Name**: text` and list items (`- Name: text`, `* **Name:** text`,
`1. Name: text`); horizontal rules and one-line HTML comments are ignored.
Text before the first turn is an error in both formats, never silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from . import _base
from ._base import TurnCollector, fail, preview, too_long
from .dates import parse_when

# A line this long cannot be a turn under the limit; refuse it before any regex runs.
_LINE_SLACK = 1_000

_NAME_MAX_WORDS = 4
_SPEAKER = re.compile(r"(?P<name>[^\s:#\[\]*>|][^:]{0,59}?)\s*:(?:\s+(?P<text>.*))?")
_MD_LIST = re.compile(r"(?:[-*+]|\d{1,3}[.)])\s+")
_MD_BOLD_INSIDE = re.compile(r"\*\*(?P<name>[^*:]{1,60}?)\s*:\s*\*\*(?:\s*(?P<text>.*))?")
_MD_BOLD_OUTSIDE = re.compile(r"\*\*(?P<name>[^*:]{1,60}?)\*\*\s*:(?:\s*(?P<text>.*))?")
_MD_RULE = re.compile(r"(?:-{3,}|\*{3,}|_{3,})")
_MD_COMMENT = re.compile(r"<!--.*-->")
_HEADING = re.compile(r"#{1,6}\s+(?P<text>.*)")
_SESSION = re.compile(
    r"session\s*(?:#\s*)?(?P<n>\d{1,6})\s*(?:[-–—:,|(]\s*)?(?P<rest>.*?)\)?", re.I
)
_BRACKET = re.compile(r"\[(?P<text>[^\[\]]{1,80})\]")
_TITLE_DATE_SEPARATORS = (" — ", " – ", " - ", " | ", ": ", ", ")


@dataclass
class _Header:
    number: int | None
    when: datetime | None


@dataclass
class _OpenTurn:
    speaker: str
    parts: list[str]
    size: int
    line: int


def _session_header(text: str) -> _Header | None:
    m = _SESSION.fullmatch(text)
    if m is None:
        return None
    rest = m.group("rest").strip()
    if not rest:
        return _Header(int(m.group("n")), None)
    when = parse_when(rest)
    # "Session 2 was fun" is prose, not a header.
    return _Header(int(m.group("n")), when) if when else None


def _without_closing_hashes(text: str) -> str:
    """`## 8 May 2023 ##` -> `8 May 2023` (done by hand: a regex for it backtracks badly)."""
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1].isspace()):
        return bare.rstrip()
    return text


def _heading_header(text: str) -> _Header | None:
    """A heading's text as a session header: a date, `Session N …`, `[date]` or `Title — date`."""
    text = text.strip()
    found = _session_header(text)
    if found:
        return found
    bracket = _BRACKET.fullmatch(text)
    when = parse_when(bracket.group("text") if bracket else text)
    if when:
        return _Header(None, when)
    for sep in _TITLE_DATE_SEPARATORS:
        if sep in text:
            when = parse_when(text.rsplit(sep, 1)[1])
            if when:
                return _Header(None, when)
    return None


class _Transcript:
    """Turns and sessions as the lines go by."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.collector = TurnCollector(name)
        self.open: _OpenTurn | None = None
        self.session = ""
        self.when: datetime | None = None
        self.header_number: int | None = None
        self.turns_in_session = 0
        self.highest_session = 0

    def header(self, h: _Header) -> None:
        self.close()
        if self.session and self.turns_in_session == 0:
            # "Session 2" then "Date: …" with nothing between: one session.
            number = h.number if h.number is not None else self.header_number
            when = h.when or self.when
        else:
            number, when = h.number, h.when
        if number is None:
            number = self.highest_session + 1
        self.highest_session = max(self.highest_session, number)
        self.header_number = number
        self.session = f"session_{number}"
        self.when = when
        self.turns_in_session = 0

    def start(self, speaker: str, text: str, line: int) -> None:
        self.close()
        self.open = _OpenTurn(speaker, [text] if text else [], len(text), line)
        self.turns_in_session += 1

    def continue_(self, text: str, line: int) -> None:
        if self.open is None:
            fail(
                self.name,
                f"line {line}",
                f"expected a turn like 'Name: text' or a session header, found {preview(text)}",
            )
        self.open.parts.append(text)
        self.open.size += len(text) + 1
        if self.open.size > _base.MAX_TURN_CHARS:
            fail(
                self.name,
                f"line {line}",
                too_long(
                    f"the turn by {self.open.speaker} that starts on line {self.open.line} "
                    f"reaches {self.open.size:,} characters"
                ),
            )

    def close(self) -> None:
        if self.open is None:
            return
        self.collector.add(
            speaker=self.open.speaker,
            text="\n".join(self.open.parts),
            where=f"line {self.open.line}",
            timestamp=self.when,
            session=self.session,
        )
        self.open = None


def _speaker_line(m: re.Match[str] | None) -> tuple[str, str] | None:
    if m is None:
        return None
    name = m.group("name").strip()
    if not name or len(name.split()) > _NAME_MAX_WORDS:
        return None
    return name, (m.group("text") or "").strip()


def _check_length(name: str, line: str, number: int) -> None:
    if len(line) > _base.MAX_TURN_CHARS + _LINE_SLACK:
        fail(name, f"line {number}", too_long(f"the line is {len(line):,} characters"))


def _common_header(line: str) -> _Header | None:
    """Headers both formats share on a bare line: `Session N …` and `[date]`."""
    found = _session_header(line)
    if found:
        return found
    bracket = _BRACKET.fullmatch(line)
    if bracket:
        when = parse_when(bracket.group("text"))
        return _Header(None, when) if when else None
    return None


def _date_line(date: str, name: str, number: int) -> _Header:
    """`Date: …` (also `**Date:** …`): nobody is called Date, so an unreadable date is an error."""
    when = parse_when(date)
    if when is None:
        fail(
            name,
            f"line {number}",
            f"cannot read the date {preview(date)}; "
            "write it like 2023-05-08 13:56 or 8 May 2023 1:56 pm",
        )
    return _Header(None, when)


def _turn_or_date(t: _Transcript, speaker: tuple[str, str], number: int) -> None:
    if speaker[0].casefold() == "date":
        t.header(_date_line(speaker[1], t.name, number))
    else:
        t.start(*speaker, number)


def parse_text(text: str, name: str) -> TurnCollector:
    t = _Transcript(name)
    for number, raw in enumerate(text.split("\n"), start=1):
        _check_length(name, raw, number)
        line = raw.strip()
        if not line:
            continue
        heading = _HEADING.fullmatch(line)
        if heading:
            found = _heading_header(_without_closing_hashes(heading.group("text")))
            if found:
                t.header(found)
            continue
        found = _common_header(line)
        if found:
            t.header(found)
            continue
        speaker = _speaker_line(_SPEAKER.fullmatch(line))
        if speaker:
            _turn_or_date(t, speaker, number)
        else:
            t.continue_(line, number)
    t.close()
    return t.collector


def parse_markdown(text: str, name: str) -> TurnCollector:
    t = _Transcript(name)
    for number, raw in enumerate(text.split("\n"), start=1):
        _check_length(name, raw, number)
        line = raw.strip()
        if not line or _MD_RULE.fullmatch(line) or _MD_COMMENT.fullmatch(line):
            continue
        heading = _HEADING.fullmatch(line)
        if heading:
            found = _heading_header(_without_closing_hashes(heading.group("text")))
            if found:
                t.header(found)
            continue
        found = _common_header(line)
        if found:
            t.header(found)
            continue
        item = _MD_LIST.match(line)
        body = line[item.end() :] if item else line
        speaker = (
            _speaker_line(_MD_BOLD_INSIDE.fullmatch(body))
            or _speaker_line(_MD_BOLD_OUTSIDE.fullmatch(body))
            or _speaker_line(_SPEAKER.fullmatch(body))
        )
        if speaker:
            _turn_or_date(t, speaker, number)
        else:
            t.continue_(line, number)
    t.close()
    return t.collector
