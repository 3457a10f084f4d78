"""JSON and JSON Lines message lists.

`json`: a list of messages, or an object with a `messages` list. `jsonl`: one
message object per line (blank lines skipped). A message is an object with
- `speaker` or `role` (string; `speaker` wins when both are present),
- `text` or `content` (string; `text` wins),
- optional `timestamp`: an ISO 8601 string (other absolute date strings are
  read too), or epoch seconds as a number or digit string (milliseconds when
  at or above 1e11); stored as naive UTC,
- optional `id` (non-empty string or integer; unique in the file),
- optional `session` (string or integer).
Other fields are ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn

from ._base import TurnCollector, fail, kind_of, preview
from .dates import from_epoch, parse_when

_EPOCH_STRING = re.compile(r"-?\d+(?:\.\d+)?")
_TIMESTAMP_HINT = "use ISO 8601 like 2023-05-08T13:56:00Z or epoch seconds"


def load_json(text: str, name: str, line: int | None = None) -> Any:
    """Parse JSON (a whole file, or line `line` of one), naming line and column on failure."""
    at = f"line {line}" if line is not None else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        row = line if line is not None else exc.lineno
        fail(name, f"line {row}, column {exc.colno}", _decode_problem(exc, text))
    except RecursionError:
        fail(name, at, "the JSON is nested too deeply to read")
    except ValueError:  # Python refuses integers of more than 4,300 digits
        fail(name, at, "invalid JSON: a number has too many digits to read")


def _decode_problem(exc: json.JSONDecodeError, text: str) -> str:
    if exc.msg.startswith("Unterminated string"):
        # json reports where the string started; it ran to the end of the text.
        return "a string that starts here is never closed: the JSON ends too early — is the file truncated?"
    if exc.pos >= len(text.rstrip()):
        return f"{exc.msg}: the JSON ends too early — is the file truncated?"
    return f"invalid JSON: {exc.msg}"


def _first(obj: dict[str, Any], keys: tuple[str, str]) -> tuple[str, Any] | None:
    for key in keys:
        if key in obj:
            return key, obj[key]
    return None


def _read_message(
    obj: Any,
    where: str,
    name: str,
    collector: TurnCollector,
) -> None:
    def bad(message: str) -> NoReturn:
        fail(name, where, message)

    if not isinstance(obj, dict):
        bad(f"expected a message object with 'speaker' and 'text', got {kind_of(obj)}")
    speaker = _first(obj, ("speaker", "role"))
    if speaker is None:
        bad("missing 'speaker' or 'role'")
    if not isinstance(speaker[1], str) or not speaker[1].strip():
        bad(f"'{speaker[0]}' must be a non-empty string, got {kind_of(speaker[1])}")
    text = _first(obj, ("text", "content"))
    if text is None:
        bad("missing 'text' or 'content'")
    if not isinstance(text[1], str):
        bad(f"'{text[0]}' must be a string, got {kind_of(text[1])}")
    collector.add(
        speaker=speaker[1].strip(),
        text=text[1],
        where=where,
        given_id=_read_id(obj.get("id"), bad),
        timestamp=_read_timestamp(obj.get("timestamp"), bad),
        session=_read_session(obj.get("session"), bad),
    )


def _read_id(value: Any, bad: Callable[[str], NoReturn]) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    bad(f"'id' must be a non-empty string or an integer, got {kind_of(value)}")


def _read_session(value: Any, bad: Callable[[str], NoReturn]) -> str:
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return value
    bad(f"'session' must be a string or an integer, got {kind_of(value)}")


def _read_timestamp(value: Any, bad: Callable[[str], NoReturn]) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        bad(f"'timestamp' must be a date string or epoch seconds, got {kind_of(value)}")
    try:
        if isinstance(value, str):
            if _EPOCH_STRING.fullmatch(value.strip()):
                return from_epoch(float(value))
            when = parse_when(value)
            if when is None:
                raise ValueError(f"{preview(value)} is not a date")
            return when
        return from_epoch(float(value))
    except OverflowError:
        bad(f"cannot read 'timestamp': the number is out of range for a date; {_TIMESTAMP_HINT}")
    except ValueError as exc:
        bad(f"cannot read 'timestamp': {exc}; {_TIMESTAMP_HINT}")


def messages_from_json(value: Any, name: str) -> TurnCollector:
    """A parsed JSON value holding a message list -> its turns."""
    base = ""
    if isinstance(value, dict):
        if "messages" not in value:
            hint = " (it looks like LoCoMo: use format 'locomo')" if "conversation" in value else ""
            fail(name, "", f"expected a list of messages or an object with 'messages'{hint}")
        value, base = value["messages"], "messages"
        if not isinstance(value, list):
            fail(name, base, f"'messages' must be a list, got {kind_of(value)}")
    elif not isinstance(value, list):
        fail(name, "", f"expected a list of messages, got {kind_of(value)}")
    elif value and isinstance(value[0], dict) and "conversation" in value[0]:
        fail(name, "[0]", "this looks like LoCoMo, not a message list: use format 'locomo'")
    collector = TurnCollector(name)
    for i, obj in enumerate(value):
        _read_message(obj, f"{base}[{i}]", name, collector)
    return collector


def messages_from_jsonl(text: str, name: str) -> TurnCollector:
    collector = TurnCollector(name)
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        obj = load_json(line, name, number)
        _read_message(obj, f"line {number}", name, collector)
    return collector
