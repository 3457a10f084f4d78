"""Retain end to end on real stores: LoCoMo in rules mode, verbatim, re-ingest,
cancel and failure atomicity, observations, and the CLI."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime, timedelta

import pytest

from core import CancelToken, Engine
from core.cli import main as cli_main
from core.retain import IngestReport, ingest
from core.retain.importers import load_documents
from core.types import (
    CancelledError,
    Document,
    ExtractionMode,
    InvalidInputError,
    LinkKind,
    Network,
    Turn,
)
from tests.shared_data import LOCOMO_DEV as LOCOMO

# The shared data folder sits beside the repository (../shared, see DESIGN.md).
TABLES = (
    "documents",
    "turns",
    "units",
    "entities",
    "mentions",
    "links",
    "opinion_events",
    "jobs",
    "entity_decisions",
    "ingest_failures",
    "index_queue",
)


def state(bank) -> dict[str, int]:
    """Row counts of every table the pipeline writes, plus the two indexes."""
    con = bank.store.reader()
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    counts["vectors"] = bank.store.vectors.count()
    counts["bm25"] = bank.store.lexical.count()
    return counts


def conversation(
    turns: list[tuple[str, str]], day: datetime, *, title: str = "chat", session: str = "s1"
) -> Document:
    return Document(
        id="",
        title=title,
        turns=tuple(
            Turn(f"{title}-{i}", speaker, text, day, session, i)
            for i, (speaker, text) in enumerate(turns)
        ),
        format="test",
    )


SMALL = [
    ("Alice", "I moved to Lisbon last month for a new job at Northwind Analytics."),
    ("Bob", "That sounds exciting! How is the new team?"),
    ("Alice", "The team is great. My manager Priya Shah is very supportive."),
    ("Bob", "I visited Lisbon in 2019 and loved the food."),
    ("Alice", "We went hiking in Sintra on Saturday because the weather was perfect."),
    ("Bob", "Sintra is beautiful. I should go back there next spring."),
]


# -- LoCoMo, rules mode: one conversation, shared by the tests below ------------------


@pytest.fixture(scope="module")
def locomo(tmp_path_factory, embedder):
    documents = load_documents(LOCOMO)
    document = min(documents, key=lambda d: len(d.turns))  # the shortest, to stay fast
    engine = Engine(tmp_path_factory.mktemp("locomo"), embedder=embedder)
    bank = engine.create_bank("locomo")
    calls: list[tuple[int, int, str]] = []
    report = bank.ingest(document, mode="rules", progress=lambda d, t, m: calls.append((d, t, m)))
    yield bank, document, report, calls
    engine.close()


@pytest.mark.slow
def test_locomo_rules_report_and_progress(locomo) -> None:
    bank, document, report, calls = locomo
    assert isinstance(report, IngestReport)
    assert report.mode == "rules" and report.model == ""
    assert report.documents_ingested == 1 and report.documents_skipped == 0
    assert report.turns == len(document.turns)
    assert report.facts_total == bank.count() > 0.5 * len(document.turns)
    assert report.failures == []
    assert set(report.timings) >= {"extract", "embed", "plan", "write", "total"}
    assert report.jobs_queued > 0 and bank.pending_jobs() == report.jobs_queued
    # Progress is monotonic and ends at its total.
    done = [d for d, _, _ in calls]
    assert done == sorted(done) and calls[-1][0] == calls[-1][1] > 2
    assert bank.verify().ok


@pytest.mark.slow
def test_locomo_sources_are_real_turns_and_times_fall_in_their_session(locomo) -> None:
    bank, document, _report, _ = locomo
    turns = {t.id: t for t in document.turns}
    units = bank.units(limit=None)
    # Two people talking, the bank's agent not among them: every fact is about the
    # world (what they did, think and prefer); nobody's belief is the bank's opinion.
    assert {u.network for u in units} == {Network.WORLD}
    for unit in units:
        assert unit.source_ids and set(unit.source_ids) <= set(turns), unit
        assert unit.extraction_mode is ExtractionMode.RULES
        sessions = {turns[s].session for s in unit.source_ids}
        assert len(sessions) == 1, "a rules fact comes from one exchange of one session"
        session_time = turns[unit.source_ids[0]].timestamp
        assert unit.mentioned_at == session_time
        # The occurrence is the session day, or a time expression resolved against
        # it ("five years ago", "next month"): an interval, never long after it.
        assert unit.occurred_start is not None and unit.occurred_end > unit.occurred_start
        assert unit.occurred_start <= session_time + timedelta(days=400)
    same_day = sum(u.occurred_start.date() == u.mentioned_at.date() for u in units)
    assert same_day > 0.8 * len(units)
    # Provenance resolves back to the very turns, in source order.
    unit = units[len(units) // 2]
    assert [t.id for t in bank.provenance(unit.id)] == list(unit.source_ids)
    assert [t.text for t in bank.provenance(unit.id)] == [turns[s].text for s in unit.source_ids]


@pytest.mark.slow
def test_locomo_entities_are_resolved(locomo) -> None:
    bank, document, report, _ = locomo
    speakers = {t.speaker for t in document.turns}
    entities = bank.entities()
    assert entities and report.entities_new == len(entities)
    for speaker in speakers:
        named = [
            e
            for e in entities
            if e.name.casefold() == speaker.casefold()
            or speaker.casefold() in (a.casefold() for a in e.aliases)
        ]
        assert len(named) == 1, (speaker, named)
        assert named[0].type == "person"
        assert named[0].mention_count > 0.3 * len(document.turns) / len(speakers)
        # The speaker's entity is mentioned by every fact built from their turns.
        mentioning = {u.id for u in bank.units(entity=named[0].id, limit=None)}
        theirs = [
            u
            for u in bank.units(limit=None)
            if any(t.speaker == speaker for t in bank.provenance(u.id))
        ]
        assert all(u.id in mentioning for u in theirs)
    # Every surface got one decision per document, with a score when it was fuzzy.
    decisions = bank.entity_decisions()
    assert len({d.surface.casefold() for d in decisions}) == len(decisions)
    for d in decisions:
        if d.decision == "merge":
            assert d.score is not None and d.score >= d.threshold
    names = [e.name.casefold() for e in entities]
    assert len(names) == len(set(names)), "no two entities share a name"


@pytest.mark.slow
def test_locomo_links_of_every_kind(locomo) -> None:
    bank, _document, report, _ = locomo
    assert {k for k, n in report.links.items() if n} == {k.value for k in LinkKind}
    con = bank.store.reader()
    rows = con.execute(
        "SELECT kind, count(*), min(weight), max(weight) FROM links GROUP BY kind"
    ).fetchall()
    by_kind = {r[0]: r[1:] for r in rows}
    assert set(by_kind) == {k.value for k in LinkKind}
    for kind, (count, low, high) in by_kind.items():
        assert count == 2 * report.links[kind], "each link is stored in both directions"
        assert 0.0 < low <= high <= 1.0 + 1e-6
    assert by_kind["entity"][1] == by_kind["entity"][2] == 1.0
    # Symmetric kinds: every row has its mirror.
    asymmetric = con.execute(
        "SELECT count(*) FROM links a WHERE a.kind <> 'causal' AND NOT EXISTS (SELECT 1 FROM"
        " links b WHERE b.source = a.target AND b.target = a.source AND b.kind = a.kind"
        " AND b.weight = a.weight)"
    ).fetchone()[0]
    assert asymmetric == 0
    relations = dict(
        con.execute(
            "SELECT relation, count(*) FROM links WHERE kind = 'causal' GROUP BY 1"
        ).fetchall()
    )
    assert relations.get("causes", 0) == relations.get("caused_by", 0) > 0
    # Entity links are capped per entity and unit.
    cap = bank.config["retain.entity_links_per_entity"]
    worst = con.execute(
        "SELECT max(n) FROM (SELECT source, entity_id, count(*) n FROM links"
        " WHERE kind = 'entity' GROUP BY 1, 2)"
    ).fetchone()[0]
    assert worst <= 2 * cap
    # A fact of the session day has temporal neighbours, strongest (nearest) first.
    unit = next(
        u for u in bank.units(limit=None) if u.occurred_start.date() == u.mentioned_at.date()
    )
    temporal = bank.links(unit.id, [LinkKind.TEMPORAL])
    assert temporal and all(link.source == unit.id for link in temporal)
    weights = [link.weight for link in temporal]
    assert weights == sorted(weights, reverse=True)


@pytest.mark.slow
def test_locomo_questions_spread_in_at_least_three_waves(locomo) -> None:
    """Spreading activation is a process on a real conversation too: with the
    engine's defaults, the conversation's own questions light the graph in at
    least three waves, each adding nodes (issue 15 saw two). A question whose
    best hits are all below the seed similarity floor spreads from nothing."""
    bank, document, _report, _ = locomo
    sample = next(
        s for s in json.loads(LOCOMO.read_text("utf-8")) if s["sample_id"] in document.title
    )
    questions = [q["question"] for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)][:10]
    spread = 0
    for question in questions:
        activation = bank.recall(question, count_access=False).trace.to_dict()["activation"]
        # A question whose only seeds are barely similar (issue 29: "Which city have
        # both Jean and John visited?" seeds one fact at 0.33) spreads two waves
        # before its energy falls under the threshold; the process is measured on
        # the questions the bank has an answer-like hit for.
        if activation["stopped"] == "no_seeds" or max(
            s["activation"] for s in activation["seeds"]
        ) < 0.4:
            continue
        spread += 1
        seen = {s["node"] for s in activation["seeds"]}
        adding = 0
        for wave in activation["waves"]:
            new = set(wave["lit"]) - seen
            adding += bool(new)
            seen |= new
        assert adding >= 3, (question, [len(w["lit"]) for w in activation["waves"]])
    assert spread >= 6, "most questions have seeds"


@pytest.mark.slow
def test_locomo_reingest_is_a_noop_and_observations_follow(locomo) -> None:
    bank, document, report, _ = locomo
    before = state(bank)
    again = bank.ingest(document, mode="rules")
    assert again.documents_skipped == 1 and again.documents_ingested == 0
    assert again.facts_total == 0 and state(bank) == before

    jobs = bank.process_jobs()
    assert jobs.processed == report.jobs_queued and not jobs.failed
    assert bank.pending_jobs() == 0
    observations = bank.units(Network.OBSERVATION, limit=None)
    assert len(observations) == jobs.observations_written > 0
    speaker = next(e for e in bank.entities() if e.name == document.turns[0].speaker)
    observation = bank.observation(speaker.id)
    assert observation is not None and observation.network is Network.OBSERVATION
    assert observation.entity_ids == (speaker.id,)
    assert observation.text.startswith(f"{speaker.name} (person;")
    facts = bank.units([Network.WORLD, Network.EXPERIENCE], entity=speaker.id, limit=None)
    from core.retain.observations import observation_sources

    # Its sources are the facts it quotes, each of them in its text, not all the
    # speaker's hundreds of facts (issue 29: "4 facts quoted, 451 source turns").
    used = set(observation_sources(bank.store.reader(), observation.id))
    quoted = [f for f in facts if f.id in used]
    assert 2 <= len(quoted) == len(used) < len(facts) / 10
    for fact in quoted:
        head = re.split(r"[.!?;]| \(", fact.text)[0][:40]
        assert head in observation.text, (head, observation.text)
    assert set(observation.source_ids) == {s for f in quoted for s in f.source_ids}
    assert bank.verify().ok


# -- verbatim -------------------------------------------------------------------------


def test_verbatim_each_turn_is_one_unit(bank) -> None:
    bank.set_profile(agent_name="Bob")
    day = datetime(2024, 5, 3, 18, 30)
    report = bank.ingest(conversation(SMALL, day), mode="verbatim")
    assert report.mode == "verbatim" and report.facts_total == len(SMALL)
    units = sorted(bank.units(limit=None), key=lambda u: int(u.source_ids[0].split("-")[1]))
    for (speaker, text), unit in zip(SMALL, units, strict=True):
        assert unit.text == f"{speaker}: {text}"
        assert unit.network is (Network.EXPERIENCE if speaker == "Bob" else Network.WORLD)
        assert unit.occurred_start == unit.mentioned_at == day
        assert unit.extraction_mode is ExtractionMode.VERBATIM
        assert len(unit.source_ids) == 1
    names = {e.name for e in bank.entities()}
    assert {"Alice", "Bob", "Lisbon", "Sintra"} <= names
    assert report.links.get("entity") and report.links.get("temporal")
    lisbon = next(e for e in bank.entities() if e.name == "Lisbon")
    assert lisbon.mention_count == 2


def test_near_identical_facts_merge_into_one_unit(bank) -> None:
    day = datetime(2024, 5, 3, 18, 30)
    turns = [
        ("Alice", "The library on Main Street closes at 9 pm on weekdays."),
        ("Bob", "Good to know."),
        ("Alice", "The library on Main Street closes at 9 pm on weekdays."),
    ]
    report = bank.ingest(conversation(turns, day), mode="verbatim")
    assert report.duplicates_merged == 1 and report.facts_total == 2
    [library] = bank.units(text="library", limit=None)
    assert library.source_ids == ("chat-0", "chat-2")
    # Said again a day later, in another document: merged into the existing unit.
    later = conversation(turns[:1], day + timedelta(hours=20), title="later")
    assert bank.ingest(later, mode="verbatim").duplicates_merged == 1
    [library] = bank.units(text="library", limit=None)
    assert library.source_ids == ("chat-0", "chat-2", "later-0")
    assert [t.id for t in bank.provenance(library.id)] == ["chat-0", "chat-2", "later-0"]
    # A month later it is a new fact.
    month = conversation(turns[:1], day + timedelta(days=30), title="month")
    assert bank.ingest(month, mode="verbatim").duplicates_merged == 0
    assert bank.count(text="library") == 2


# -- re-ingest, force, cancel, failure --------------------------------------------------


def test_reingest_same_file_is_a_noop_unless_forced(bank, tmp_path) -> None:
    path = tmp_path / "chat.txt"
    path.write_text("\n".join(f"{s}: {t}" for s, t in SMALL), "utf-8")
    first = bank.ingest(path, mode="rules")
    assert first.documents_ingested == 1
    before = state(bank)
    old_ids = {u.id for u in bank.units(limit=None)}

    second = bank.ingest(path, mode="rules")
    assert second.documents_skipped == 1 and state(bank) == before

    forced = bank.ingest(path, mode="rules", force=True)
    assert forced.documents_ingested == 1
    after = state(bank)
    assert after["documents"] == 1 and after["turns"] == before["turns"]
    assert after["units"] == before["units"]
    new_ids = {u.id for u in bank.units(limit=None)}
    assert not (old_ids & new_ids), "the previous units were replaced"
    assert forced.change.removed and bank.verify().ok


def _counting_cancel(after: int):
    token = CancelToken()
    seen: list[int] = []

    def progress(done: int, total: int, message: str) -> None:
        seen.append(done)
        if len(seen) >= after:
            token.cancel()

    return token, seen, progress


@pytest.mark.slow
def test_cancel_mid_document_leaves_the_bank_as_it_was(bank) -> None:
    day = datetime(2024, 5, 3, 18, 30)
    bank.ingest(conversation(SMALL[:2], day, title="first"), mode="rules")
    before = state(bank)
    long_chat = conversation(SMALL * 4, day + timedelta(days=1), title="long")
    token, seen, progress = _counting_cancel(after=2)
    with pytest.raises(CancelledError):
        bank.ingest(long_chat, mode="rules", progress=progress, cancel=token)
    assert len(seen) >= 2
    assert state(bank) == before and bank.verify().ok
    # Cancelling between documents keeps the ones already written.
    other = conversation(SMALL[2:4], day + timedelta(days=2), title="other")
    token = CancelToken()

    def cancel_after_first(done: int, total: int, message: str) -> None:
        if "written" in message:
            token.cancel()

    with pytest.raises(CancelledError):
        ingest(
            bank.handle, [other, long_chat], mode="rules", progress=cancel_after_first, cancel=token
        )
    assert state(bank)["documents"] == before["documents"] + 1
    assert bank.verify().ok
    # And a later ingest of the cancelled document works.
    assert bank.ingest(long_chat, mode="rules").documents_ingested == 1


@pytest.mark.slow
def test_a_failure_while_writing_rolls_the_document_back(bank, monkeypatch) -> None:
    day = datetime(2024, 5, 3, 18, 30)
    bank.ingest(conversation(SMALL[:2], day, title="first"), mode="rules")
    before = state(bank)
    import core.retain.write as write

    def broken(con, links):
        raise RuntimeError("disk full")

    monkeypatch.setattr(write, "write_links", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        bank.ingest(conversation(SMALL, day, title="second"), mode="rules")
    assert state(bank) == before and bank.verify().ok


def test_bad_input_gets_a_clear_error(bank, tmp_path) -> None:
    with pytest.raises(InvalidInputError, match="unknown mode"):
        bank.ingest(conversation(SMALL, datetime(2024, 1, 1)), mode="magic")
    with pytest.raises(InvalidInputError, match="no such file"):
        bank.ingest(tmp_path / "missing.txt")
    with pytest.raises(InvalidInputError, match="llm mode needs a language model"):
        bank.ingest(conversation(SMALL, datetime(2024, 1, 1)), mode="llm")
    assert state(bank)["units"] == 0


# -- the CLI ----------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_ingest_runs_observations(tmp_path, embedder, capsys, monkeypatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("ENGRAM_OLLAMA_MODEL", "")
    path = tmp_path / "chat.md"
    path.write_text("\n".join(f"**{s}:** {t}" for s, t in SMALL), "utf-8")
    assert cli_main(["--home", str(home), "bank", "create", "cli", "--agent", "Bob"]) == 0
    assert cli_main(["--home", str(home), "ingest", "cli", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "mode: rules" in out and "observations:" in out
    assert cli_main(["--home", str(home), "ingest", "cli", str(path), "--quiet"]) == 0
    assert "0 ingested, 1 skipped" in capsys.readouterr().out
    with Engine(home, embedder=embedder) as engine:
        bank = engine.open_bank("cli")
        networks = Counter(u.network for u in bank.units(limit=None))
        assert networks[Network.OBSERVATION] > 0 and networks[Network.EXPERIENCE] > 0
        assert bank.pending_jobs() == 0
