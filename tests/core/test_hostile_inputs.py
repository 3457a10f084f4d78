"""The hostile-input corpus (tests/data/hostile) through the importers, the bank,
the language-model reader and the command line: every case ends in a clear
one-line refusal or in clean stored text, never a traceback (issue 18, items
8, 9, 10 and 12)."""

from __future__ import annotations

import os
import threading
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import Engine, InvalidInputError
from core.providers.llm import LanguageModel, LlmSettings, parse_json_reply
from core.retain.extract import Exchange, ExtractionError
from core.retain.importers import load_documents, parse_documents
from core.retain.llm_extract import LlmExtractor
from core.text import clean_name, has_surrogate, repair_strings
from core.types import Turn
from tests.data.hostile import make_corpus as corpus
from tests.fakes.ollama_server import Reply
from tests.support.curation import dump
from tests.support.embedders import HashEmbedder

BIDI_AND_CONTROLS = "\x00\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return corpus.build(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    with Engine(tmp_path_factory.mktemp("home"), embedder=HashEmbedder()) as engine:
        yield engine


@pytest.fixture(scope="module")
def bank(engine):
    bank = engine.create_bank("hostile")
    bank.ingest(
        parse_documents(b"Ann: I keep bees.\nBob: Since when?\n", "txt", "seed.txt"),
        mode="verbatim",
    )
    return bank


def _clean(text: str) -> bool:
    return "\x00" not in text and not has_surrogate(text)


@pytest.mark.parametrize("name", sorted(corpus.INGEST))
def test_ingest_corpus(files, bank, name):
    _, expect = corpus.INGEST[name]
    if "refused" in expect:
        with pytest.raises(InvalidInputError, match=expect["refused"]) as refusal:
            load_documents(files[name])
        assert "\n" not in str(refusal.value) and len(str(refusal.value)) < 400
        before = dump(bank)
        with pytest.raises(InvalidInputError):
            bank.ingest(files[name], mode="verbatim")
        assert dump(bank) == before
        return
    [document] = load_documents(files[name])
    assert len(document.turns) == expect["turns"]
    if "speakers" in expect:
        assert list(document.speakers) == expect["speakers"]
    for turn in document.turns:
        assert _clean(turn.text) and _clean(turn.speaker)
        assert not any(c in turn.speaker for c in BIDI_AND_CONTROLS)
        assert "\r" not in turn.text
    report = bank.ingest(files[name], mode="verbatim")
    assert not report.failures
    stored = (
        bank.store.reader()
        .execute("SELECT speaker, text FROM turns WHERE document_id = ?", [document.id])
        .fetchall()
    )
    assert len(stored) == expect["turns"]


def test_cr_only_lines_are_separate_turns_by_their_own_speakers(files):
    [document] = load_documents(files["cr-only.txt"])
    assert [(t.speaker, t.text) for t in document.turns] == [
        ("Ann", "I moved to Lisbon."),
        ("Bob", "When was that?"),
        ("Ann", "Last spring."),
    ]


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "fifo", "folder", "link-to-zero"])
def test_special_files_are_refused_without_reading(tmp_path, special):
    """Reading /dev/zero never ended (MemoryError after 26 s); a FIFO hung."""
    path = Path(special)
    if special == "fifo":
        path = tmp_path / "chat.txt"
        os.mkfifo(path)
    elif special == "folder":
        path = tmp_path / "chats"
        path.mkdir()
    elif special == "link-to-zero":
        path = tmp_path / "zero.txt"
        path.symlink_to("/dev/zero")
    if not path.exists():
        pytest.skip(f"{path} does not exist here")
    done: list[BaseException] = []

    def run() -> None:
        try:
            load_documents(path)
        except BaseException as error:  # noqa: BLE001 - handed to the test thread
            done.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    assert done, f"reading {special} did not return"
    assert isinstance(done[0], InvalidInputError), done[0]
    assert "regular file" in str(done[0]) or "folder" in str(done[0])


def test_size_limit_is_enforced_while_reading(tmp_path, monkeypatch):
    """The limit holds for what is read, not only for what stat() said."""
    from core.retain import importers

    monkeypatch.setattr(importers, "MAX_FILE_BYTES", 64)
    path = tmp_path / "chat.txt"
    path.write_bytes(b"Ann: " + b"x" * 100 + b"\n")
    with pytest.raises(InvalidInputError, match="limit"):
        load_documents(path)
    real_fstat = os.fstat

    class Shrunk:
        def __init__(self, st):
            self._st = st

        def __getattr__(self, name):
            return 10 if name == "st_size" else getattr(self._st, name)

    # A file that grows after stat(): the read itself stops at the limit.
    monkeypatch.setattr(os, "fstat", lambda fd: Shrunk(real_fstat(fd)))
    with pytest.raises(InvalidInputError, match="limit"):
        load_documents(path)


# -- language-model replies ---------------------------------------------------------


def _exchange() -> Exchange:
    when = datetime(2024, 5, 1, 10)
    return Exchange((Turn("t1", "Ann", "I met Zed and I like tea.", when, "s1", 0),), "s1")


@pytest.mark.parametrize("name", sorted(corpus.LLM_REPLIES))
def test_llm_reply_corpus(fake_ollama, name):
    text, expect = corpus.LLM_REPLIES[name]
    fake_ollama.script(Reply.text(text))
    lm = LanguageModel(LlmSettings(host=fake_ollama.url, model="qwen3:4b", retries=0))
    extractor = LlmExtractor(lm)
    try:
        if not expect["usable"]:
            with pytest.raises(ExtractionError) as refusal:
                extractor.extract(_exchange(), "", [])
            assert "\n" not in str(refusal.value)
            return
        facts = extractor.extract(_exchange(), "", [])
    finally:
        extractor.close()
        lm.close()
    assert len(facts) == expect.get("facts", len(facts)) and facts
    for fact in facts:
        assert _clean(fact.text) and len(fact.text) <= 20_000
        for entity in fact.entities:
            assert _clean(entity.name)
            assert not any(c in entity.name for c in BIDI_AND_CONTROLS)
    if "entities" in expect:
        names = [e.name for f in facts for e in f.entities if e.name != "Ann"]
        assert names == expect["entities"]


def test_a_runaway_fact_is_dropped_and_the_good_one_kept():
    from core.retain.llm_extract import validate_facts

    value = {
        "facts": [
            {"text": "x" * (2 << 20), "network": "world"},
            {"text": "Ann moved to Lisbon.", "network": "world"},
        ]
    }
    facts = validate_facts(value, _exchange())
    assert [f.text for f in facts] == ["Ann moved to Lisbon."]
    with pytest.raises(ValueError, match="at most 20,000 characters"):
        validate_facts({"facts": value["facts"][:1]}, _exchange())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from('[]{}",:\\ud800 1ax\x00'), max_size=300))
def test_parse_json_reply_never_raises_anything_but_value_error(text):
    try:
        value = parse_json_reply(text)
    except ValueError:
        return
    assert repair_strings(value) == value  # no lone surrogate survives a parse


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=60))
def test_clean_name_leaves_nothing_that_lies_or_breaks_a_store(text):
    name = clean_name(text)
    assert _clean(name) and not any(c in name for c in BIDI_AND_CONTROLS)
    assert name == name.strip() and "\n" not in name
    name.encode("utf-8")  # storable


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_any_bytes_parse_or_are_refused_clearly(data):
    """Arbitrary bytes as a .txt, .json and .md file: documents or InvalidInputError."""
    for name in ("x.txt", "x.json", "x.md", "x.jsonl"):
        try:
            documents = parse_documents(data, "auto", name)
        except InvalidInputError as error:
            assert "\n" not in str(error)
            continue
        for document in documents:
            for turn in document.turns:
                assert _clean(turn.text) and _clean(turn.speaker)
                turn.text.encode("utf-8")


# -- command lines -------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv", corpus.CLI_USAGE, ids=lambda a: " ".join(a).encode("utf-8", "backslashreplace").decode()
)
def test_cli_arguments_are_validated_in_the_parser(tmp_path, capsys, argv):
    """`memories list --limit -1`, `--order bogus`, a non-UTF-8 byte…: tracebacks once."""
    from core.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["--home", str(tmp_path / "home"), *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("engram") and "error:" in err[-1], err
    assert "Traceback" not in "\n".join(err)
    assert not (tmp_path / "home").exists()  # refused before any bank was touched


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=-(10**30), max_value=10**30))
def test_any_limit_is_taken_or_refused_by_the_parser(value):
    import argparse

    from core.cli.output import MAX_COUNT, count_arg

    parse = count_arg()
    if 0 <= value <= MAX_COUNT:
        assert parse(str(value)) == value
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(str(value))


# -- the engine's own check: Documents built by hand, values sent over `/call` --------

_LIMITED = {
    "turn-text": (dict(text="x" * 100_001), "turns[0].text"),
    "speaker": (dict(speaker="S" * 201), "turns[0].speaker"),
    "speaker-surrogate": (dict(speaker="A\udfff"), "turns[0].speaker"),
    "text-surrogate": (dict(text="bees \ud800"), "turns[0].text"),
    "text-nul": (dict(text="bees\x00"), "turns[0].text"),
    "turn-id": (dict(turn_id="t" * 201), "turns[0].id"),
    "document-id": (dict(doc_id="d\ud800"), "id"),
    "title": (dict(title="T" * 1001), "title"),
}


@pytest.mark.parametrize("case", sorted(_LIMITED))
def test_a_document_over_a_limit_is_refused_by_the_engine(bank, case):
    """What the importers refuse in a file, ingest refuses in a Document (issue 27, item 4)."""
    from core.limits import FieldError
    from core.types import Document

    values, field = _LIMITED[case]
    turn = Turn(
        values.get("turn_id", "t1"), values.get("speaker", "Ann"), values.get("text", "Bees.")
    )
    document = Document(values.get("doc_id", "d1"), values.get("title", "chat"), (turn,))
    before = dump(bank)
    with pytest.raises(FieldError) as refused:
        bank.ingest([document], mode="verbatim")
    assert refused.value.field == field
    assert dump(bank) == before


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"config": ["retain.duplicate_similarity"]}, "config"),
        ({"background": 7}, "background"),
        ({"background": "b" * 20_001}, "background"),
        ({"agent_name": "\ud800"}, "agent_name"),
    ],
)
def test_a_profile_value_no_store_keeps_is_refused(bank, kwargs, field):
    from core.limits import FieldError

    before = dump(bank)
    with pytest.raises(FieldError) as refused:
        bank.set_profile(**kwargs)
    assert refused.value.field == field
    assert dump(bank) == before


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"limit": -1}, "limit"),
        ({"offset": 10**21}, "offset"),
        ({"offset": "3"}, "offset"),
        ({"order": "text; DROP TABLE units"}, "order"),
        ({"start": datetime.fromisoformat("9999-12-31T23:00:00-14:00")}, "start"),
        ({"end": datetime.fromisoformat("0001-01-01T01:00:00+14:00")}, "end"),
    ],
)
def test_a_listing_with_a_bad_page_is_refused_naming_it(bank, kwargs, field):
    from core.limits import FieldError

    with pytest.raises(FieldError) as refused:
        bank.units(**kwargs)
    assert refused.value.field == field


def test_a_call_refused_for_a_surrogate_leaves_the_journal_whole(engine):
    """A refused call is journaled with its arguments; one holding a lone surrogate
    (DuckDB cannot encode it) lost its own entry and every other in its batch."""
    from core.limits import FieldError
    from core.types import Document

    bank = engine.create_bank("journaled")
    bank.recall("bees")  # queued beside the refused ones
    with pytest.raises(FieldError):
        bank.set_profile(agent_name="\ud800")
    with pytest.raises(FieldError):
        bank.ingest([Document("d", "chat", (Turn("t", "A\udfff", "Bees."),))])
    bank.recall("honey")
    bank.close()  # what was queued is written, or lost
    entries = engine.open_bank("journaled").activity()
    assert [(e.operation, e.outcome) for e in entries] == [
        ("recall", "ok"),
        ("ingest", "error"),
        ("set_profile", "error"),
        ("recall", "ok"),
    ]
    assert entries[2].arguments == {"agent_name": "\ufffd"}
    assert "surrogate" in entries[1].error
