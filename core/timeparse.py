"""Time normalisation: time expressions in free text -> half-open intervals.

Retain uses it to give each fact an occurrence interval ("last week" said in a
session on 8 May 2023 -> [2023-05-01, 2023-05-08)); recall's temporal channel
uses it to turn a question into the date range it asks about.

Design, and why:
- Our own regexes find and resolve expressions. They are fast (this runs on
  every fact at ingest), they keep granularity (a month is the whole month, not
  its first day) and they refuse the usual false friends ("I may go", "we
  march", "I sat", "in my 20s", "3 kids"). dateparser only sees the spans our
  scanner hands it (numeric dates such as 05/08/2023) and the fallback of
  `resolve`, never raw text word by word, and is imported lazily.
- The scan is atoms first (a date, "last week", "June", "2022"), then
  composites that wrap atoms ("early June", "since May", "from May to July",
  "two weeks before 8 May 2023"); where spans overlap the longest wins.
- "two weeks before the wedding" is relative to an event we cannot date: it is
  recorded as unresolved, so `resolve` and `query_interval` return None
  rather than a confident wrong range.
- Bare months, weekdays, seasons and holidays point to the nearest one at or
  before the reference (memories are mostly about the past) unless the
  sentence says the future ("will", "going to", "plans to", ...).

All datetimes are naive UTC. Weeks start on Monday. Seasons are northern
meteorological ones; winter Y is December Y-1 to February Y. Open-ended
ranges ("before June 2023") use OPEN_START / OPEN_END as their far side.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any

from core.types import InvalidInputError

__all__ = [
    "OPEN_END",
    "OPEN_START",
    "Interval",
    "find_time_expressions",
    "parse_session_date",
    "query_interval",
    "reading_confidence",
    "resolve",
]

OPEN_START = datetime(1900, 1, 1)
OPEN_END = datetime(2100, 1, 1)


@dataclass(frozen=True)
class Interval:
    """A half-open time range [start, end); `text` is the expression it came from.

    `granularity` ("day", "week", "month", "year", "range", "open", ...) says how
    precise the expression was; it does not take part in equality.
    """

    start: datetime
    end: datetime
    text: str = ""
    granularity: str = field(default="", compare=False)
    # How sure the reading is, 0..1 (`reading_confidence`): an explicit date is
    # read surely, "recently" hardly. Recall weighs the query's time by it.
    confidence: float = field(default=1.0, compare=False)

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"interval ends before it starts: {self.start} > {self.end}")

    @property
    def midpoint(self) -> datetime:
        return self.start + (self.end - self.start) / 2

    @property
    def duration(self) -> timedelta:
        return self.end - self.start

    @property
    def is_open(self) -> bool:
        """True when one side is unbounded ("before June 2023")."""
        return self.start <= OPEN_START or self.end >= OPEN_END

    def contains(self, dt: datetime) -> bool:
        if self.start == self.end:  # an instant contains only itself
            return dt == self.start
        return self.start <= dt < self.end

    def overlaps(self, other: Interval) -> bool:
        if self.start == self.end:
            return other.contains(self.start)
        if other.start == other.end:
            return self.contains(other.start)
        return self.start < other.end and other.start < self.end


# --------------------------------------------------------------------------- calendar helpers

_DAY = timedelta(days=1)


def _midnight(dt: datetime | date) -> datetime:
    return datetime(dt.year, dt.month, dt.day)


def _iv(start: datetime, end: datetime, gran: str) -> Interval:
    return Interval(start, end, "", gran)


def _day(d: datetime | date, n: int = 1) -> Interval:
    start = _midnight(d)
    return _iv(start, start + n * _DAY, "day")


def _week_start(d: datetime) -> datetime:
    day = _midnight(d)
    return day - timedelta(days=day.weekday())


def _week(d: datetime) -> Interval:
    ws = _week_start(d)
    return _iv(ws, ws + 7 * _DAY, "week")


def _shift_month(year: int, month: int, k: int) -> tuple[int, int]:
    y, m0 = divmod(year * 12 + month - 1 + k, 12)
    return y, m0 + 1


def _month(year: int, month: int) -> Interval:
    ny, nm = _shift_month(year, month, 1)
    return _iv(datetime(year, month, 1), datetime(ny, nm, 1), "month")


def _year(year: int) -> Interval:
    return _iv(datetime(year, 1, 1), datetime(year + 1, 1, 1), "year")


def _decade(start_year: int) -> Interval:
    return _iv(datetime(start_year, 1, 1), datetime(start_year + 10, 1, 1), "decade")


def _add(dt: datetime, unit: str, n: int) -> datetime:
    """dt moved by n units; month arithmetic clamps the day (31 Mar - 1 month = 28/29 Feb)."""
    if unit == "hour":
        return dt + timedelta(hours=n)
    if unit in ("day", "night"):
        return dt + n * _DAY
    if unit in ("week", "weekend"):
        return dt + 7 * n * _DAY
    months = {"month": 1, "year": 12, "decade": 120}[unit] * n
    y, m = _shift_month(dt.year, dt.month, months)
    last = (datetime(*_shift_month(y, m, 1), 1) - _DAY).day
    return dt.replace(year=y, month=m, day=min(dt.day, last))


def _unit_of(dt: datetime, unit: str) -> Interval:
    """The calendar unit (day, week, month, ...) containing dt."""
    if unit == "hour":
        start = dt.replace(minute=0, second=0, microsecond=0)
        return _iv(start, start + timedelta(hours=1), "hour")
    if unit in ("day", "night"):
        return _day(dt)
    if unit in ("week", "weekend"):
        return _week(dt)
    if unit == "month":
        return _month(dt.year, dt.month)
    if unit == "year":
        return _year(dt.year)
    return _decade(dt.year - dt.year % 10)


def _span(a: Interval, b: Interval, gran: str = "range") -> Interval:
    return _iv(min(a.start, b.start), max(a.end, b.end), gran)


_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}


def _season(season: str, label_year: int) -> Interval:
    month = _SEASON_START[season]
    year = label_year - 1 if season == "winter" else label_year
    end = _shift_month(year, month, 3)
    return _iv(datetime(year, month, 1), datetime(*end, 1), "season")


def _easter(year: int) -> date:
    # Anonymous Gregorian computus (Meeus/Jones/Butcher).
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    el = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * el) // 451
    month, day = divmod(h + el - 7 * m + 114, 31)
    return date(year, month, day + 1)


def _holiday(name: str, year: int) -> date:
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    if key.startswith("christmaseve"):
        return date(year, 12, 24)
    if key.startswith(("christmas", "xmas")):
        return date(year, 12, 25)
    if key.startswith("newyearseve") or key.startswith("newyeareve"):
        return date(year, 12, 31)
    if key.startswith("newyear"):
        return date(year, 1, 1)
    if key == "halloween":
        return date(year, 10, 31)
    if key.startswith("valentine"):
        return date(year, 2, 14)
    if key == "thanksgiving":  # fourth Thursday of November (US)
        first = date(year, 11, 1)
        return first + timedelta(days=(3 - first.weekday()) % 7 + 21)
    if key == "easter":
        return _easter(year)
    return date(year, 7, 4)  # independence day / fourth of july


# --------------------------------------------------------------------------- vocabulary

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
_MONTH_FULL = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december)"
)
# Abbreviations only count next to a day or a year (see _month_token_ok).
_MONTH_ANY = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\b\.?"
)
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_YEAR = r"(?:19|20)\d\d"
_ORDINAL_WORDS = [
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
    "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
    "seventeenth", "eighteenth", "nineteenth", "twentieth",
]  # fmt: skip
_ORDINALS = {w: i + 1 for i, w in enumerate(_ORDINAL_WORDS)}
for _i, _w in enumerate(_ORDINAL_WORDS[:9]):
    _ORDINALS[f"twenty-{_w}"] = _ORDINALS[f"twenty {_w}"] = 21 + _i
_ORDINALS.update({"thirtieth": 30, "thirty-first": 31, "thirty first": 31})
_ORDINAL_RE = "|".join(sorted((re.escape(k) for k in _ORDINALS), key=len, reverse=True))

_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
}  # fmt: skip
# Vague quantities become a range of "units ago": a couple = 2..3, a few = 2..5.
_FUZZY = {"couple": (2, 3), "few": (2, 5), "several": (3, 6)}
_NUM = (
    r"(?:a\s+couple(?:\s+of)?|couple\s+of|a\s+few|few|several|\d{1,3}|"
    + "|".join(sorted((k for k in _NUMBER_WORDS if k not in ("a", "an")), key=len, reverse=True))
    + r"|an|a)\b"
)


def _num_range(n1: str | None, n2: str | None = None) -> tuple[int, int]:
    def one(tok: str) -> tuple[int, int]:
        t = re.sub(r"\s+", " ", tok.lower())
        for word, rng in _FUZZY.items():
            if word in t:
                return rng
        return (int(t), int(t)) if t.isdigit() else (_NUMBER_WORDS[t],) * 2

    lo, hi = one(n1 or "1")
    if n2:
        lo2, hi2 = one(n2)
        lo, hi = min(lo, lo2), max(hi, hi2)
    return lo, hi


def _num_group(tag: str = "") -> str:
    return rf"(?P<n1{tag}>{_NUM})(?:\s*[-–]\s*|\s+(?:or|to)\s+)?(?P<n2{tag}>(?<=\s|-|–){_NUM})?"


_UNIT = r"(?P<unit>hour|day|week|month|year|decade)s?\b"

_PARTS_OF_DAY = {"morning": (6, 12), "afternoon": (12, 18), "evening": (18, 24), "night": (18, 30)}

# Sentences that talk about the future make bare months/weekdays/seasons point forward.
_FUTURE_RE = re.compile(
    r"\b(?:will|shall|won['’]?t|gonna|going\s+to|plans?\s+(?:to|for|on)|planning|"
    r"intends?\s+to|hopes?\s+to|hoping\s+to|looking\s+forward|can['’]?t\s+wait|upcoming|"
    r"scheduled|tomorrow|soon|in\s+the\s+future)\b|['’]ll\b",
    re.I,
)
# A weaker sign of the future, the present progressive of plans ("Northwind is
# onboarding them in June"): it tips a yearless date forward only when nothing
# in the sentence is told in the past.
_PLAN_RE = re.compile(
    r"\b(?:(?:is|are|am)\s+|['’](?:s|re|m)\s+)(?:(?:also|still|now|\w+ly)\s+)?\w+ing\b", re.I
)
_PAST_AUX_RE = re.compile(r"\b(?:was|were|been)\s+$", re.I)
# A date that names a planned date ("a June 16 launch date", "the 12 May
# deadline") is ahead whatever the tense of the sentence around it ("I created
# the milestone with a June 16 launch date"), if that occurrence is near.
_PLANNED_DATE_RE = re.compile(
    r"\s*(?:(?:launch|release|ship|go-live|delivery|due|target|start|end)\s+date|deadline)\b",
    re.I,
)
# So is a near date in a sentence that arranges something ("Juniper blocked
# July 7 to August 15 as parental leave", said in June).
_ARRANGED_RE = re.compile(
    r"\b(?:(?:re)?schedul(?:e|ed|ing)|block(?:ed|ing)?\s+(?:off\s+)?|book(?:ed|ing)|"
    r"reserv(?:e|ed|ing)|arrang(?:e|ed|ing)|postpon(?:e|ed|ing)|pencil(?:l?ed)?\s+in)\b",
    re.I,
)
# ...and so is one named as a due date or a target ("is due at the end of July",
# "a target of late August"), read in the words just before it.
_PLANNED_BEFORE_RE = re.compile(
    r"\b(?:due|deadline|target(?:ed|ing)?|scheduled|planned)\s+(?:(?:of|for|on|in|at|by)\s+)?"
    r"(?:the\s+)?(?:(?:end|beginning|start|middle)\s+of\s+(?:the\s+)?|early\s+|mid-?\s*|late\s+)?$",
    re.I,
)
PLANNED_AHEAD = timedelta(days=183)
# A sentence's clauses: the past tense of one ("Dana's tone changed") says nothing
# about a date in another ("and their renewal decision is due at the end of July").
_CLAUSE_BREAK_RE = re.compile(
    r"[,;:—]|\s(?:and|but|because|so|while|whereas|although|though)\s", re.I
)
# A clause told in the present (or looking ahead) about a yearless date.
_PRESENT_RE = re.compile(r"\b(?:is|are|am|want|wants|need|needs|hope|hopes|due)\b", re.I)
# Sentences told in the past keep a yearless date in the past.
_PAST_RE = re.compile(
    r"\b(?:was|were|did|had|went|got|came|saw|made|took|met|gave|told|said|ago|"
    r"yesterday|used\s+to|(?!(?:indeed|need|speed|feed|seed|proceed|exceed|succeed|embed)\b)"
    r"\w{3,}ed)\b",
    re.I,
)

# Cheap gate: a text with none of these cannot hold a time expression.
_TRIGGER_RE = re.compile(
    r"\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day|today|tonight|tomorrow|yesterday|ago|week|"
    r"month|year|decade|summer|winter|spring|autumn|fall|recent|lately|last|next|past|"
    r"christmas|xmas|easter|halloween|thanksgiving|valentine|independence|night|morning|"
    r"afternoon|evening|other\s+day|"
    r"earlier|later|day|hour|twenties|thirties|forties|fifties|sixties|seventies|eighties|"
    r"nineties)",
    re.I,
)


# --------------------------------------------------------------------------- scanning state


@dataclass
class _Item:
    start: int
    end: int
    interval: Interval | None  # None: relative to an event we cannot date
    # Re-resolve against another reference, for "from May to July 2023".
    redo: Callable[[datetime], Interval | None] | None = None


class _Ctx:
    def __init__(self, text: str, ref: datetime, lenient: bool) -> None:
        self.text = text
        self.ref = ref
        self.today = _midnight(ref)
        self.lenient = lenient
        self._future: dict[tuple[int, int], bool] = {}

    def before(self, pos: int, n: int = 48) -> str:
        return self.text[max(0, pos - n) : pos]

    def after(self, pos: int, n: int = 48) -> str:
        return self.text[pos : pos + n]

    def at_sentence_start(self, pos: int) -> bool:
        return re.search(r"(?:^|[.!?:;\"“(]\s*)$", self.before(pos, 8)) is not None

    def future(self, pos: int) -> bool:
        text = self.text
        lo = max(text.rfind(". ", 0, pos), text.rfind("! ", 0, pos), text.rfind("? ", 0, pos))
        lo = 0 if lo < 0 else lo + 1
        ends = [
            i for i in (text.find(". ", pos), text.find("! ", pos), text.find("? ", pos)) if i >= 0
        ]
        hi = min(ends) if ends else len(text)
        key = (lo, hi)
        if key not in self._future:
            found = False
            for m in _FUTURE_RE.finditer(text, lo, hi):
                if m.group(0).lower().startswith("going") and _PAST_AUX_RE.search(
                    text[max(0, m.start() - 8) : m.start()]
                ):
                    continue  # "was going to" is a past plan
                found = True
                break
            self._future[key] = found
        return self._future[key]

    def forward(self, pos: int, end: int, ahead: timedelta, behind: timedelta) -> bool:
        """Does the yearless date at text[pos:end] point forward? Future talk or a
        planned date: yes; past talk: no; otherwise whichever occurrence is nearer
        ("10 to 12 September" asked on 28 August is this September, "in May" said
        in August the last one)."""
        if self.future(pos):
            return True
        lo = max(self.text.rfind(". ", 0, pos), 0)
        hi = self.text.find(". ", pos)
        hi = hi if hi >= 0 else len(self.text)
        if ahead <= PLANNED_AHEAD and (
            _PLANNED_DATE_RE.match(self.text, end)
            or _PLANNED_BEFORE_RE.search(self.before(pos))
            or _ARRANGED_RE.search(self.text, lo, hi)
        ):
            return True
        if self.lenient:  # a bare expression has no sentence to judge by: the past
            return False
        if _PAST_RE.search(self.text, lo, hi) and not self._present_clause(pos, lo, hi):
            return False
        return bool(_PLAN_RE.search(self.text, lo, hi)) or ahead < behind

    def _present_clause(self, pos: int, lo: int, hi: int) -> bool:
        """Is the clause around `pos` told in the present, with no past tense of its own?"""
        text = self.text
        breaks = [m.end() for m in _CLAUSE_BREAK_RE.finditer(text, lo, pos)]
        start = breaks[-1] if breaks else lo
        after = _CLAUSE_BREAK_RE.search(text, pos, hi)
        stop = after.start() if after else hi
        return bool(_PRESENT_RE.search(text, start, stop)) and not _PAST_RE.search(
            text, start, stop
        )


_Handler = Callable[[re.Match[str], _Ctx], "_Item | None"]
_RULES: list[tuple[re.Pattern[str], _Handler]] = []


def _rule(pattern: str) -> Callable[[_Handler], _Handler]:
    compiled = re.compile(pattern, re.I)

    def register(fn: _Handler) -> _Handler:
        _RULES.append((compiled, fn))
        return fn

    return register


def _item(m: re.Match[str], interval: Interval | None, redo: Any = None) -> _Item:
    return _Item(m.start(), m.end(), interval, redo)


def _month_token_ok(tok: str, has_year: bool, ctx: _Ctx) -> bool:
    """May/March are also verbs and abbreviations are also words: lowercase needs a year."""
    if ctx.lenient or has_year:
        return True
    low = tok.lower().rstrip(".")
    return not (tok[0].islower() and (low in ("may", "march") or len(low) <= 4))


def _month_num(tok: str) -> int:
    return _MONTHS[tok.lower().rstrip(".")]


def _month_day(ref: datetime, month: int, day: int, future: bool) -> Interval | None:
    """Day `day` of `month` with no year: the nearest one before-or-at (or from) the reference."""
    today = _midnight(ref)
    years = range(ref.year - 1, ref.year + 9) if future else range(ref.year + 1, ref.year - 9, -1)
    for y in years:
        try:
            d = datetime(y, month, day)
        except ValueError:
            continue
        if (d >= today) if future else (d <= today):
            return _day(d)
    return None


def _month_nearest(ref: datetime, month: int, mode: str) -> Interval:
    y = ref.year
    if mode == "past":
        y = y if month <= ref.month else y - 1
    elif mode == "future":
        y = y if month >= ref.month else y + 1
    elif mode == "last":
        y = y if month < ref.month else y - 1
    elif mode == "next":
        y = y if month > ref.month else y + 1
    return _month(y, month)


def _direction(mod: str | None, future: bool) -> str:
    """Normalise a modifier word to last / this / next / past / future."""
    if not mod:
        return "future" if future else "past"
    mod = re.sub(r"\s+", " ", mod.lower())
    if mod in ("last", "past", "this past", "the past", "previous"):
        return "last"
    if mod in ("next", "coming", "this coming"):
        return "next"
    return "this"


# --------------------------------------------------------------------------- atoms: absolute dates


def _ymd(y: int, m: int, d: int) -> Interval | None:
    try:
        return _day(datetime(y, m, d))
    except ValueError:
        return None


@_rule(rf"\b(?P<y>{_YEAR})(?P<sep>[-/])(?P<m>\d{{1,2}})(?P=sep)(?P<d>\d{{1,2}})(?!\d)")
def _iso(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    iv = _ymd(int(m["y"]), int(m["m"]), int(m["d"]))
    return _item(m, iv) if iv else None


@_rule(r"(?<![\w.])(?P<d>\d{1,2})\.(?P<m>\d{1,2})\.(?P<y>(?:19|20)\d\d)(?!\w|\.\d)")
def _dotted(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    # Dotted dates are a day-first (European) convention: 8.5.2023 is 8 May.
    iv = _ymd(int(m["y"]), int(m["m"]), int(m["d"]))
    return _item(m, iv) if iv else None


@_rule(r"(?<![\w./-])(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>(?:19|20)?\d\d)(?![\w/])")
def _numeric(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    # Slash order is ambiguous (05/08 vs 25/12): let dateparser apply its English conventions.
    found = _dateparser_date(m.group(0), ctx.ref)
    if found is None or found[1] != "day":
        return None
    return _item(m, _day(found[0]))


SOON_DAY = timedelta(days=60)


def _dated(m: re.Match[str], ctx: _Ctx, month: int, day: int) -> _Item | None:
    if m["year"]:
        iv = _ymd(int(m["year"]), month, day)
        return _item(m, iv) if iv else None
    after = _month_day(ctx.ref, month, day, True)
    before = _month_day(ctx.ref, month, day, False)
    if after is None or before is None:
        return None
    ahead, behind = after.start - ctx.today, ctx.today - before.start
    # A named day in the coming weeks is that day even in the past tense ("I
    # booked flights for May 19" on 29 April): nobody dates last year's day so.
    fut = (not ctx.lenient and ahead <= SOON_DAY) or ctx.forward(m.start(), m.end(), ahead, behind)
    iv = after if fut else before
    if iv is None:
        return None
    return _item(m, iv, lambda r: _month_day(r, month, day, False))


@_rule(
    rf"\b(?:{_WEEKDAY}\s*,?\s+)?(?:the\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+"
    rf"(?P<mon>{_MONTH_ANY})(?:\s*,?\s*(?P<year>{_YEAR})\b)?"
)
def _dmy(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    if not _month_token_ok(m["mon"], bool(m["year"]), ctx):
        return None
    return _dated(m, ctx, _month_num(m["mon"]), int(m["day"]))


@_rule(
    rf"\b(?:the\s+)?(?P<ord>{_ORDINAL_RE})\s+of\s+(?P<mon>{_MONTH_ANY})"
    rf"(?:\s*,?\s*(?P<year>{_YEAR})\b)?"
)
def _dmy_words(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    if not _month_token_ok(m["mon"], bool(m["year"]), ctx):
        return None
    return _dated(m, ctx, _month_num(m["mon"]), _ORDINALS[re.sub(r"\s+", " ", m["ord"].lower())])


@_rule(
    rf"\b(?:{_WEEKDAY}\s*,?\s+)?(?P<mon>{_MONTH_ANY})\s+(?:the\s+)?(?P<day>\d{{1,2}})"
    rf"(?:st|nd|rd|th)?\b(?!\s*:\d|\.\d|\s*(?:%|percent))(?:\s*,?\s*(?P<year>{_YEAR})\b)?"
)
def _mdy(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    if not _month_token_ok(m["mon"], bool(m["year"]), ctx):
        return None
    return _dated(m, ctx, _month_num(m["mon"]), int(m["day"]))


@_rule(rf"\b(?P<mon>{_MONTH_ANY})\s*,?\s+(?:of\s+)?(?P<year>{_YEAR})\b(?!\s*[-/]\d)")
def _month_year(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    return _item(m, _month(int(m["year"]), _month_num(m["mon"])))


# A bare month needs a context that makes it a month: "in June", "since May", "last March".
_MONTH_CTX_RE = re.compile(
    r"(?:\b(?:in|during|since|before|after|until|till|through|throughout|from|of|around|"
    r"between|early|mid|late|by)\s+|\bmid-|"
    + _MONTH_ANY
    + r"(?:\s+\d{1,2}(?:st|nd|rd|th)?)?(?:,?\s+"
    + _YEAR
    + r")?\s*(?:to|and|or|through|until|till|-|–|—)\s*)$",
    re.I,
)
_LOWER_MONTH_CTX_RE = re.compile(
    r"(?:\b(?:in|since|during|early|mid|late)\s+|\bmid-|"
    r"\b(?:end|beginning|start|middle|rest)\s+of\s+)$",
    re.I,
)
_NAME_LIKE_MONTHS = {"april", "may", "june", "august", "march"}


@_rule(
    rf"\b(?:(?P<mod>last|this\s+past|this\s+coming|this|next|coming)\s+)?"
    rf"(?P<mon>{_MONTH_FULL})\b(?!['’]s\b)"
)
def _bare_month(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    tok = m["mon"]
    low = tok.lower()
    month = _MONTHS[low]
    prefix = ctx.before(m.start())
    if not ctx.lenient:
        if low in ("may", "march") and tok[0].islower():
            # "I may go", "we march": lowercase only after in/since/during/early...
            if m["mod"] or not _LOWER_MONTH_CTX_RE.search(prefix):
                return None
        elif not m["mod"]:
            ok = _MONTH_CTX_RE.search(prefix)
            if ok and low in _NAME_LIKE_MONTHS and re.search(r"\bby\s+$", prefix, re.I):
                ok = None  # "a painting by June"
            if not ok and not (tok[0].isupper() and low not in _NAME_LIKE_MONTHS):
                return None
    if m["mod"]:
        mode = _direction(m["mod"], False)
    else:
        ahead = _month_nearest(ctx.ref, month, "next").start - ctx.today
        behind = ctx.today - _month_nearest(ctx.ref, month, "past").start
        mode = "future" if ctx.forward(m.start(), m.end(), ahead, behind) else "past"
    iv = _month_nearest(ctx.ref, month, mode)
    redo = None if m["mod"] else (lambda r: _month_nearest(r, month, "past"))
    return _item(m, iv, redo)


# --------------------------------------------------------------------------- atoms: years, decades

_YEAR_CTX_RE = re.compile(
    r"(?:\b(?:in|since|before|after|during|until|till|by|from|around|circa|throughout|through|"
    r"between|year|early|mid|late|spring|summer|autumn|fall|winter|christmas|easter)\s+|\bmid-|"
    r"\b(?:end|beginning|start|middle|rest|half|class|part)\s+of\s+(?:the\s+year\s+)?|"
    + _YEAR
    + r"\s*(?:and|or|to|through|until|till|-|–|—)\s*)$",
    re.I,
)
_COUNT_NOUN_RE = re.compile(
    r"^\s+(?:dollars|euros|pounds|usd|people|persons|times|miles|km|kilometers|kilometres|"
    r"feet|ft|meters|metres|words|calories|steps|points|pages|items|units|copies|users|"
    r"members|followers|views|likes|kids|children|students|votes|pieces|cars|books|songs|"
    r"photos|pictures|hours|minutes|seconds|days|weeks|months|years|%|percent|mg|kg|lbs|g)\b",
    re.I,
)


@_rule(rf"\b(?P<year>{_YEAR})\b(?![-–/]\d)")
def _bare_year(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    if _COUNT_NOUN_RE.match(ctx.after(m.end())):
        return None
    if not (ctx.lenient or _YEAR_CTX_RE.search(ctx.before(m.start()))):
        return None
    return _item(m, _year(int(m["year"])))


@_rule(rf"\b(?:(?:from|between)\s+)?(?P<a>{_YEAR})\s*(?:-|–|—)\s*(?P<b>{_YEAR}|\d\d)\b(?!-\d)")
def _year_range(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    a = int(m["a"])
    b = int(m["b"]) if len(m["b"]) == 4 else a - a % 100 + int(m["b"])
    if b <= a:
        return None
    return _item(m, _iv(datetime(a, 1, 1), datetime(b + 1, 1, 1), "range"))


_DECADE_WORDS = {
    "twenties": 20, "thirties": 30, "forties": 40, "fifties": 50,
    "sixties": 60, "seventies": 70, "eighties": 80, "nineties": 90,
}  # fmt: skip


def _decade_part(start: int, part: str | None) -> Interval:
    if not part:
        return _decade(start)
    lo, hi = {"early": (0, 4), "mid": (4, 7), "late": (7, 10)}[part.lower()]
    return _iv(datetime(start + lo, 1, 1), datetime(start + hi, 1, 1), "decade")


@_rule(r"\b(?:the\s+)?(?:(?P<part>early|mid|late)(?:\s+|\s*-\s*))?(?P<dec>(?:1[89]|20)\d0)['’]?s\b")
def _decade4(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    start = int(m["dec"])
    if start % 100 == 0 and start < 2000:  # "the 1800s" is a century
        return _item(m, _iv(datetime(start, 1, 1), datetime(start + 100, 1, 1), "century"))
    return _item(m, _decade_part(start, m["part"]))


@_rule(
    r"\bthe\s+(?:(?P<part>early|mid|late)(?:\s+|\s*-\s*))?"
    r"(?:['’]?(?P<dec>\d0)['’]?s\b|(?P<word>twenties|thirties|forties|fifties|sixties|"
    r"seventies|eighties|nineties)\b)"
)
def _decade2(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    # "the 90s" but never "in my 20s" (that is an age): the article is required.
    two = int(m["dec"]) if m["dec"] else _DECADE_WORDS[m["word"].lower()]
    start = 2000 + two if 2000 + two <= ctx.ref.year else 1900 + two
    return _item(m, _decade_part(start, m["part"]))


# --------------------------------------------------------------------------- atoms: relative


@_rule(
    r"\b(?:(?P<dby>the\s+day\s+before\s+yesterday)|(?P<dat>the\s+day\s+after\s+tomorrow)"
    r"|(?P<el>earlier|later)\s+(?P<elw>today|tonight)"
    r"|(?P<w>today|tonight|yesterday|tomorrow)(?:\s+(?P<part>morning|afternoon|evening|night))?"
    r"|this\s+(?P<this>morning|afternoon|evening)|(?P<ln>last\s+night))\b"
)
def _relative_day(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    today = ctx.today
    if m["dby"]:
        return _item(m, _day(today - 2 * _DAY))
    if m["dat"]:
        return _item(m, _day(today + 2 * _DAY))
    if m["el"]:
        if m["el"].lower() == "earlier":
            end = max(ctx.ref, today + timedelta(minutes=1))
            return _item(m, _iv(today, end, "day"))
        return _item(m, _iv(ctx.ref, max(today + _DAY, ctx.ref + timedelta(minutes=1)), "day"))
    if m["ln"]:
        return _item(m, _part_of_day(today - _DAY, "night"))
    if m["this"]:
        return _item(m, _part_of_day(today, m["this"].lower()))
    word = m["w"].lower()
    base = today + {"today": 0, "tonight": 0, "yesterday": -1, "tomorrow": 1}[word] * _DAY
    part = "night" if word == "tonight" else (m["part"] or "").lower()
    return _item(m, _part_of_day(base, part) if part else _day(base))


def _part_of_day(day: datetime, part: str) -> Interval:
    lo, hi = _PARTS_OF_DAY[part]
    return _iv(day + timedelta(hours=lo), day + timedelta(hours=hi), "part_of_day")


def _units_back(ref: datetime, unit: str, lo: int, hi: int) -> Interval:
    """The calendar units lo..hi units before ref (lo <= hi), as one interval."""
    if unit == "hour":  # "an hour ago" is a window around that moment, not a clock hour
        half = timedelta(minutes=30)
        return _iv(ref - timedelta(hours=hi) - half, ref - timedelta(hours=lo) + half, "hour")
    first = _unit_of(_add(ref, unit, -hi), unit)
    last = _unit_of(_add(ref, unit, -lo), unit)
    return _iv(first.start, last.end, first.granularity if lo == hi else "range")


@_rule(
    rf"\b{_num_group()}\s+{_UNIT}(?:\s+or\s+(?P<orx>so|two|three))?\s+ago\b"
    rf"|\b{_num_group('b')}\s+(?P<unitb>hour|day|week|month|year|decade)s?\s+"
    rf"(?P<dir>back|before\s+now)\b"
)
def _ago(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    if m["unit"]:
        lo, hi = _num_range(m["n1"], m["n2"])
        if m["orx"] and m["orx"].lower() != "so":
            hi = max(hi, _NUMBER_WORDS[m["orx"].lower()])
        unit = m["unit"].lower()
    else:
        lo, hi = _num_range(m["n1b"], m["n2b"])
        unit = m["unitb"].lower()
    return _item(m, _units_back(ctx.ref, unit, lo, hi))


@_rule(
    rf"\b{_num_group()}\s+{_UNIT}\s+from\s+(?:now|today)\b"
    rf"|\bin\s+(?:about\s+|around\s+|roughly\s+)?{_num_group('b')}\s+"
    rf"(?P<unitb>hour|day|week|month|year)s?\b(?!\s+(?:ago|before|after|later|earlier|of)\b)"
)
def _from_now(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    if m["unit"]:
        lo, hi = _num_range(m["n1"], m["n2"])
        unit = m["unit"].lower()
    else:
        # "in 3 weeks" is a duration in "she lost weight in 3 weeks": future talk only.
        if not (ctx.lenient or ctx.future(m.start())):
            return None
        lo, hi = _num_range(m["n1b"], m["n2b"])
        unit = m["unitb"].lower()
    iv = _units_back(ctx.ref, unit, -hi, -lo)
    return _item(m, iv)


@_rule(
    rf"\b(?:the|these|this)\s+(?P<mod>past|last|previous|next|coming)\s+"
    rf"(?:{_num_group()}\s+)?{_UNIT}"
)
def _rolling(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    mod = m["mod"].lower()
    unit = m["unit"].lower()
    if mod in ("next", "coming", "previous") and not m["n1"]:
        return _item(m, None)  # "the next day", "the previous week": relative to a story
    _, n = _num_range(m["n1"], m["n2"])
    if mod in ("next", "coming"):
        return _item(m, _iv(ctx.ref, _add(ctx.ref, unit, n), "range"))
    return _item(m, _iv(_add(ctx.ref, unit, -n), ctx.ref, "range"))


@_rule(r"\bthe\s+(?:following|subsequent)\s+(?:hour|day|night|week|weekend|month|year)\b")
def _narrative(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    return _item(m, None)


@_rule(
    r"\b(?P<mod>last|this\s+coming|this|next|coming|current)\s+(?P<unit>week|month|year|decade)\b"
)
def _calendar_relative(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    unit = m["unit"].lower()
    k = {"last": -1, "this": 0, "next": 1}[_direction(m["mod"], False)]
    return _item(m, _unit_of(_add(ctx.ref, unit, k), unit))


@_rule(
    r"\bthe\s+(?P<unit>day|week|weekend|month|year)\s+"
    r"(?:(?P<bl>before\s+last)|(?P<an>after\s+next))\b"
)
def _before_last(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    unit = m["unit"].lower()
    k = -2 if m["bl"] else 2
    if unit == "weekend":
        return _item(m, _weekend_of(_add(ctx.ref, "week", k)))
    return _item(m, _unit_of(_add(ctx.ref, unit, k), unit))


@_rule(r"\b(?P<el>earlier|later)\s+(?:this|in\s+the)\s+(?P<unit>week|month|year)\b")
def _earlier_this(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    unit = _unit_of(ctx.ref, m["unit"].lower())
    if m["el"].lower() == "earlier":
        iv = _iv(unit.start, max(ctx.ref, unit.start + _DAY), "range")
    else:
        iv = _iv(min(ctx.ref, unit.end - _DAY), unit.end, "range")
    return _item(m, iv)


@_rule(r"\b(?:recently|lately|(?P<other>the\s+other\s+day))\b")
def _recently(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    if m["other"]:
        return _item(m, _iv(ctx.today - 7 * _DAY, ctx.today, "vague"))
    return _item(m, _iv(ctx.today - 30 * _DAY, ctx.today + _DAY, "vague"))


# --------------------------------------------------------------------------- atoms: weekdays etc.


def _weekend_of(d: datetime) -> Interval:
    sat = _week_start(d) + 5 * _DAY
    return _iv(sat, sat + 2 * _DAY, "weekend")


_WEEKEND_CTX_RE = re.compile(
    r"\b(?:over|on|at|during|for|through|throughout|from|since|by|until|all)\s+the\s+$", re.I
)


@_rule(
    r"\b(?:(?P<mod>last|this\s+past|the\s+past|past|this\s+coming|this|next|coming)\s+)?"
    r"weekend\b(?!\s+of\b)"
)
def _weekend(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    mod = (m["mod"] or "").lower()
    ws = _week_start(ctx.ref)
    if not mod:
        if not (ctx.lenient or _WEEKEND_CTX_RE.search(ctx.before(m.start()))):
            return None
        if ctx.today.weekday() >= 5:
            return _item(m, _weekend_of(ctx.today))
        k = 0 if ctx.future(m.start()) else -1
        return _item(m, _weekend_of(ws + 7 * k * _DAY))
    if "coming" in mod:
        return _item(m, _weekend_of(ctx.today + 2 * _DAY))
    k = {"last": -1, "this": 0, "next": 1}[_direction(mod, False)]
    return _item(m, _weekend_of(ws + 7 * k * _DAY))


def _weekday_date(ref: datetime, wd: int, mode: str) -> Interval:
    today = _midnight(ref)
    w = today.weekday()
    if mode == "last":
        return _day(today - ((w - wd) % 7 or 7) * _DAY)
    if mode == "this":
        return _day(_week_start(today) + wd * _DAY)
    if mode == "next":
        return _day(_week_start(today) + (7 + wd) * _DAY)
    if mode == "coming":
        return _day(today + ((wd - w) % 7 or 7) * _DAY)
    if mode == "future":
        return _day(today + ((wd - w) % 7) * _DAY)
    return _day(today - ((w - wd) % 7) * _DAY)


_WEEKDAY_CTX_RE = re.compile(
    r"\b(?:on|by|until|till|since|before|after|from|through|and|or)\s+$", re.I
)


@_rule(
    rf"\b(?:(?P<mod>last|this\s+past|this\s+coming|this|next|coming)\s+)?"
    rf"(?P<wd>{_WEEKDAY})\b(?!['’]s\b)(?:\s+(?P<part>morning|afternoon|evening|night))?"
)
def _weekday(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    wd = _WEEKDAYS.index(m["wd"].lower())
    mod = (m["mod"] or "").lower()
    if not mod and not ctx.lenient:
        prefix = ctx.before(m.start())
        if re.search(r"\b(?:every|each)\s+$", prefix, re.I):
            return None
        follows = re.match(r"\s*(?:$|[,.;:!?)\"”])", ctx.after(m.end()))
        # "the Monday before July 24": a day told against what follows (`_compose`
        # dates it, or leaves it unresolved: "the Sunday after the wedding").
        told_against = re.match(r"\s+(?:before|after|following|prior\s+to)\b", ctx.after(m.end()))
        if told_against and re.search(r"\bthe\s+$", prefix, re.I):
            return _item(m, replace(_day(ctx.ref), granularity="weekday-of"))
        prefix_ok = _WEEKDAY_CTX_RE.search(prefix)
        if not (prefix_ok or m["part"] or follows or ctx.at_sentence_start(m.start())):
            return None  # "Sunday school", "going to Sunday mass"
    if mod:
        mode = "coming" if "coming" in mod else _direction(mod, False)
    else:
        mode = _direction(None, ctx.future(m.start()))
    iv = _weekday_date(ctx.ref, wd, mode)
    redo = None if mod else (lambda r: _weekday_date(r, wd, "past"))
    return _item(m, iv, redo)


def _season_pick(ref: datetime, season: str, mode: str) -> Interval:
    instances = [_season(season, y) for y in range(ref.year - 2, ref.year + 3)]
    if mode == "last":  # the most recent one that is over
        return [s for s in instances if s.end <= ref][-1]
    if mode == "next":
        return next(s for s in instances if s.start > ref)
    if mode == "future":
        return next(s for s in instances if s.end > ref)
    if mode == "this":
        return min(instances, key=lambda s: abs((s.midpoint - ref).total_seconds()))
    return [s for s in instances if s.start <= ref][-1]


_SEASON_CTX_RE = re.compile(
    r"(?:\b(?:in|during|over|through|throughout|since|before|after|until|till|by|for|from|"
    r"early|mid|late)\s+(?:the\s+)?|\bmid-|\b(?:end|beginning|start|middle|rest)\s+of\s+(?:the\s+)?)$",
    re.I,
)


@_rule(
    r"\b(?:(?P<mod>last|this\s+past|this\s+coming|this|next|coming)\s+)?"
    rf"(?P<season>summer|winter|spring|autumn|fall)\b(?!['’]s\b)"
    rf"(?:\s+(?:of\s+)?(?P<year>{_YEAR})\b)?"
)
def _season_rule(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    season = m["season"].lower()
    if m["year"]:
        return _item(m, _season(season, int(m["year"])))
    if not ctx.lenient:
        if re.match(r"\s+of\b", ctx.after(m.end())):
            return None  # "the fall of Rome", "the spring of my life"
        prefix = ctx.before(m.start())
        if not m["mod"]:
            if not _SEASON_CTX_RE.search(prefix):
                return None
            if season == "fall" and not re.search(
                r"\b(?:in|during|over)\s+(?:the\s+)?$", prefix, re.I
            ):
                return None  # "before the fall" is probably not autumn
    if m["mod"]:
        mode = _direction(m["mod"], False)
    else:  # like a bare month: the tense says, else the nearer one
        ahead = _season_pick(ctx.ref, season, "next").start - ctx.today
        behind = ctx.today - _season_pick(ctx.ref, season, "past").start
        mode = "future" if ctx.forward(m.start(), m.end(), ahead, behind) else "past"
    iv = _season_pick(ctx.ref, season, mode)
    redo = None if m["mod"] else (lambda r: _season_pick(r, season, "past"))
    return _item(m, iv, redo)


def _holiday_pick(ref: datetime, name: str, mode: str) -> Interval:
    today = _midnight(ref).date()
    dates = [_holiday(name, y) for y in range(ref.year - 1, ref.year + 2)]
    if mode == "last":
        return _day([d for d in dates if d < today][-1])
    if mode == "next":
        return _day(next(d for d in dates if d > today))
    if mode == "this":
        return _day(_holiday(name, ref.year))
    if mode == "future":
        return _day(next(d for d in dates if d >= today))
    return _day([d for d in dates if d <= today][-1])


_HOLIDAY_CTX_RE = re.compile(
    r"\b(?:on|at|for|over|during|around|since|before|after|until|till|by|from|through|of)\s+$",
    re.I,
)


@_rule(
    r"\b(?:(?P<mod>last|this\s+past|this\s+coming|this|next|coming)\s+)?"
    r"(?P<hol>christmas\s+eve|christmas\s+day|christmas|xmas|new\s+year['’]?s\s+eve|"
    r"new\s+year['’]?s\s+day|new\s+year['’]?s|halloween|valentine['’]?s\s+day|valentines\s+day|"
    r"thanksgiving|easter|independence\s+day|the\s+(?:fourth|4th)\s+of\s+july)"
    rf"(?!\w)(?:\s+(?P<year>{_YEAR})\b)?"
)
def _holiday_rule(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    name = m["hol"]
    if m["year"]:
        return _item(m, _day(_holiday(name, int(m["year"]))))
    if not (m["mod"] or ctx.lenient or _HOLIDAY_CTX_RE.search(ctx.before(m.start()))):
        return None  # "my New Year's resolution", "I love Christmas"
    mode = _direction(m["mod"], ctx.future(m.start()))
    redo = None if m["mod"] else (lambda r: _holiday_pick(r, name, "past"))
    return _item(m, _holiday_pick(ctx.ref, name, mode), redo)


def _day_of_month(ref: datetime, day: int, mode: str) -> Interval | None:
    y, mo = ref.year, ref.month
    step = 1 if mode == "future" else -1
    today = _midnight(ref)
    for _ in range(4):
        try:
            d = datetime(y, mo, day)
        except ValueError:
            d = None
        if d is not None and ((d >= today) if mode == "future" else (d <= today)):
            return _day(d)
        y, mo = _shift_month(y, mo, step)
    return None


_AFTER_ORDINAL_RE = re.compile(
    r"\s*(?:$|[,.;:!?)]|(?:at|in|and|or|when|so|but|because|to|with|we|i|he|she|they|you|it|"
    r"this|that|for|from|until|till|after|before)\b)",
    re.I,
)


@_rule(
    r"\bthe\s+(?P<day>\d{1,2})(?:st|nd|rd|th)\b"
    r"(?:\s+of\s+(?P<which>this|last|next|the)\s+month\b)?"
)
def _ordinal_day(m: re.Match[str], ctx: _Ctx) -> _Item | None:
    day = int(m["day"])
    if not 1 <= day <= 31:
        return None
    if not ctx.lenient:
        if not re.search(
            r"\b(?:on|by|until|till|since|before|after|from)\s+$", ctx.before(m.start()), re.I
        ):
            return None
        if not m["which"] and not _AFTER_ORDINAL_RE.match(ctx.after(m.end())):
            return None  # "the 18th birthday", "the 5th floor"
    which = (m["which"] or "").lower()
    if which in ("this", "last", "next"):
        y, mo = _shift_month(ctx.ref.year, ctx.ref.month, {"this": 0, "last": -1, "next": 1}[which])
        iv = _ymd(y, mo, day)
    else:
        iv = _day_of_month(ctx.ref, day, "future" if ctx.future(m.start()) else "past")
    return _item(m, iv) if iv else None


# --------------------------------------------------------------------------- composites

_NARROW_RE = re.compile(
    r"(?:\b(?P<part>early|mid|late)(?:\s+|\s*-\s*)|(?:\bthe\s+)?\b(?:(?P<pos>very\s+beginning|"
    r"beginning|start|middle|end|first\s+half|second\s+half|first\s+week|last\s+week|"
    r"final\s+week|first\s+few\s+days|last\s+few\s+days|first\s+days|last\s+days|"
    r"weekend|week)\s+of)\s+)(?:the\s+)?$",
    re.I,
)


_NARROWABLE = {"week", "weekend", "month", "season", "year", "decade", "century"}
# "the last two weeks of August 2023", "the first 3 days of the trip's month".
_NARROW_N_RE = re.compile(
    rf"(?:\bthe\s+)?\b(?P<edge>first|last|final)\s+(?P<n>{_NUM})\s+"
    r"(?P<unit>day|week|month)s?\s+of\s+(?:the\s+)?$",
    re.I,
)
# "the Monday before July 24, 2023", "the Friday after the 3rd of June".
_WEEKDAY_OF_RE = re.compile(
    rf"^\s*(?:the\s+)?(?P<wd>{_WEEKDAY})s?\s+(?P<dir>before|after|following|prior\s+to)"
    r"\s+(?:the\s+)?$",
    re.I,
)


def _edge_of(iv: Interval, edge: str, unit: str, n: int) -> Interval | None:
    """The first or last `n` units of an interval (never more than all of it)."""
    if n < 1:
        return None
    if edge == "first":
        return _iv(iv.start, min(iv.end, _add(iv.start, unit, n)), "range")
    return _iv(max(iv.start, _add(iv.end, unit, -n)), iv.end, "range")


def _weekday_near(anchor: Interval, wd: int, before: bool) -> Interval:
    """The `wd` weekday just before the anchor's start, or just after its end."""
    if before:
        day = _midnight(anchor.start) - _DAY
        while day.weekday() != wd:
            day -= _DAY
    else:
        day = _midnight(anchor.end - min(_DAY, anchor.end - anchor.start)) + _DAY
        while day.weekday() != wd:
            day += _DAY
    return _day(day)


def _narrow(iv: Interval, how: str) -> Interval | None:
    how = re.sub(r"\s+", " ", how.lower())
    how = {"very beginning": "early", "beginning": "early", "start": "early",
           "middle": "mid", "end": "late", "final week": "last week",
           "first days": "first few days", "last days": "last few days"}.get(how, how)  # fmt: skip
    s, e, g = iv.start, iv.end, iv.granularity
    if how == "week":
        return _week(s)
    if how == "weekend":
        return _weekend_of(s)
    if how == "first week":
        return _iv(s, min(e, s + 7 * _DAY), "week")
    if how == "last week":
        return _iv(max(s, e - 7 * _DAY), e, "week")
    if how == "first few days":
        return _iv(s, min(e, s + 5 * _DAY), "range")
    if how == "last few days":
        return _iv(max(s, e - 5 * _DAY), e, "range")
    if how in ("first half", "second half"):
        months = (e.year - s.year) * 12 + e.month - s.month
        if s.day == 1 and e.day == 1 and months >= 2 and months % 2 == 0:
            mid = _add(s, "month", months // 2)  # the first half of 2023 ends on 1 July
        else:
            mid = _midnight(iv.midpoint) if e - s >= 2 * _DAY else iv.midpoint
        return _iv(s, mid, "range") if how == "first half" else _iv(mid, e, "range")
    if how not in ("early", "mid", "late") or g not in _NARROWABLE:
        return None  # "late today" is about being late, not a time of day
    idx = ("early", "mid", "late").index(how)
    if g == "month":
        cuts = [s, s.replace(day=11), s.replace(day=21), e]
    elif g == "decade":
        y = s.year
        cuts = [s, datetime(y + 4, 1, 1), datetime(y + 7, 1, 1), e]
    else:
        months = (e.year - s.year) * 12 + e.month - s.month
        if s.day == 1 and e.day == 1 and months >= 3 and months % 3 == 0:
            third = months // 3
            cuts = [s, _add(s, "month", third), _add(s, "month", 2 * third), e]
        elif e - s >= 3 * _DAY:
            days = (e - s).days
            cuts = [s, s + round(days / 3) * _DAY, s + round(2 * days / 3) * _DAY, e]
        else:
            cuts = [s, s + (e - s) / 3, s + 2 * (e - s) / 3, e]
    return _iv(cuts[idx], cuts[idx + 1], g)


_OFFSET_RE = re.compile(
    rf"(?:\b{_num_group()}|\bthe)\s+(?P<unit>hour|day|night|week|weekend|month|year)s?\s+"
    r"(?P<dir>before|after|prior\s+to|following|earlier\s+than|later\s+than)\s+$",
    re.I,
)
_UNRESOLVED_RE = re.compile(
    rf"(?:\b{_num_group()}|\bthe)\s+(?:hour|day|night|week|weekend|month|year)s?\s+"
    r"(?:before|after|prior\s+to|following|later|earlier)\b",
    re.I,
)


def _offset(anchor: Interval, unit: str, lo: int, hi: int, before: bool) -> Interval:
    """The window `lo..hi units` before/after an anchor that is itself a date."""
    if before:
        base = anchor.start
        first, last = _add(base, unit, -hi), _add(base, unit, -lo)
    else:
        base = anchor.end - min(_DAY, anchor.end - anchor.start)
        first, last = _add(base, unit, lo), _add(base, unit, hi)
    half = {
        "hour": timedelta(minutes=30),
        "day": timedelta(0),
        "night": timedelta(0),
        "week": timedelta(days=3),
        "weekend": timedelta(days=3),
        "month": timedelta(days=15),
        "year": timedelta(days=182),
    }[unit]
    if unit in ("day", "night"):
        return _iv(_midnight(first), _midnight(last) + _DAY, "day" if lo == hi else "range")
    if unit in ("week", "weekend", "month", "year"):
        first, last = _midnight(first), _midnight(last)
        return _iv(first - half, last + half + _DAY, "range")
    return _iv(first - half, last + half, "range")


_RANGE_SEP_RE = re.compile(r"\s*(?P<sep>to|until|till|through|thru|and|-|–|—)\s*$", re.I)
_RANGE_OPEN_RE = re.compile(r"\b(?P<w>from|between)\s+$", re.I)
_BOUND_RE = re.compile(
    r"\b(?P<b>ever\s+since|since|before|prior\s+to|after|until|till|up\s+until|up\s+to"
    r"|as\s+of|by)\s+$",
    re.I,
)


def _resolve_overlaps(items: list[_Item]) -> list[_Item]:
    """Keep the longest of overlapping spans (ties: the earlier one)."""
    chosen: list[_Item] = []
    for it in sorted(items, key=lambda i: (-(i.end - i.start), i.start)):
        if all(it.end <= c.start or it.start >= c.end for c in chosen):
            chosen.append(it)
    return sorted(chosen, key=lambda i: i.start)


def _compose(items: list[_Item], ctx: _Ctx) -> list[_Item]:
    text = ctx.text
    # early/mid/late, beginning/end of, the first week of, the week of ...
    out = list(items)
    for it in items:
        if it.interval is None:
            continue
        prefix = ctx.before(it.start, 40)
        m = _NARROW_RE.search(prefix)
        if m:
            how = m["part"] or m["pos"]
            iv = _narrow(it.interval, how)
            if iv is not None:
                out.append(_Item(it.start - (len(prefix) - m.start()), it.end, iv))
            continue
        m = _NARROW_N_RE.search(prefix)
        if m:
            lo, _hi = _num_range(m["n"])
            edge = "first" if m["edge"].lower() == "first" else "last"
            iv = _edge_of(it.interval, edge, m["unit"].lower(), lo)
            if iv is not None:
                out.append(_Item(it.start - (len(prefix) - m.start()), it.end, iv))
    items = _resolve_overlaps(out)

    # the Monday before July 24, 2023: a weekday told against a date
    out = []
    i = 0
    while i < len(items):
        a = items[i]
        b = items[i + 1] if i + 1 < len(items) else None
        if b is not None and a.interval is not None and b.interval is not None:
            m = _WEEKDAY_OF_RE.match(text[a.start : b.start])
            if m:
                before = m["dir"].lower() in ("before", "prior to")
                iv = _weekday_near(b.interval, _WEEKDAYS.index(m["wd"].lower()), before)
                out.append(_Item(a.start, b.end, iv))
                i += 2
                continue
        if a.interval is not None and a.interval.granularity == "weekday-of":
            a = _Item(a.start, a.end, None)  # against an event: no date to tell
        out.append(a)
        i += 1
    items = out

    # from A to B, between A and B, A - B
    merged: list[_Item] = []
    i = 0
    while i < len(items):
        a = items[i]
        b = items[i + 1] if i + 1 < len(items) else None
        if b is not None and a.interval is not None and b.interval is not None:
            sep = _RANGE_SEP_RE.fullmatch(text, a.end, b.start)
            opener = _RANGE_OPEN_RE.search(ctx.before(a.start, 12))
            if sep and (
                sep["sep"].lower() != "and" or (opener and opener["w"].lower() == "between")
            ):
                a_iv = a.interval
                if a_iv.start >= b.interval.start and a.redo is not None:
                    a_iv = a.redo(b.interval.start) or a_iv
                if a_iv.start < b.interval.end:
                    start = (
                        a.start - (len(ctx.before(a.start, 12)) - opener.start())
                        if opener
                        else a.start
                    )
                    merged.append(_Item(start, b.end, _span(a_iv, b.interval)))
                    i += 2
                    continue
        merged.append(a)
        i += 1
    items = merged

    # two weeks before 8 May 2023
    out = []
    for it in items:
        prefix = ctx.before(it.start, 60)
        m = _OFFSET_RE.search(prefix) if it.interval is not None else None
        if m:
            lo, hi = _num_range(m["n1"], m["n2"])
            before = m["dir"].lower().startswith(("before", "prior", "earlier"))
            iv = _offset(it.interval, m["unit"].lower(), lo, hi, before)
            out.append(_Item(it.start - (len(prefix) - m.start()), it.end, iv))
        else:
            out.append(it)
    items = out

    # since / before / after / until X
    out = []
    for it in items:
        prefix = ctx.before(it.start, 16)
        m = _BOUND_RE.search(prefix) if it.interval is not None else None
        if not m:
            out.append(it)
            continue
        iv = it.interval
        assert iv is not None
        word = re.sub(r"\s+", " ", m["b"].lower())
        if word in ("since", "ever since"):
            new = _iv(iv.start, ctx.ref, "range") if iv.start < ctx.ref else iv
        elif word in ("before", "prior to"):
            new = _iv(OPEN_START, iv.start, "open")
        elif word == "after":
            new = _iv(iv.end, ctx.ref if ctx.ref > iv.end else OPEN_END, "range")
            if new.end == OPEN_END:
                new = replace(new, granularity="open")
        else:
            new = _iv(OPEN_START, iv.end, "open")
        out.append(_Item(it.start - (len(prefix) - m.start()), it.end, new))
    return out


@lru_cache(maxsize=4096)
def _scan_cached(text: str, ref: datetime, lenient: bool) -> tuple[_Item, ...]:
    return tuple(_scan(text, ref, lenient))


def _scan(text: str, ref: datetime, lenient: bool) -> list[_Item]:
    if not text or not _TRIGGER_RE.search(text):
        return []
    ctx = _Ctx(text, ref, lenient)
    atoms: list[_Item] = []
    for pattern, handler in _RULES:
        for m in pattern.finditer(text):
            try:
                it = handler(m, ctx)
            except (ValueError, OverflowError, IndexError, StopIteration):
                it = None  # an impossible date ("31 February") is just not a date
            if it is not None:
                atoms.append(it)
    if not atoms and not lenient:
        return []
    items = _compose(_resolve_overlaps(atoms), ctx)
    for m in _UNRESOLVED_RE.finditer(text):
        items.append(_Item(m.start(), m.end(), None))
    items = _resolve_overlaps(items)
    return [
        replace(it, interval=replace(it.interval, text=text[it.start : it.end].strip()))
        if it.interval is not None
        else it
        for it in items
    ]


class TimeOutOfRange(InvalidInputError, ValueError):
    """An aware time whose offset carries it past year 1 or 9999 in UTC
    (`9999-12-31T23:00:00-14:00`). A ValueError too: a parser trying readings
    takes it as "not a time"."""


def naive_utc(value: datetime) -> datetime:
    """The engine stores naive UTC: an aware time is converted to UTC and its
    tzinfo dropped; a naive one is taken as UTC already. Raises TimeOutOfRange."""
    if value.tzinfo is None:
        return value
    try:
        return value.astimezone(UTC).replace(tzinfo=None)
    except OverflowError:
        raise TimeOutOfRange(
            f"{value.isoformat()} is outside the years 1 to 9999 once converted to UTC"
        ) from None


# --------------------------------------------------------------------------- dateparser

_DP_SETTINGS_BASE = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}


@lru_cache(maxsize=16)
def _dp_parser(ref: datetime | None, require_full: bool) -> Any:
    from dateparser.date import DateDataParser  # slow first import: only when needed

    settings: dict[str, Any] = dict(_DP_SETTINGS_BASE)
    if ref is not None:
        settings["RELATIVE_BASE"] = ref
    if require_full:
        settings["REQUIRE_PARTS"] = ["day", "month", "year"]
    return DateDataParser(languages=["en"], settings=settings)


@lru_cache(maxsize=2048)
def _dateparser_date(
    span: str, ref: datetime | None, require_full: bool = False
) -> tuple[datetime, str] | None:
    """(datetime, period) for one candidate span, or None."""
    try:
        data = _dp_parser(ref, require_full).get_date_data(span)
    except Exception:  # dateparser raises a zoo of errors on odd input
        return None
    if data is None or data.date_obj is None:
        return None
    return naive_utc(data.date_obj), data.period or "day"


_FALLBACK_OK_RE = re.compile(
    rf"\b{_MONTH_ANY}|\b{_YEAR}\b|\d{{1,4}}[/.-]\d{{1,2}}[/.-]\d{{1,4}}", re.I
)


def _hull(items: list[_Item], text: str) -> Interval | None:
    ivs = [it.interval for it in items if it.interval is not None]
    if not ivs:
        return None
    if len(ivs) == 1:
        return ivs[0]
    start = min(iv.start for iv in ivs)
    end = max(iv.end for iv in ivs)
    return Interval(start, end, text[items[0].start : items[-1].end].strip(), "range")


# --------------------------------------------------------------------------- public API


def find_time_expressions(text: str, reference: datetime) -> list[Interval]:
    """Every time expression in free text, resolved against `reference`, in text order.

    Expressions relative to an undated event ("two weeks before the wedding")
    are left out.
    """
    ref = naive_utc(reference)
    return [it.interval for it in _scan_cached(text, ref, False) if it.interval is not None]


def resolve(expression: str, reference: datetime) -> Interval | None:
    """One time expression ("last week", "June", "8 May 2023") as an interval.

    Bare words are accepted here ("June", "2022", "summer") since the caller
    says this is a time. None when it is not a time, or is relative to an
    event ("two weeks before the wedding").
    """
    ref = naive_utc(reference)
    expr = expression.strip()
    if not expr:
        return None
    items = list(_scan_cached(expr, ref, True))
    if any(it.interval is None for it in items):
        return None
    if items:
        return _hull(items, expr)
    if not _FALLBACK_OK_RE.search(expr):
        return None
    found = _dateparser_date(expr, ref)
    if found is None:
        return None
    dt, period = found
    if period == "year":
        return replace(_year(dt.year), text=expr)
    if period == "month":
        return replace(_month(dt.year, dt.month), text=expr)
    if period == "week":
        return replace(_week(dt), text=expr)
    return replace(_day(dt), text=expr)


# How surely each kind of expression is read (`reading_confidence`).
_SURE_DATE = 1.0  # a day with its year: "4 February 2023", "the Monday before July 24, 2023"
_SURE_SPAN = 0.9  # a month, a year, a span with its year: "August 2023", "2022"
_RELATIVE = 0.8  # against the reference: "last week", "yesterday", "two days ago"
_OPEN = 0.7  # one side only: "before June 2023", "as of December 2023"
_YEARLESS = 0.5  # a month, a weekday or a season whose year is guessed: "in June"
_VAGUE = 0.3  # "recently", "lately", "the other day"
_HAS_YEAR = re.compile(rf"\b{_YEAR}\b|['’]\d\d\b")
_RELATIVE_RE = re.compile(
    r"\b(?:last|next|this|past|coming|ago|yesterday|today|tomorrow|tonight|earlier|later"
    r"|previous|following)\b",
    re.I,
)


def reading_confidence(interval: Interval) -> float:
    """How surely the expression behind `interval` was read, 0..1: an explicit date
    surely, a relative one well, a guessed year or an open side less, "recently"
    hardly. From its text and granularity alone."""
    text = interval.text
    if interval.granularity == "vague":
        return _VAGUE
    if interval.is_open:
        return _OPEN
    if _HAS_YEAR.search(text):
        return _SURE_DATE if interval.duration <= 2 * _DAY else _SURE_SPAN
    if _RELATIVE_RE.search(text):
        return _RELATIVE
    return _YEARLESS


def query_interval(query: str, reference: datetime) -> Interval | None:
    """The interval a recall query asks about, or None when it names no time, with
    its `confidence` (`reading_confidence`).

    None too when the query's time hangs on an event ("two weeks before the
    wedding"): the temporal channel then stays silent instead of guessing.
    A vague word beside an explicit time gives way to it ("recently on 4
    February, 2023" is 4 February). Several expressions give the span covering
    them all, read as surely as the least sure of them.
    """
    ref = naive_utc(reference)
    items = list(_scan_cached(query, ref, False))
    if not items or any(it.interval is None for it in items):
        return None
    plain = [it for it in items if it.interval.granularity != "vague"]
    items = plain or items
    hull = _hull(items, query)
    if hull is None:
        return None
    confidence = min(reading_confidence(it.interval) for it in items)
    if len(items) > 1:
        confidence = min(confidence, _SURE_SPAN)
    return replace(hull, confidence=confidence)


_SESSION_RE = re.compile(
    r"^\s*(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?(?::(?P<s>\d{2}))?\s*(?P<ap>[ap]\.?\s*m\.?)?\s*"
    r"(?:on|,)\s+(?P<rest>.+?)\s*$",
    re.I,
)
_SESSION_TAIL_RE = re.compile(
    r"^\s*(?P<rest>.+?)\s*(?:,|\bat)\s*(?P<h>\d{1,2})(?::(?P<mi>\d{2}))?(?::(?P<s>\d{2}))?"
    r"\s*(?P<ap>[ap]\.?\s*m\.?)?\s*$",
    re.I,
)
_FULL_DATE_RES = [
    re.compile(
        rf"^(?:{_WEEKDAY}\s*,?\s+)?(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:\s+of)?\s+"
        rf"(?P<mon>{_MONTH_ANY})\s*,?\s*(?P<year>\d{{4}})$",
        re.I,
    ),
    re.compile(
        rf"^(?:{_WEEKDAY}\s*,?\s+)?(?P<mon>{_MONTH_ANY})\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?"
        r"\s*,?\s*(?P<year>\d{4})$",
        re.I,
    ),
]


def _full_date(text: str) -> datetime | None:
    for rx in _FULL_DATE_RES:
        m = rx.match(text.strip())
        if m:
            try:
                return datetime(int(m["year"]), _month_num(m["mon"]), int(m["day"]))
            except ValueError:
                return None
    return None


def _with_time(day: datetime, m: re.Match[str]) -> datetime | None:
    hour, minute, second = int(m["h"]), int(m["mi"] or 0), int(m["s"] or 0)
    ap = (m["ap"] or "").lower().replace(".", "").replace(" ", "")
    if ap:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if ap == "pm" else 0)
    try:
        return day.replace(hour=hour, minute=minute, second=second)
    except ValueError:
        return None


def parse_session_date(text: str) -> datetime | None:
    """A session timestamp such as LoCoMo's "1:56 pm on 8 May, 2023" (naive UTC), or None."""
    if not text or not text.strip():
        return None
    raw = text.strip()
    for rx in (_SESSION_RE, _SESSION_TAIL_RE):
        m = rx.match(raw)
        if m:
            day = _full_date(m["rest"])
            if day is not None:
                return _with_time(day, m)
    day = _full_date(raw)
    if day is not None:
        return day
    try:
        return naive_utc(datetime.fromisoformat(raw.replace("Z", "+00:00")))
    except ValueError:
        pass
    if not _FALLBACK_OK_RE.search(raw):
        return None
    found = _dateparser_date(raw, None, True)
    return found[0] if found else None
