"""Retain in llm mode against the fake Ollama server, through the real client:
normal answers, a failing chunk, a server that dies mid-document, opinion
assessment with a rewrite, observations by the model, and `auto`."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from core.providers.llm import LanguageModel, LlmSettings
from core.retain.llm_extract import FACT_SCHEMA
from core.retain.observations import PROFILE_MAX_TOKENS
from core.retain.opinions import ASSESS_SCHEMA
from core.types import Document, ExtractionMode, LinkKind, Network, Turn
from tests.fakes.ollama_server import FakeOllama, Reply

MODEL = "llama3.2"
DAY = datetime(2024, 3, 1, 10, 0)
_TURN = re.compile(r"^\[([^\]]+)\](?: \([^)]*\))? ([^:\n]+): (.*)$", re.MULTILINE)
# Names the scripted "model" recognises in turn texts.
NAMES = {
    "Yosemite": "place",
    "Lisbon": "place",
    "Northwind": "org",
    "Sintra": "place",
    "Priya": "person",
}


def lm(fake: FakeOllama) -> LanguageModel:
    return LanguageModel(LlmSettings(host=fake.url, model=MODEL, timeout=5.0, retries=1))


def chat(sessions: list[list[tuple[str, str]]], title: str = "chat") -> Document:
    turns = []
    for s, session in enumerate(sessions):
        for speaker, text in session:
            i = len(turns)
            turns.append(Turn(f"{title}{i}", speaker, text, DAY + timedelta(days=s), f"s{s}", i))
    return Document(id="", title=title, turns=tuple(turns), format="test")


SESSIONS = [
    [
        ("Alice", "I love hiking in Yosemite every spring."),
        ("Bob", "I recommended Yosemite to Alice last year."),
        ("Alice", "My sister Priya moved to Lisbon for Northwind."),
        ("Bob", "I love Lisbon, it is a lovely city."),
    ],
    [
        ("Alice", "Priya says the Northwind office is tiny."),
        ("Bob", "I visited Sintra near Lisbon once."),
        ("Alice", "The hike in Sintra was long and muddy."),
        ("Bob", "I should go back there in June."),
    ],
    [
        ("Alice", "Priya got promoted at Northwind yesterday."),
        ("Bob", "I sent Priya a card to congratulate her."),
        ("Alice", "FAIL-ME this chunk is cursed."),
        ("Bob", "Noted."),
    ],
]


def facts_for(prompt: str) -> dict[str, Any]:
    facts = []
    for turn_id, speaker, text in _TURN.findall(prompt):
        opinion = re.search(r"\b(?:love|hate)\b", text) is not None
        entities = [{"name": speaker, "type": "person"}]
        entities += [{"name": n, "type": t} for n, t in NAMES.items() if n in text]
        facts.append(
            {
                "text": f"{speaker} said on {DAY:%B} {turn_id}: {text}",
                "network": "opinion" if opinion else "experience" if speaker == "Bob" else "world",
                "occurred_start": None,
                "occurred_end": None,
                "entities": entities,
                "causal": [],
                "source_ids": [turn_id],
                "confidence": 0.7 if opinion else None,
            }
        )
    if len(facts) >= 2:
        facts[0]["causal"] = [{"target_index": 1, "relation": "causes", "strength": 0.8}]
    return {"facts": facts}


def kind_of(body: dict[str, Any]) -> str:
    fmt = body.get("format")
    if isinstance(fmt, dict) and "facts" in fmt.get("properties", {}):
        return "extract"
    if isinstance(fmt, dict) and "relation" in fmt.get("properties", {}):
        return "assess"
    return "chat"


def profile_of(prompt: str) -> str:
    """A profile the facts support: the entity's first listed fact, retold."""
    first = next(line[2:] for line in prompt.splitlines() if line.startswith("- "))
    return f"In short: {first}"


class Script:
    """A responder: extraction from the prompt's turns, scripted assessments."""

    def __init__(self, assessment: dict[str, Any] | None = None, die_on_extract: int = 0) -> None:
        self.assessment = assessment or {"relation": "neutral", "reason": "Unrelated topics."}
        self.die_on_extract = die_on_extract
        self.extracts = 0
        self.assessments: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply | dict[str, Any]:
        prompt = body["messages"][-1]["content"]
        kind = kind_of(body)
        if kind == "extract":
            self.extracts += 1
            if self.die_on_extract and self.extracts >= self.die_on_extract:
                return Reply.dies(shutdown_server=True)
            if "FAIL-ME" in prompt:
                return Reply.text("I'm sorry, I cannot help with that.")
            return facts_for(prompt)
        if kind == "assess":
            self.assessments.append(prompt)
            return self.assessment
        return Reply.text(profile_of(prompt))


@pytest.mark.slow
def test_llm_mode_end_to_end(bank, fake_ollama: FakeOllama) -> None:
    bank.set_profile(agent_name="Bob")
    script = Script()
    fake_ollama.responder = script
    model = lm(fake_ollama)
    report = bank.ingest(chat(SESSIONS[:2]), mode="llm", llm=model)

    assert report.mode == "llm" and report.model == MODEL and not report.failures
    units = bank.units(limit=None)
    assert len(units) == report.facts_total == 8
    assert all(u.extraction_mode is ExtractionMode.LLM and u.model == MODEL for u in units)
    networks = {u.network for u in units}
    assert networks == {Network.WORLD, Network.EXPERIENCE, Network.OPINION}
    # The model filed Alice's "I love hiking" as an opinion; Alice is not the bank's
    # agent (Bob is), so what she loves is a world fact about her.
    [hiking] = [u for u in units if "love hiking" in u.text]
    assert hiking.network is Network.WORLD and hiking.confidence is None
    # What went over the wire: the extraction schema as `format`, low temperature.
    extracts = [b for b in fake_ollama.chat_requests if kind_of(b) == "extract"]
    assert len(extracts) == 2 and extracts[0]["format"] == FACT_SCHEMA
    assert extracts[0]["options"]["temperature"] <= 0.2
    # Causal links from the model, stored both ways.
    causal = [lk for u in units for lk in bank.links(u.id, [LinkKind.CAUSAL])]
    assert {lk.relation for lk in causal} == {"causes", "caused_by"} and len(causal) == 4
    # Entities from the model, resolved: Priya and Lisbon are one entity each.
    names = [e.name for e in bank.entities()]
    for name in ("Alice", "Bob", "Priya", "Lisbon", "Yosemite", "Northwind", "Sintra"):
        assert names.count(name) == 1, name
    priya = next(e for e in bank.entities() if e.name == "Priya")
    assert priya.type == "person" and priya.mention_count == 2
    # The new opinion has its 'formed' event with its confidence.
    [opinion] = bank.units(Network.OPINION, limit=None)
    [formed] = bank.opinion_events(opinion.id)
    assert formed.relation == "formed" and formed.confidence_after == pytest.approx(0.7)

    jobs = bank.process_jobs(llm=model)
    assert jobs.mode == "llm" and jobs.observations_written > 0
    observation = bank.observation(priya.id)
    assert observation.text.startswith("In short: ")
    assert observation.extraction_mode is ExtractionMode.LLM
    assert not [b for b in fake_ollama.chat_requests if kind_of(b) == "chat" and b.get("format")]
    assert bank.verify().ok


@pytest.mark.slow
def test_a_failing_chunk_writes_nothing_of_itself(bank, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = Script()
    report = bank.ingest(chat(SESSIONS), mode="llm", llm=lm(fake_ollama))

    [failure] = report.failures
    failed_turns = {"chat8", "chat9", "chat10", "chat11"}
    assert set(failure.turn_ids) == failed_turns
    assert "could not extract facts" in failure.reason
    assert report.documents_ingested == 1 and report.documents[0].failed_chunks == 1
    sources = {s for u in bank.units(limit=None) for s in u.source_ids}
    assert sources == {f"chat{i}" for i in range(8)}
    from core.retain.documents import failures_of

    [stored] = failures_of(bank.store.reader(), report.documents[0].id)
    assert set(stored.turn_ids) == failed_turns
    assert "FAILED chunk" in report.summary()
    # In, but not whole: the count says so, not only the FAILED line below it.
    assert "documents: 1 ingested (1 partly: 1 chunk failed), 0 skipped" in report.summary()
    [listed] = bank.documents()
    assert listed.partial and listed.failed_chunks == 1
    assert bank.verify().ok


@pytest.mark.slow
def test_ingesting_a_partial_document_again_retries_exactly_its_failed_chunks(
    bank, fake_ollama: FakeOllama
) -> None:
    script = Script()
    fake_ollama.responder = script
    document = chat(SESSIONS)
    bank.ingest(document, mode="llm", llm=lm(fake_ollama))
    before = {u.id: u.text for u in bank.units(limit=None)}
    fake_ollama.clear()

    # Still failing: only that chunk is asked again, and the document stays partial.
    again = bank.ingest(document, mode="llm", llm=lm(fake_ollama))
    asked = [b for b in fake_ollama.chat_requests if kind_of(b) == "extract"]
    assert asked and all("[chat8]" in b["messages"][1]["content"] for b in asked)
    assert not any("[chat0]" in b["messages"][1]["content"] for b in asked)
    assert [d.status for d in again.documents] == ["retried"] and len(again.failures) == 1
    assert "1 failed again" in again.summary()
    assert bank.documents()[0].failed_chunks == 1

    # The model can read it now: the chunk's facts join the document, which is whole.
    healed = Script()

    def responder(body: dict[str, Any]) -> Any:
        prompt = body["messages"][-1]["content"]
        return healed(
            {**body, "messages": [{"role": "user", "content": prompt.replace("FAIL-ME ", "")}]}
        )

    fake_ollama.responder = responder
    whole = bank.ingest(document, mode="llm", llm=lm(fake_ollama))
    assert healed.extracts == 1 and not whole.failures
    assert "now whole" in whole.summary()
    units = {u.id: u.text for u in bank.units(limit=None)}
    assert {k: units[k] for k in before} == before  # the good chunks were not redone
    sources = {s for u in bank.units(limit=None) for s in u.source_ids}
    assert sources == {f"chat{i}" for i in range(12)}
    [listed] = bank.documents()
    assert not listed.partial and listed.units == len(units)
    # Whole: a further run skips it.
    assert [d.status for d in bank.ingest(document, mode="rules").documents] == ["skipped"]
    assert bank.verify().ok


@pytest.mark.slow
def test_a_server_dying_mid_document_leaves_nothing_of_the_failed_part(
    bank, fake_ollama: FakeOllama
) -> None:
    script = Script(die_on_extract=2)
    fake_ollama.responder = script
    report = bank.ingest(chat(SESSIONS), mode="llm", llm=lm(fake_ollama))

    assert not fake_ollama.running
    assert len(report.failures) == 2
    assert all(
        "stopped answering" in f.reason or "not reachable" in f.reason or "broke" in f.reason
        for f in report.failures
    )
    sources = {s for u in bank.units(limit=None) for s in u.source_ids}
    assert sources == {f"chat{i}" for i in range(4)}, "only the first chunk was written"
    assert bank.count() == 4 and bank.verify().ok
    # Observations without the model fall back to the rules.
    jobs = bank.process_jobs(llm=lm(fake_ollama))
    assert jobs.mode == "rules" and jobs.observations_written > 0


def test_no_chunk_extracted_means_no_document(bank, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = Script(die_on_extract=1)
    report = bank.ingest(chat(SESSIONS[:1]), mode="llm", llm=lm(fake_ollama))
    assert report.documents[0].status == "failed" and report.documents_ingested == 0
    con = bank.store.reader()
    assert con.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
    assert bank.count() == 0 and not bank.entities()
    # Nothing is stored, so the same document can be retried.
    with FakeOllama(responder=Script()) as second:
        again = bank.ingest(chat(SESSIONS[:1]), mode="llm", llm=lm(second))
    assert again.documents_ingested == 1 and bank.count() == 4


@pytest.mark.slow
def test_llm_contradiction_rewrites_the_opinion(bank, fake_ollama: FakeOllama) -> None:
    bank.set_profile(agent_name="Alice")  # opinions are the agent's own
    fake_ollama.responder = Script()
    model = lm(fake_ollama)
    bank.ingest(chat(SESSIONS[:1], title="first"), mode="llm", llm=model)
    [opinion] = bank.units(Network.OPINION, limit=None)
    before = opinion.confidence
    revised = "Alice used to love Yosemite but now finds its trails overcrowded."
    script = Script(
        {
            "relation": "contradict",
            "reason": "Alice now says she hates the crowds there.",
            "revised_opinion": revised,
        }
    )
    fake_ollama.responder = script
    later = chat([[("Alice", "I hate hiking in Yosemite now, it is far too crowded.")]], "later")
    report = bank.ingest(later, mode="llm", llm=model)

    assert script.assessments and "Opinion (confidence" in script.assessments[0]
    assessed = [b for b in fake_ollama.chat_requests if kind_of(b) == "assess"]
    assert assessed[0]["format"] == ASSESS_SCHEMA
    assert report.opinions_updated >= 1
    updated = bank.unit(opinion.id)
    assert updated.text == revised
    # −2α, weighed by the model's strength (1: not given) and the evidence's
    # independence (½: Alice, who holds the opinion, says so herself).
    assert updated.confidence == pytest.approx(max(before - 0.2 * 0.5, 0.0))
    events = bank.opinion_events(opinion.id)
    assert [e.relation for e in events][:2] == ["formed", "contradict"]
    contradict = events[1]
    assert contradict.confidence_before == pytest.approx(before)
    assert contradict.confidence_after == pytest.approx(updated.confidence)
    assert contradict.old_text == opinion.text and contradict.new_text == revised
    assert contradict.reason.startswith("Alice now says she hates the crowds there.")
    assert (contradict.strength, contradict.independence) == (1.0, 0.5)
    evidence = bank.unit(contradict.evidence_id)
    assert "crowded" in evidence.text
    # The rewritten text is what the lexical index finds now.
    assert opinion.id in {h.id for h in bank.store.lexical.search("overcrowded trails", 5)}
    assert bank.verify().ok


@pytest.mark.slow
def test_auto_mode_uses_the_model_only_when_it_answers(bank, fake_ollama: FakeOllama) -> None:
    fake_ollama.responder = Script()
    assert bank.ingest(chat(SESSIONS[:1]), llm=lm(fake_ollama)).mode == "llm"
    dead = lm(fake_ollama)
    fake_ollama.stop()
    report = bank.ingest(chat(SESSIONS[1:2], title="other"), llm=dead)
    assert report.mode == "rules" and report.facts_total > 0
    assert {u.extraction_mode for u in bank.units(limit=None)} == {
        ExtractionMode.LLM,
        ExtractionMode.RULES,
    }


def test_small_talk_with_no_facts_is_done_and_a_lazy_empty_answer_fails(
    bank, fake_ollama: FakeOllama
) -> None:
    """`{"facts": []}` is the right answer to greetings and thanks, and the wrong
    one to an exchange that states something: that one is re-asked, then failed."""
    small_talk = [("Alice", "Hi Bob, how are you?"), ("Bob", "Great, thanks Alice! Take care.")]
    content = [("Alice", "My sister Priya moved to Lisbon for Northwind.")]
    fake_ollama.responder = lambda body: {"facts": []} if kind_of(body) == "extract" else {}
    report = bank.ingest(chat([small_talk, content]), mode="llm", llm=lm(fake_ollama))

    assert report.documents_ingested == 1 and bank.count() == 0
    [failure] = report.failures
    assert set(failure.turn_ids) == {"chat2"}, "only the exchange that says something failed"
    assert "states something" in failure.reason and "Priya moved to Lisbon" in failure.reason
    retries = [b for b in fake_ollama.chat_requests if kind_of(b) == "extract"]
    assert any("states something" in str(b["messages"]) for b in retries), "re-asked with why"


@pytest.mark.slow
def test_progress_moves_within_a_chunk_and_a_cancel_stops_it_mid_reply(
    bank, fake_ollama: FakeOllama
) -> None:
    """Issue 30: on a CPU model a chunk takes a minute or more, and progress
    moved once per chunk; it follows the streamed tokens now."""
    from core.progress import CancelToken
    from core.types import CancelledError

    def streamed(body: dict[str, Any]) -> Any:
        reply = Script()(body)
        return Reply.json(reply, chunks=150) if isinstance(reply, dict) else reply

    fake_ollama.responder = streamed
    seen: list[tuple[int, int, str]] = []
    bank.ingest(
        chat(SESSIONS[:1]), mode="llm", llm=lm(fake_ollama), progress=lambda *a: seen.append(a)
    )
    first = [(done, msg) for done, _total, msg in seen if "chunk 1/1" in msg]
    assert first[0][1].endswith("the model is reading it")
    streaming = [done for done, msg in first if "tokens written" in msg]
    assert len(set(streaming)) >= 3 and streaming == sorted(streaming)
    assert first[-1][1].startswith("chat: extracted chunk 1/1")

    token = CancelToken()

    def cancel_mid_reply(done: int, total: int, message: str) -> None:
        if "tokens written" in message:
            token.cancel()

    before = bank.count(None)
    with pytest.raises(CancelledError):
        bank.ingest(
            chat(SESSIONS[1:2], "other"),
            mode="llm",
            llm=lm(fake_ollama),
            progress=cancel_mid_reply,
            cancel=token,
        )
    assert bank.count(None) == before


@pytest.mark.slow
def test_a_profile_sentence_its_facts_do_not_support_is_cut(bank, fake_ollama: FakeOllama) -> None:
    """Issue 30: "Maya, a 25-year-old woman with a passion for music and
    technology" was kept, and then appeared in reflect's evidence."""
    fake_ollama.responder = Script()
    model = lm(fake_ollama)
    bank.ingest(chat(SESSIONS[:1]), mode="llm", llm=model)

    def invented(body: dict[str, Any]) -> Any:
        if kind_of(body) != "chat":
            return Script()(body)
        prompt = body["messages"][-1]["content"]
        return Reply.text(
            f"{profile_of(prompt)} Priya is a 25-year-old woman with a passion for music."
        )

    fake_ollama.responder = invented
    jobs = bank.process_jobs(llm=model)
    priya = next(e for e in bank.entities() if e.name == "Priya")
    text = bank.observation(priya.id).text
    assert text.startswith("In short: ") and "25-year-old" not in text
    assert any("25-year-old" in sentence for _e, sentence, _why in jobs.unsupported)

    def only_invented(body: dict[str, Any]) -> Any:
        if kind_of(body) != "chat":
            return Script()(body)
        return Reply.text("Priya is a 25-year-old musician.")

    fake_ollama.responder = only_invented
    later = chat([[("Alice", "Priya moved to Lisbon for Northwind again.")]], "later")
    bank.ingest(later, mode="llm", llm=model)
    jobs = bank.process_jobs(llm=model)
    text = bank.observation(priya.id).text
    # Nothing supported: the rules profile stands in, and the report says why.
    assert "musician" not in text and jobs.notes
    assert "no sentence of the model's profile is supported" in jobs.fallback_note()


def test_a_profile_that_runs_on_is_cut_at_its_limit_and_said_once(
    bank, fake_ollama: FakeOllama
) -> None:
    """Issue 30, a real 0.5B model: a profile written on and on, repeating
    itself, to the 2,048-token reply limit, then asked again with 4,096 (and
    8,192): minutes of one entity on a CPU. A profile is a few sentences: the
    reply is cut at PROFILE_MAX_TOKENS, kept to its last full sentence, once."""
    fake_ollama.responder = Script()
    model = lm(fake_ollama)
    bank.ingest(chat(SESSIONS[:1]), mode="llm", llm=model)

    def runs_on(body: dict[str, Any]) -> Any:
        if kind_of(body) != "chat":
            return Script()(body)
        return Reply.text(" ".join([profile_of(body["messages"][-1]["content"])] * 400))

    fake_ollama.responder = runs_on
    before = len(fake_ollama.chat_requests)
    jobs = bank.process_jobs(llm=model)
    asked = [b for b in fake_ollama.chat_requests[before:] if kind_of(b) == "chat"]
    assert jobs.mode == "llm" and not jobs.notes  # every profile is the model's
    # One request per profile, none asked again with more room.
    assert len(asked) == jobs.observations_written > 0
    assert {b["options"]["num_predict"] for b in asked} == {PROFILE_MAX_TOKENS}
    priya = next(e for e in bank.entities() if e.name == "Priya")
    text = bank.observation(priya.id).text
    assert text.startswith("In short: ") and text.count("In short: ") == 1


def invented_facts(body: dict[str, Any]) -> Any:
    """A model too weak for the job: well-formed facts about nothing the turns say."""
    if kind_of(body) != "extract":
        return Script()(body)
    ids = [m[0] for m in _TURN.findall(body["messages"][-1]["content"])]
    return {
        "facts": [
            {
                "text": f"Zorblax visited Quuxville with {n} purple llamas.",
                "network": "world",
                "source_ids": ids[:1],
            }
            for n in ("seven", "eight", "nine")
        ]
    }


@pytest.mark.slow
def test_what_the_checks_drop_is_in_the_report_and_auto_turns_to_rules(
    engine, bank, fake_ollama: FakeOllama
) -> None:
    from core.settings import EngineSettings

    bank.set_profile(agent_name="Bob")

    def mixed(body: dict[str, Any]) -> Any:
        reply = Script()(body)
        if kind_of(body) == "extract":
            reply["facts"].append({"text": "Alice: Wow.", "network": "opinion", "confidence": 0.9})
        return reply

    fake_ollama.responder = mixed
    report = bank.ingest(chat(SESSIONS[:1]), mode="llm", llm=lm(fake_ollama))
    [dropped] = report.facts_dropped
    assert dropped.text == "Alice: Wow." and dropped.reason.startswith("a turn copied")
    assert dropped.dropped and dropped.turn_ids == ("chat0", "chat1", "chat2", "chat3")
    assert report.model_facts == 5 and bank.count(None) == 4
    assert "model's facts: 5 given, 4 kept" in report.summary() and "1 dropped" in report.summary()

    # In auto mode a model whose answers are unusable hands over to the rules.
    engine.set_settings(EngineSettings(ollama_host=fake_ollama.url, ollama_model=MODEL))
    fake_ollama.responder = invented_facts
    report = bank.ingest(chat(SESSIONS, "weak"), mode="auto")
    assert any("auto mode switched to offline rules" in n for n in report.notes)
    assert len(report.failures) == 2  # the chunks the model spoilt, to retry
    rules_units = [u for u in bank.units(limit=None) if u.extraction_mode is ExtractionMode.RULES]
    assert rules_units and not [u for u in bank.units(limit=None) if "Zorblax" in u.text]
