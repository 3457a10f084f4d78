"""LoCoMo conversations (Maharana et al., ACL 2024): one Document per sample.

A file is a list of samples or one sample object. Each sample has
`conversation` with `speaker_a`, `speaker_b`, lists `session_N` of turns
`{speaker, dia_id, text, img_url?, blip_caption?, query?}` and strings
`session_N_date_time` like "1:56 pm on 8 May, 2023". Sessions are taken in
numeric order (session_10 after session_9); a date key with no session is
ignored, a session with no date key has undated turns. A turn's id is its
`dia_id`; an image turn's text gets ` [image: <blip_caption>]` (or ` [image]`
with no caption). The document title is `sample_id`.

Each conversation gets its own content hash: sha256 of its `sample_id` and
`conversation` as canonical JSON (sorted keys, compact, UTF-8). So a
conversation keeps its document id whichever file it comes in, and the
conversations of one file have different ids.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import PurePath
from typing import Any

from core.types import Document

from ._base import TurnCollector, fail, kind_of, preview, sha256_hex
from .dates import parse_when

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_KEY = re.compile(r"session_(\d+)_date_time")


def looks_like_locomo(value: Any) -> bool:
    first = value[0] if isinstance(value, list) and value else value
    return isinstance(first, dict) and isinstance(first.get("conversation"), dict)


def documents_from_locomo(value: Any, name: str, source_path: str) -> list[Document]:
    if isinstance(value, dict):
        samples, paths = [value], [""]
    elif isinstance(value, list):
        samples, paths = value, [f"[{i}]" for i in range(len(value))]
    else:
        fail(name, "", f"expected a list of LoCoMo samples, got {kind_of(value)}")
    if not samples:
        fail(name, "", "no turns found (the list of samples is empty)")
    documents: list[Document] = []
    seen: dict[str, str] = {}
    for i, (sample, path) in enumerate(zip(samples, paths, strict=True)):
        doc = _document(sample, path, i, name, source_path)
        if doc.id in seen:
            fail(name, path, f"conversation {doc.title!r} repeats {seen[doc.id]}")
        seen[doc.id] = path or "the sample"
        documents.append(doc)
    return documents


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _document(sample: Any, path: str, i: int, name: str, source_path: str) -> Document:
    if not isinstance(sample, dict):
        fail(name, path, f"expected a sample object with 'conversation', got {kind_of(sample)}")
    sample_id = sample.get("sample_id")
    if sample_id is not None and (
        isinstance(sample_id, bool) or not isinstance(sample_id, str | int)
    ):
        fail(name, _join(path, "sample_id"), f"must be a string, got {kind_of(sample_id)}")
    conversation = sample.get("conversation")
    cpath = _join(path, "conversation")
    if conversation is None:
        fail(name, path, "missing 'conversation'")
    if not isinstance(conversation, dict):
        fail(name, cpath, f"must be an object, got {kind_of(conversation)}")

    speakers: list[str] = []
    for key in ("speaker_a", "speaker_b"):
        who = conversation.get(key)
        if who is None:
            continue
        if not isinstance(who, str) or not who.strip():
            fail(name, _join(cpath, key), f"must be a non-empty string, got {kind_of(who)}")
        speakers.append(who.strip())

    sessions: dict[int, list[Any]] = {}
    dates: dict[int, Any] = {}
    for key, value in conversation.items():
        if m := _SESSION_KEY.fullmatch(key):
            if not isinstance(value, list):
                fail(name, _join(cpath, key), f"must be a list of turns, got {kind_of(value)}")
            sessions[int(m.group(1))] = value
        elif m := _DATE_KEY.fullmatch(key):
            dates[int(m.group(1))] = value

    collector = TurnCollector(name)
    for number in sorted(sessions):
        when = _session_date(dates.get(number), _join(cpath, f"session_{number}_date_time"), name)
        for j, turn in enumerate(sessions[number]):
            _turn(turn, f"{_join(cpath, f'session_{number}')}[{j}]", name, collector, when, number)

    title = str(sample_id) if sample_id is not None else f"{PurePath(name).stem}-{i + 1}"
    canonical = json.dumps(
        {"sample_id": sample_id, "conversation": conversation},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return collector.build(
        content_hash=sha256_hex(canonical.encode("utf-8")),
        title=title,
        source_path=source_path,
        format="locomo",
        speakers=tuple(speakers),
        where=f"{path} ({title})" if path else title,
    )


def _session_date(value: Any, path: str, name: str) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        fail(
            name, path, f"must be a date string like '1:56 pm on 8 May, 2023', got {kind_of(value)}"
        )
    when = parse_when(value)
    if when is None:
        fail(
            name,
            path,
            f"cannot read {preview(value)} as a date (expected like '1:56 pm on 8 May, 2023')",
        )
    return when


def _turn(
    turn: Any,
    path: str,
    name: str,
    collector: TurnCollector,
    when: datetime | None,
    session: int,
) -> None:
    if not isinstance(turn, dict):
        fail(name, path, f"expected a turn object, got {kind_of(turn)}")
    speaker = turn.get("speaker")
    if not isinstance(speaker, str) or not speaker.strip():
        problem = (
            "missing 'speaker'"
            if speaker is None
            else f"must be a non-empty string, got {kind_of(speaker)}"
        )
        fail(name, _join(path, "speaker") if speaker is not None else path, problem)
    if "text" not in turn:
        fail(name, path, "missing 'text'")
    text = turn["text"]
    if not isinstance(text, str):
        fail(name, _join(path, "text"), f"must be a string, got {kind_of(text)}")
    dia_id = turn.get("dia_id")
    if dia_id is not None and (not isinstance(dia_id, str) or not dia_id.strip()):
        fail(name, _join(path, "dia_id"), f"must be a non-empty string, got {kind_of(dia_id)}")
    caption = turn.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        fail(name, _join(path, "blip_caption"), f"must be a string, got {kind_of(caption)}")
    if caption and caption.strip():
        text = f"{text} [image: {caption.strip()}]".lstrip()
    elif turn.get("img_url"):
        text = f"{text} [image]".lstrip()
    collector.add(
        speaker=speaker.strip(),
        text=text,
        where=path,
        given_id=dia_id,
        timestamp=when,
        session=f"session_{session}",
    )
