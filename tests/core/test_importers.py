"""Conversation importers: every format on a good file, the real LoCoMo dev split,
stable ids, and the malformed inputs a person will actually feed them."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.retain import importers
from core.retain.importers import (
    FORMATS,
    MAX_TURN_CHARS,
    detect_format,
    load_document,
    load_documents,
    parse_document,
    parse_documents,
)
from core.types import Document, InvalidInputError
from tests.shared_data import LOCOMO_DEV

DATA = Path(__file__).parent / "data" / "importers"
BIG = 20 * 1024 * 1024  # a 20 MB single message


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_one(path: Path, format: str = "auto") -> Document:
    docs = load_documents(path, format)
    assert len(docs) == 1
    return docs[0]


def rejects(path: Path, *fragments: str, format: str = "auto") -> str:
    """Loading `path` fails with an InvalidInputError whose message holds every fragment."""
    with pytest.raises(InvalidInputError) as caught:
        load_documents(path, format)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


# --- good files -----------------------------------------------------------------------


def test_plain_text_speakers_continuations_sessions_and_dates():
    path = DATA / "chat.txt"
    doc = load_one(path)
    h = sha(path)
    assert doc.format == "txt"
    assert doc.title == "chat"
    assert doc.content_hash == h and doc.id == h[:16]
    assert doc.source_path == str(path.resolve())
    assert [t.speaker for t in doc.turns] == ["Alice", "Bob", "Alice", "Bob", "Alice", "Bob"]
    assert doc.turns[1].text == (
        "Almost. I still need the chapter on Yosemite.\nIt is taking longer than I hoped."
    )
    # Only the first colon separates the speaker; a URL's colon never does.
    assert doc.turns[2].text == "Take your time: good guides need it."
    assert doc.turns[4].text == "Congratulations! See https://example.org for the launch."
    assert [t.id for t in doc.turns] == [f"{h[:8]}-{i}" for i in range(6)]
    assert [t.index for t in doc.turns] == list(range(6))
    assert [t.session for t in doc.turns] == [
        "session_1",
        "session_1",
        "session_1",
        "session_2",
        "session_3",
        "session_4",
    ]
    assert [t.timestamp for t in doc.turns] == [
        datetime(2023, 5, 8),
        datetime(2023, 5, 8),
        datetime(2023, 5, 8),
        datetime(2023, 5, 9, 13, 56),
        datetime(2023, 5, 10),
        # "Session 4" then "Date: …" with no turn between: one session with that date.
        datetime(2023, 5, 12, 13, 56),
    ]
    assert doc.speakers == ("Alice", "Bob")


def test_plain_text_without_headers_has_no_session_or_timestamp():
    (doc,) = parse_documents(b"Alice: hi\nBob: hello\n  and more\n", "txt", "x.txt")
    assert [(t.speaker, t.text, t.session, t.timestamp) for t in doc.turns] == [
        ("Alice", "hi", "", None),
        ("Bob", "hello\nand more", "", None),
    ]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("## 2023-05-08 13:56", datetime(2023, 5, 8, 13, 56)),
        ("# 8 May 2023", datetime(2023, 5, 8)),
        ("Session 2 — 8 May 2023", datetime(2023, 5, 8)),
        ("Session 2 - May 8th, 2023 1:56pm", datetime(2023, 5, 8, 13, 56)),
        ("Session 2 (2023-05-08)", datetime(2023, 5, 8)),
        ("[2023-05-08]", datetime(2023, 5, 8)),
        ("[Monday, 8 May 2023 10:30]", datetime(2023, 5, 8, 10, 30)),
        ("Date: 8 May 2023 1:56 pm", datetime(2023, 5, 8, 13, 56)),
        ("date: 1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("## 2023-05-08T15:56:00+02:00", datetime(2023, 5, 8, 13, 56)),
    ],
)
def test_plain_text_date_headers(header: str, expected: datetime):
    (doc,) = parse_documents(f"{header}\nAlice: hi\n".encode(), "txt", "x.txt")
    assert doc.turns[0].timestamp == expected
    assert doc.turns[0].timestamp.tzinfo is None
    assert doc.turns[0].session == ("session_2" if "Session 2" in header else "session_1")


def test_plain_text_prose_that_looks_like_a_header_is_still_a_turn():
    text = b"Alice: hi\nSession 2 went well, I think\n# not a date heading\nBob: ok\n"
    (doc,) = parse_documents(text, "txt", "x.txt")
    assert doc.turns[0].text == "hi\nSession 2 went well, I think"
    assert [t.session for t in doc.turns] == ["", ""]


def test_markdown_speaker_styles_and_dated_headings():
    path = DATA / "chat.md"
    doc = load_one(path)
    h = sha(path)
    assert doc.format == "md" and doc.title == "chat" and doc.id == h[:16]
    assert [(t.speaker, t.text) for t in doc.turns] == [
        ("Alice", "Hi Bob! Did you finish the hiking guide?"),
        ("Bob", "Almost. I still need the chapter on Yosemite.\nIt is taking longer than I hoped."),
        ("Bob", "Finished it this morning!"),
        ("Alice", "Congratulations!"),
        ("Alice", "See you soon."),
    ]
    assert [t.session for t in doc.turns] == [
        "session_1",
        "session_1",
        "session_2",
        "session_2",
        "session_3",
    ]
    assert [t.timestamp for t in doc.turns] == [
        datetime(2023, 5, 8),
        datetime(2023, 5, 8),
        datetime(2023, 5, 9, 13, 56),
        datetime(2023, 5, 9, 13, 56),
        datetime(2023, 5, 10),
    ]
    assert [t.id for t in doc.turns] == [f"{h[:8]}-{i}" for i in range(5)]


def test_json_messages_object_with_roles_ids_and_timestamps():
    path = DATA / "chat.json"
    doc = load_one(path)
    h = sha(path)
    assert doc.format == "json" and doc.title == "chat" and doc.id == h[:16]
    assert [t.speaker for t in doc.turns] == ["user", "assistant", "Alice", "Alice"]
    assert doc.turns[0].text == "I moved to Lisbon last month."
    assert [t.id for t in doc.turns] == ["m1", "m2", f"{h[:8]}-2", f"{h[:8]}-3"]
    assert [t.timestamp for t in doc.turns] == [
        datetime(2023, 5, 8, 13, 56),
        datetime(2023, 5, 8, 13, 57),  # +02:00 converted to UTC
        datetime(2023, 5, 8, 16, 0),  # epoch seconds
        None,
    ]
    assert doc.speakers == ("user", "assistant", "Alice")


def test_json_plain_list_of_messages():
    data = json.dumps([{"speaker": "A", "text": "one"}, {"role": "B", "content": "two"}])
    (doc,) = parse_documents(data.encode(), "json", "list.json")
    assert [(t.speaker, t.text) for t in doc.turns] == [("A", "one"), ("B", "two")]


def test_jsonl_messages():
    path = DATA / "chat.jsonl"
    doc = load_one(path)
    h = sha(path)
    assert doc.format == "jsonl" and doc.title == "chat"
    assert [(t.speaker, t.text) for t in doc.turns] == [
        ("Alice", "I adopted a cat named Miso."),
        ("Bob", "Miso is a great name!"),
        ("Alice", "She sleeps all day."),
    ]
    assert [t.id for t in doc.turns] == ["a1", f"{h[:8]}-1", f"{h[:8]}-2"]
    assert [t.timestamp for t in doc.turns] == [
        datetime(2023, 5, 8, 13, 56),
        datetime(2023, 5, 8, 13, 57),
        datetime(2023, 5, 8, 13, 58),  # epoch milliseconds
    ]
    assert [t.session for t in doc.turns] == ["", "1", ""]


def test_locomo_sessions_in_numeric_order_with_dates_ids_and_images():
    docs = load_documents(DATA / "locomo-mini.json")
    assert [d.title for d in docs] == ["mini-1", "mini-2"]
    assert all(d.format == "locomo" for d in docs)
    assert len({d.id for d in docs}) == 2
    first = docs[0]
    assert first.speakers == ("Caroline", "Melanie")
    assert [t.id for t in first.turns] == ["D1:1", "D1:2", "D2:1", "D9:1", "D10:1"]
    assert [t.session for t in first.turns] == [
        "session_1",
        "session_1",
        "session_2",
        "session_9",
        "session_10",
    ]
    assert [t.timestamp for t in first.turns] == [
        datetime(2023, 5, 8, 13, 56),
        datetime(2023, 5, 8, 13, 56),
        datetime(2023, 6, 9, 19, 55),
        datetime(2023, 6, 13, 0, 9),
        datetime(2023, 6, 19, 10, 4),
    ]
    assert first.turns[1].text == "Look at this mural! [image: a photo of a painted wall]"
    assert first.turns[3].text == "Painting again."  # null caption: no suffix
    assert first.turns[0].speaker == "Melanie"
    assert docs[1].speakers == ("Jon", "Gina")


def test_locomo_single_sample_object_and_same_id_in_any_file(tmp_path: Path):
    samples = json.loads((DATA / "locomo-mini.json").read_text())
    single = tmp_path / "one.json"
    single.write_text(json.dumps(samples[1], indent=4))
    (doc,) = load_documents(single)
    assert doc.format == "locomo" and doc.title == "mini-2"
    # The conversation's id does not depend on the file it came in.
    assert doc.id == load_documents(DATA / "locomo-mini.json")[1].id
    assert load_document(single).id == doc.id


def test_locomo_dev_split():
    raw = json.loads(LOCOMO_DEV.read_text(encoding="utf-8"))
    docs = load_documents(LOCOMO_DEV)
    assert [d.title for d in docs] == ["conv-26", "conv-30", "conv-41", "conv-42", "conv-43"]
    assert len({d.id for d in docs}) == 5
    for doc, sample in zip(docs, raw, strict=True):
        conv = sample["conversation"]
        numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
        raw_turns = [t for n in numbers for t in conv[f"session_{n}"]]
        assert 300 <= len(doc.turns) <= 800
        assert len(doc.turns) == len(raw_turns)
        assert [t.id for t in doc.turns] == [t["dia_id"] for t in raw_turns]
        assert doc.speakers == (conv["speaker_a"], conv["speaker_b"])
        assert {t.speaker for t in doc.turns} == set(doc.speakers)
        # Sessions come in numeric order, each turn dated by its session; LoCoMo's
        # sessions are chronological, so the dates rise with the session number.
        session_numbers = [int(t.session.removeprefix("session_")) for t in doc.turns]
        assert session_numbers == sorted(session_numbers)
        assert session_numbers[-1] == numbers[-1] >= 19
        dates = [t.timestamp for t in doc.turns]
        assert None not in dates and dates == sorted(dates)
        assert all(d.tzinfo is None for d in dates)
        for t in doc.turns:
            assert t.id.startswith(f"D{t.session.removeprefix('session_')}:")
        captioned = [t for t in raw_turns if t.get("blip_caption")]
        with_image = [t for t in doc.turns if "[image: " in t.text]
        assert len(with_image) == len(captioned) > 0
    conv26 = docs[0]
    assert conv26.turns[0].timestamp == datetime(2023, 5, 8, 13, 56)  # "1:56 pm on 8 May, 2023"
    by_id = {t.id: t for t in conv26.turns}
    assert by_id["D1:5"].text.endswith(
        " [image: a photo of a dog walking past a wall with a painting of a woman]"
    )
    # conv-26 has 35 date keys for 19 sessions: the extra dates are ignored.
    assert {t.session for t in conv26.turns} == {f"session_{n}" for n in range(1, 20)}


# --- stable ids, detection ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["chat.txt", "chat.md", "chat.json", "chat.jsonl"])
def test_ids_are_stable_across_loads_and_follow_the_content(tmp_path: Path, name: str):
    copy = tmp_path / name
    shutil.copy(DATA / name, copy)
    first, again, moved = load_one(DATA / name), load_one(DATA / name), load_one(copy)
    assert first.id == again.id == moved.id
    assert [t.id for t in first.turns] == [t.id for t in again.turns] == [t.id for t in moved.turns]
    copy.write_bytes(copy.read_bytes() + b"\n")  # any change to the bytes is a new document
    assert load_one(copy).id != first.id


def test_locomo_ids_are_stable_across_loads():
    a, b = load_documents(LOCOMO_DEV), load_documents(LOCOMO_DEV)
    assert [(d.id, [t.id for t in d.turns]) for d in a] == [
        (d.id, [t.id for t in d.turns]) for d in b
    ]


@pytest.mark.parametrize(
    ("name", "head", "expected"),
    [
        ("a.txt", b"{}", "txt"),
        ("a.md", b"Alice: hi", "md"),
        ("a.markdown", b"", "md"),
        ("a.jsonl", b"[]", "jsonl"),
        ("a.ndjson", b"", "jsonl"),
        ("a.json", b'[{"speaker": "A", "text": "x"}]', "json"),
        ("a.json", b'{"speaker": "A", "text": "x"}\n{"speaker": "B", "text": "y"}\n', "jsonl"),
        ("a.json", b'[{"sample_id": "c", "conversation": {"speaker_a": "A"', "locomo"),
        ("a.log", b'\xef\xbb\xbf{"messages": []}', "json"),
        ("a.log", b"# Chat\n**Alice:** hi\n", "md"),
        ("a.log", b"- Alice: hi\n", "md"),
        ("a", b"Alice: hi\nBob: yo\n", "txt"),
    ],
)
def test_detect_format(name: str, head: bytes, expected: str):
    assert detect_format(Path(name), head) == expected


def test_auto_detects_the_real_files():
    assert load_documents(LOCOMO_DEV)[0].format == "locomo"
    for name, fmt in [("chat.txt", "txt"), ("chat.md", "md"), ("chat.json", "json")]:
        assert load_one(DATA / name).format == fmt
    assert load_one(DATA / "chat.jsonl").format == "jsonl"
    # Content, not only the extension, decides for .json.
    jsonl_as_json = (DATA / "chat.jsonl").read_bytes()
    assert parse_document(jsonl_as_json, "auto", "x.json").format == "jsonl"


def test_utf8_bom_is_accepted():
    for name in ("chat.txt", "chat.json", "chat.jsonl", "chat.md"):
        data = (DATA / name).read_bytes()
        plain = parse_document(data, "auto", name)
        with_bom = parse_document(b"\xef\xbb\xbf" + data, "auto", name)
        assert [(t.speaker, t.text, t.timestamp) for t in with_bom.turns] == [
            (t.speaker, t.text, t.timestamp) for t in plain.turns
        ]


def test_load_document_refuses_a_file_with_several_conversations():
    with pytest.raises(InvalidInputError, match="holds 2 conversations"):
        load_document(DATA / "locomo-mini.json")


# --- malformed input -----------------------------------------------------------------------


def _good_bytes(fmt: str) -> bytes:
    name = "locomo-mini.json" if fmt == "locomo" else f"chat.{fmt}"
    return (DATA / name).read_bytes()


@pytest.mark.parametrize("fmt", FORMATS)
def test_invalid_utf8_names_line_and_byte(tmp_path: Path, fmt: str):
    lines = _good_bytes(fmt).split(b"\n")
    lines[2] = lines[2][:5] + b"\xff" + lines[2][5:]
    bad = b"\n".join(lines)
    path = tmp_path / f"bad.{'json' if fmt == 'locomo' else fmt}"
    path.write_bytes(bad)
    offset = bad.index(b"\xff")
    rejects(
        path, "bad.", "line 3:", "not valid UTF-8", f"byte offset {offset}", "column 6", format=fmt
    )


def test_utf16_is_refused_with_a_hint(tmp_path: Path):
    path = tmp_path / "chat.txt"
    path.write_bytes("Alice: hi\n".encode("utf-16"))
    rejects(path, "chat.txt", "UTF-16", "save it as UTF-8")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("content", [b"", b" \n\n\t\n", b"\xef\xbb\xbf"])
def test_empty_file_has_no_turns(tmp_path: Path, fmt: str, content: bytes):
    path = tmp_path / "empty.dat"
    path.write_bytes(content)
    rejects(path, "empty.dat", "no turns found", format=fmt)


@pytest.mark.parametrize(
    ("fmt", "content"),
    [
        ("json", b"[]"),
        ("json", b'{"messages": []}'),
        ("json", b'[{"speaker": "A", "text": "   "}]'),
        ("locomo", b"[]"),
        ("locomo", b'[{"sample_id": "c1", "conversation": {"speaker_a": "A", "session_1": []}}]'),
        ("md", b"# Title\n\n## Notes\n---\n"),
        ("txt", b"Session 1 - 8 May 2023\n"),
    ],
)
def test_files_with_structure_but_no_turns(fmt: str, content: bytes):
    with pytest.raises(InvalidInputError, match="no turns found"):
        parse_documents(content, fmt, "x")


def test_truncated_json_names_line_and_column(tmp_path: Path):
    data = _good_bytes("json")
    path = tmp_path / "chat.json"
    path.write_bytes(data[: data.index(b'"m2"') + 10])
    rejects(path, "chat.json line 4, column", "truncated")
    path.write_bytes(b'[{"speaker": "A" "text": "x"}]')
    rejects(path, "chat.json line 1, column 18", "Expecting ',' delimiter")


def test_truncated_locomo_names_line_and_column(tmp_path: Path):
    path = tmp_path / "locomo.json"
    data = LOCOMO_DEV.read_bytes()
    cut = data[: len(data) // 2]
    path.write_bytes(cut)
    line = cut.count(b"\n") + 1
    for fmt in ("auto", "locomo"):
        rejects(path, f"locomo.json line {line}, column", "truncated", format=fmt)


def test_truncated_jsonl_names_the_line(tmp_path: Path):
    path = tmp_path / "chat.jsonl"
    data = _good_bytes("jsonl")
    path.write_bytes(data[:-20])
    rejects(path, "chat.jsonl line 4, column", "truncated")


def _big_file(tmp_path: Path, fmt: str) -> tuple[Path, str]:
    """A file whose second turn is one 20 MB message, and where the error must point."""
    big = "x" * BIG
    if fmt == "txt":
        body, where = f"Alice: hi\nBob: {big}\n", "line 2:"
    elif fmt == "md":
        body, where = f"## 8 May 2023\n**Alice:** hi\n**Bob:** {big}\n", "line 3:"
    elif fmt == "json":
        body = json.dumps(
            {"messages": [{"speaker": "A", "text": "hi"}, {"speaker": "B", "text": big}]}
        )
        where = "messages[1]:"
    elif fmt == "jsonl":
        body = (
            json.dumps({"speaker": "A", "text": "hi"})
            + "\n"
            + json.dumps({"speaker": "B", "text": big})
        )
        where = "line 2:"
    else:
        turns = [
            {"speaker": "A", "dia_id": "D1:1", "text": "hi"},
            {"speaker": "B", "dia_id": "D1:2", "text": big},
        ]
        body = json.dumps([{"sample_id": "c", "conversation": {"session_1": turns}}])
        where = "[0].conversation.session_1[1]:"
    path = tmp_path / f"big.{'json' if fmt == 'locomo' else fmt}"
    path.write_text(body, encoding="utf-8")
    return path, where


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_20mb_single_message_is_refused(tmp_path: Path, fmt: str):
    path, where = _big_file(tmp_path, fmt)
    rejects(path, where, f"{MAX_TURN_CHARS:,}", "split it", format=fmt)


def test_a_turn_that_grows_past_the_limit_by_continuation_lines_is_refused():
    line = "y" * 999
    lines = ["Alice: hi"] + [line] * (MAX_TURN_CHARS // 1000 + 5)
    with pytest.raises(InvalidInputError) as caught:
        parse_documents("\n".join(lines).encode(), "txt", "long.txt")
    message = str(caught.value)
    assert "long.txt line 101:" in message and "starts on line 1" in message


def test_a_message_at_the_limit_is_accepted():
    data = json.dumps([{"speaker": "A", "text": "z" * MAX_TURN_CHARS}]).encode()
    assert len(parse_document(data, "json").turns[0].text) == MAX_TURN_CHARS


def test_file_over_the_size_limit_is_refused_before_reading(tmp_path: Path):
    path = tmp_path / "huge.txt"
    with path.open("wb") as f:  # sparse: no 200 MB written to disk
        f.truncate(importers.MAX_FILE_BYTES + 1)
    rejects(path, "huge.txt", "200 MB", "split it")


def test_parse_documents_refuses_too_many_bytes(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(importers, "MAX_FILE_BYTES", 10)
    with pytest.raises(InvalidInputError, match="limit is"):
        parse_documents(b"Alice: hello there\n", "txt", "x.txt")


def test_unknown_format_name():
    for call in (
        lambda: parse_documents(b"Alice: hi", "xml", "x.xml"),
        lambda: load_documents(DATA / "chat.txt", "csv"),
    ):
        with pytest.raises(InvalidInputError) as caught:
            call()
        assert "unknown format" in str(caught.value)
        assert "txt, json, jsonl, md, locomo" in str(caught.value)


def test_missing_file_and_folder(tmp_path: Path):
    with pytest.raises(InvalidInputError, match="no such file"):
        load_documents(tmp_path / "nope.txt")
    with pytest.raises(InvalidInputError, match="is a folder"):
        load_documents(tmp_path)


def test_jsonl_missing_text_names_the_line(tmp_path: Path):
    path = tmp_path / "chat.jsonl"
    rows = [json.dumps({"speaker": "A", "text": f"m{i}"}) for i in range(6)]
    rows.append(json.dumps({"speaker": "A", "body": "oops"}))
    path.write_text("\n".join(rows) + "\n")
    assert rejects(path) == "chat.jsonl line 7: missing 'text' or 'content'"


@pytest.mark.parametrize(
    ("messages", "fragments"),
    [
        (
            [{"speaker": 7, "text": "x"}],
            ["[0]:", "'speaker' must be a non-empty string, got a number"],
        ),
        ([{"text": "x"}], ["[0]:", "missing 'speaker' or 'role'"]),
        ([{"speaker": "A", "text": ["x"]}], ["[0]:", "'text' must be a string, got a list"]),
        ([{"speaker": "A", "content": None}], ["[0]:", "'content' must be a string, got null"]),
        ([{"speaker": "A", "text": "x", "timestamp": True}], ["[0]:", "'timestamp'"]),
        (
            [{"speaker": "A", "text": "x", "timestamp": "soonish"}],
            ["[0]:", "cannot read 'timestamp'"],
        ),
        ([{"speaker": "A", "text": "x", "timestamp": 1e300}], ["[0]:", "out of range"]),
        ([{"speaker": "A", "text": "x", "id": 1.5}], ["[0]:", "'id' must be"]),
        (["hello"], ["[0]:", "expected a message object", "got a string"]),
        ({"messages": {"a": 1}}, ["messages:", "must be a list"]),
        ({"chat": []}, ["expected a list of messages or an object with 'messages'"]),
        (42, ["expected a list of messages, got a number"]),
    ],
)
def test_json_wrong_types_name_the_field(messages: object, fragments: list[str]):
    if isinstance(messages, list) and messages and isinstance(messages[0], dict):
        messages = [{"speaker": "Z", "text": "fine"}, *messages]
        fragments = [f.replace("[0]", "[1]") for f in fragments]
    with pytest.raises(InvalidInputError) as caught:
        parse_documents(json.dumps(messages).encode(), "json", "chat.json")
    message = str(caught.value)
    assert message.startswith("chat.json")
    for fragment in fragments:
        assert fragment in message


def test_jsonl_line_that_is_not_an_object(tmp_path: Path):
    path = tmp_path / "chat.jsonl"
    path.write_text('{"speaker": "A", "text": "x"}\n[1, 2]\n')
    rejects(path, "chat.jsonl line 2:", "got a list")


def test_duplicate_ids_name_both_places():
    rows = [{"id": "m1", "speaker": "A", "text": "x"}, {"id": "m2", "speaker": "B", "text": "y"}]
    rows.append({"id": "m1", "speaker": "A", "text": "z"})
    with pytest.raises(InvalidInputError) as caught:
        parse_documents(json.dumps({"messages": rows}).encode(), "json", "chat.json")
    assert str(caught.value) == (
        "chat.json: messages[2]: id 'm1' is already used by messages[0]; turn ids must be unique"
    )
    jsonl = "\n".join(json.dumps(r) for r in rows).encode()
    with pytest.raises(InvalidInputError) as caught:
        parse_documents(jsonl, "jsonl", "chat.jsonl")
    assert "chat.jsonl line 3: id 'm1' is already used by line 1" in str(caught.value)


def test_deeply_nested_json_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="nested too deeply"):
        parse_documents(b"[" * 100_000 + b"]" * 100_000, "json", "deep.json")


def test_json_format_on_a_locomo_file_says_so():
    with pytest.raises(InvalidInputError, match="use format 'locomo'"):
        parse_documents(_good_bytes("locomo"), "json", "locomo-mini.json")


def _locomo(conversation: dict, sample_id: str = "c1") -> bytes:
    return json.dumps([{"sample_id": sample_id, "conversation": conversation}]).encode()


@pytest.mark.parametrize(
    ("data", "fragments"),
    [
        (
            _locomo({"session_1": {"speaker": "A"}}),
            ["[0].conversation.session_1:", "must be a list"],
        ),
        (
            _locomo(
                {"session_1_date_time": "someday", "session_1": [{"speaker": "A", "text": "x"}]}
            ),
            ["[0].conversation.session_1_date_time:", "cannot read 'someday'"],
        ),
        (
            _locomo({"session_1": [{"speaker": "A"}]}),
            ["[0].conversation.session_1[0]:", "missing 'text'"],
        ),
        (
            _locomo({"session_1": [{"speaker": "A", "text": 3}]}),
            ["[0].conversation.session_1[0].text:", "must be a string, got a number"],
        ),
        (
            _locomo({"session_1": [{"speaker": None, "text": "x"}]}),
            ["[0].conversation.session_1[0]:", "missing 'speaker'"],
        ),
        (
            _locomo({"speaker_a": 5, "session_1": [{"speaker": "A", "text": "x"}]}),
            ["[0].conversation.speaker_a:", "must be a non-empty string"],
        ),
        (
            _locomo(
                {
                    "session_1": [{"speaker": "A", "text": "x", "dia_id": "D1:1"}],
                    "session_2": [{"speaker": "B", "text": "y", "dia_id": "D1:1"}],
                }
            ),
            [
                "[0].conversation.session_2[0]:",
                "id 'D1:1' is already used by [0].conversation.session_1[0]",
            ],
        ),
        (json.dumps([{"sample_id": "c1"}]).encode(), ["[0]:", "missing 'conversation'"]),
        (json.dumps(["x"]).encode(), ["[0]:", "expected a sample object"]),
        (json.dumps("x").encode(), ["expected a list of LoCoMo samples"]),
    ],
)
def test_locomo_wrong_types_name_the_json_path(data: bytes, fragments: list[str]):
    with pytest.raises(InvalidInputError) as caught:
        parse_documents(data, "locomo", "conv.json")
    message = str(caught.value)
    assert message.startswith("conv.json: ")
    for fragment in fragments:
        assert fragment in message


def test_locomo_duplicate_conversation_is_refused():
    sample = {"sample_id": "c1", "conversation": {"session_1": [{"speaker": "A", "text": "x"}]}}
    with pytest.raises(InvalidInputError, match=r"\[1\]: conversation 'c1' repeats \[0\]"):
        parse_documents(json.dumps([sample, sample]).encode(), "locomo", "conv.json")


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (b"Hello there\nAlice: hi\n", ["x.txt line 1:", "expected a turn like 'Name: text'"]),
        (b"Alice: hi\nDate: next week-ish\n", ["x.txt line 2:", "cannot read the date"]),
    ],
)
def test_plain_text_errors_name_the_line(text: bytes, fragments: list[str]):
    with pytest.raises(InvalidInputError) as caught:
        parse_documents(text, "txt", "x.txt")
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_markdown_text_before_the_first_turn_names_the_line():
    with pytest.raises(InvalidInputError, match=r"x\.md line 3: expected a turn"):
        parse_documents(b"# Title\n\nSome preamble\n**Alice:** hi\n", "md", "x.md")


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        ("## 8 May 2023 ##", datetime(2023, 5, 8)),
        ("# Chat with Bob — May 8, 2023", datetime(2023, 5, 8)),
        ("### Session 4: 2023-05-08 09:15", datetime(2023, 5, 8, 9, 15)),
        ("## [2023-05-08]", datetime(2023, 5, 8)),
    ],
)
def test_markdown_dated_headings(heading: str, expected: datetime):
    (doc,) = parse_documents(f"{heading}\n- **Alice:** hi\n".encode(), "md", "x.md")
    assert doc.turns[0].timestamp == expected
    assert doc.turns[0].session == ("session_4" if "Session 4" in heading else "session_1")


# --- robustness ----------------------------------------------------------------------------

_PATHOLOGICAL = [
    "session" + " " * 50_000 + "x",
    "Session #" + " " * 50_000 + "3",
    "## a" + " " * 50_000 + "b",
    "## x " + "# " * 25_000,
    "**A" + " " * 50_000 + "x",
    "- " + " " * 50_000 + "x",
    "<!--" + "-" * 50_000 + "x",
    "Bob" + " " * 50_000 + ": x",
]


@pytest.mark.parametrize("fmt", ["txt", "md"])
@pytest.mark.parametrize("line", _PATHOLOGICAL, ids=range(len(_PATHOLOGICAL)))
def test_long_whitespace_runs_do_not_make_parsing_quadratic(fmt: str, line: str):
    # A quadratic regex would take minutes here; pytest-timeout turns that into a failure.
    data = f"Alice: hi\n{line}\n".encode()
    try:
        (doc,) = parse_documents(data, fmt, "x")
    except InvalidInputError:
        return
    assert doc.turns[0].speaker == "Alice"


def test_format_detection_scans_a_blank_head_in_linear_time():
    assert detect_format(Path("x"), b"x\n" + b"\n" * 60_000) == "txt"
    assert detect_format(Path("x"), b"x\n" + b" \t" * 30_000) == "txt"


_ALPHABET = 'Alice:Bob **#-[]{}"\\,\n 2023-05-08 May pm session Date 1:5 éß\t'


@given(text=st.text(alphabet=_ALPHABET, max_size=200), fmt=st.sampled_from(FORMATS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.slow
def test_any_input_gives_documents_or_a_clear_error(text: str, fmt: str):
    try:
        docs = parse_documents(text.encode(), fmt, "fuzz.dat")
    except InvalidInputError as exc:
        assert str(exc).startswith("fuzz.dat")
        return
    for doc in docs:
        assert doc.turns
        assert len({t.id for t in doc.turns}) == len(doc.turns)
        assert all(t.text.strip() and t.speaker for t in doc.turns)


@pytest.mark.parametrize(
    ("data", "fmt", "fragment"),
    [
        (
            b'[{"speaker": "A", "text": "x", "timestamp": 1' + b"0" * 400 + b"}]",
            "json",
            "out of range",
        ),
        (b"[" + b"1" * 5000 + b"]", "json", "too many digits"),
        (b"[" + b"1" * 5000 + b"]", "auto", "too many digits"),
        (b'{"speaker": "A", "text": "x"}\n[' + b"1" * 5000 + b"]", "jsonl", "line 2:"),
        (
            b'{"speaker": "A", "text": "x"}\n' + b"[" * 100_000,
            "jsonl",
            "line 2: the JSON is nested",
        ),
    ],
)
def test_json_values_python_cannot_hold_are_clear_errors(data: bytes, fmt: str, fragment: str):
    with pytest.raises(InvalidInputError, match=re.escape(fragment)):
        parse_documents(data, fmt, "f.json")
