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
        ("Bob", "Lisbon is a lovely city."),
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
        return Reply.text("A neutral third-person profile written by the model.")


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
    # The model filed Alice's "I love hiking" as an opinion; Alice is not the bank's
    # agent (Bob is), so what she loves is a world fact about her (networks.py).
    assert networks == {Network.WORLD, Network.EXPERIENCE}
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
    # Bob, the agent, stated no belief: the bank holds no opinion.
    assert bank.count(Network.OPINION) == 0

    jobs = bank.process_jobs(llm=model)
    assert jobs.mode == "llm" and jobs.observations_written > 0
    observation = bank.observation(priya.id)
    assert observation.text == "A neutral third-person profile written by the model."
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
    bank.set_profile(agent_name="Alice")
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
