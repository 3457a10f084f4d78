"""Reading dates out of conversation files, always as naive UTC.

All of core treats datetimes as naive UTC: an aware value is converted to UTC
and its tzinfo dropped; a value with no zone (most chat logs) is taken to be
UTC already. Parsing never consults the clock or the network: common layouts
go through `datetime` first (fast and exact), then dateparser with English
only, absolute dates only (no "yesterday"), and month and year required.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

from core.timeparse import naive_utc

# Longer strings are prose, not a date header; the bound also caps parser work.
_MAX_DATE_CHARS = 80

# Epoch numbers at or above this are milliseconds (1e11 s would be year 5138).
_MILLIS_FROM = 1e11

_FORMATS = (
    "%I:%M %p on %d %B %Y",  # LoCoMo: "1:56 pm on 8 May, 2023" (comma removed)
    "%I:%M %p on %d %b %Y",
    "%d %B %Y",
    "%d %b %Y",
    "%d %B %Y %I:%M %p",
    "%d %b %Y %I:%M %p",
    "%d %B %Y %H:%M",
    "%d %b %Y %H:%M",
    "%B %d %Y",
    "%b %d %Y",
    "%B %d %Y %I:%M %p",
    "%b %d %Y %I:%M %p",
    "%B %d %Y %H:%M",
    "%b %d %Y %H:%M",
    "%Y-%m-%d %I:%M %p",
    "%Y/%m/%d",
    "%Y/%m/%d %H:%M",
)

_ORDINAL = re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)\b", re.IGNORECASE)
_AM_PM = re.compile(r"(\d)\s*([ap])\.?m\.?(?=\s|$)", re.IGNORECASE)
_WEEKDAY = re.compile(
    r"^(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|rsday|urday)?\.?\s+",
    re.IGNORECASE,
)

_DATEPARSER_SETTINGS: dict[str, Any] = {
    "PARSERS": ["absolute-time"],
    "REQUIRE_PARTS": ["month", "year"],
    "PREFER_DAY_OF_MONTH": "first",
    "TIMEZONE": "UTC",
    "TO_TIMEZONE": "UTC",
    "RETURN_AS_TIMEZONE_AWARE": False,
    "RELATIVE_BASE": datetime(2000, 1, 1),
}


def from_epoch(value: float) -> datetime:
    """Epoch seconds (or milliseconds, when implausibly large for seconds) -> naive UTC.

    Raises ValueError when the number is not a usable instant."""
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite number")
    seconds = value / 1000.0 if abs(value) >= _MILLIS_FROM else value
    try:
        return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError) as exc:
        raise ValueError(f"{value!r} is out of range for a date") from exc


def parse_when(text: str) -> datetime | None:
    """A date (and maybe time) written by a person, or None if `text` is not one."""
    s = " ".join(text.split()).strip(" .")
    if not s or len(s) > _MAX_DATE_CHARS or not any(ch.isdigit() for ch in s):
        return None
    iso = _from_iso(s)
    if iso is not None:
        return iso
    cleaned = _WEEKDAY.sub("", _AM_PM.sub(r"\1 \2m", _ORDINAL.sub(r"\1", s.replace(",", " "))))
    cleaned = " ".join(cleaned.split())
    for fmt in _FORMATS:
        try:
            return datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    return _from_dateparser(s)


def _from_iso(s: str) -> datetime | None:
    # Require a dash-separated date so "20230508"-like numbers are not dates here.
    if not re.match(r"\d{4}-\d{2}-\d{2}", s):
        return None
    try:
        return naive_utc(datetime.fromisoformat(s))
    except ValueError:
        return None


def _from_dateparser(s: str) -> datetime | None:
    import dateparser  # deferred: loading its language data costs time we rarely need

    try:
        found = dateparser.parse(s, languages=["en"], settings=_DATEPARSER_SETTINGS)
    except Exception:  # dateparser raises assorted errors on odd input; treat as "not a date"
        return None
    return None if found is None else naive_utc(found)
