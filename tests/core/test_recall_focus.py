"""Speakers in the query (focus and the embedded text) and the graph's seeds,
on a real bank ingested from a conversation."""

from __future__ import annotations

from datetime import datetime

import pytest

from core.recall.focus import speakers, spoken_by
from core.types import Document, Turn

DAY = datetime(2024, 5, 4, 18, 0)
TURNS = [
    ("Melanie", "I signed up for a pottery class yesterday, it is like therapy for me."),
    ("Caroline", "Pottery sounds lovely! I tried a pottery class once and made a bowl."),
    ("Melanie", "We went camping at the beach with the kids last weekend."),
    ("Caroline", "Camping is fun. I went to a support group meeting on Tuesday."),
    ("Melanie", "Running helps me de-stress after work."),
    ("Caroline", "Did you know Oscar, my guinea pig, loves carrots?"),
]


@pytest.fixture
def chat(bank):
    bank.ingest(
        Document(
            id="",
            title="chat",
            turns=tuple(
                Turn(f"D1:{i + 1}", speaker, text, DAY, "s1", i)
                for i, (speaker, text) in enumerate(TURNS)
            ),
            format="test",
        ),
        mode="verbatim",
    )
    return bank


def said_by(bank, speaker: str) -> set[str]:
    return {u.id for u in bank.units(limit=100) if u.text.startswith(f"{speaker}:")}


@pytest.mark.parametrize(
    ("query", "named", "focused", "stripped"),
    [
        (
            "What activities does Melanie partake in?",
            ("Melanie",),
            ("Melanie",),
            "What activities does partake in?",
        ),
        ("what did CAROLINE try?", ("Caroline",), ("Caroline",), "what did try?"),
        ("Melanie's kids", ("Melanie",), ("Melanie",), "kids"),  # possessive too
        (
            "Did Melanie and Caroline both try pottery?",
            ("Melanie", "Caroline"),
            (),  # everyone named picks out no one
            "Did and both try pottery?",
        ),
        ("Who likes pottery?", (), (), "Who likes pottery?"),
        ("Melanies", (), (), "Melanies"),  # a whole word only
        ("Melanie?", ("Melanie",), ("Melanie",), "Melanie?"),  # nothing else left: kept
    ],
)
def test_speakers_named_by_a_query(chat, query, named, focused, stripped):
    who = speakers(chat.store, query)
    assert set(who.names) == {"Melanie", "Caroline"}
    assert set(who.named) == set(named)
    assert set(who.focused) == set(focused)
    assert who.without_names(query) == stripped


def test_an_alias_of_the_speakers_entity_names_them(chat):
    melanie = next(e for e in chat.entities() if e.name == "Melanie")
    chat.rename_entity(melanie.id, "Mel")  # "Melanie" stays an alias
    who = speakers(chat.store, "What does Mel do to relax?")
    assert who.named == ("Melanie",)
    assert who.without_names("What does Mel do to relax?") == "What does do to relax?"


def test_spoken_by_reads_the_source_turns(chat):
    everything = [u.id for u in chat.units(limit=100)]
    assert spoken_by(chat.store, everything, ["Melanie"]) == said_by(chat, "Melanie")
    assert len(said_by(chat, "Melanie")) == 3
    assert spoken_by(chat.store, everything, []) == frozenset()


def test_recall_boosts_the_named_speakers_facts(chat):
    query = "Which pottery class did Melanie take?"
    off = {"recall.speaker_focus": 0.0, "recall.embed_without_speakers": False}
    plain = chat.recall(query, settings=off)
    focused = chat.recall(query, settings={"recall.embed_without_speakers": False})
    assert plain.trace.focus is None and plain.trace.speakers_named == ["Melanie"]
    trace = focused.trace.to_dict()["focus"]
    assert trace["speakers"] == ["Melanie"] and trace["factor"] == 2.0
    melanie = said_by(chat, "Melanie")
    assert set(trace["units"]) == melanie & {f["id"] for f in focused.trace.to_dict()["fused"]}
    assert any("speaker focus" in note for note in focused.trace.to_dict()["notes"])
    for fused in focused.trace.to_dict()["fused"]:
        unfocused = next(f for f in plain.trace.to_dict()["fused"] if f["id"] == fused["id"])
        factor = 2.0 if fused["id"] in melanie else 1.0
        assert fused["factor"] == factor
        assert fused["score"] == pytest.approx(unfocused["score"] * factor)
    # Both pottery turns share the query's words; Melanie's comes first once focused.
    order = [f["id"] for f in focused.trace.to_dict()["fused"]]
    pottery = {u.id: u.text for u in chat.units(limit=100) if "pottery class" in u.text}
    assert pottery[min(pottery, key=order.index)].startswith("Melanie:")


def test_the_semantic_channel_embeds_the_query_without_speaker_names(chat):
    query = "What does Melanie do to de-stress?"
    result = chat.recall(query, channels=["semantic"])
    assert result.trace.to_dict()["semantic_query"] == "What does do to de-stress?"
    vector = chat.engine.embedder.embed_one("What does do to de-stress?")
    best = result.trace.to_dict()["channels"]["semantic"]
    assert best["scores"][0] == pytest.approx(
        float(
            vector
            @ chat.store.reader()
            .execute("SELECT vector FROM units WHERE id = ?", [best["ids"][0]])
            .fetchone()[0]
        ),
        abs=1e-4,
    )
    kept = chat.recall(
        query, channels=["semantic"], settings={"recall.embed_without_speakers": False}
    )
    assert kept.trace.to_dict()["semantic_query"] == query


def test_graph_seeds_are_the_best_semantic_and_lexical_hits_fused(chat):
    from core.recall.channels import ChannelResult
    from core.recall.pipeline import _seeds
    from core.recall.settings import resolve

    unit = {u.text.split(":")[1].split()[0]: u.id for u in chat.units(limit=100)}
    pottery, camping, oscar = unit["I"], unit["We"], unit["Did"]
    direct = {
        "semantic": ChannelResult("semantic", [pottery, camping], [0.9, 0.8]),
        "lexical": ChannelResult("lexical", [oscar], [5.0]),
    }
    vector = chat.engine.embedder.embed_one("guinea pig food")
    seeds = _seeds(chat.store, vector, direct, resolve(chat.config, {"recall.activation_seeds": 2}))
    stored = chat.store.reader().execute("SELECT vector FROM units WHERE id = ?", [oscar])
    # The two first places of the fusion, camping third; the semantic hit keeps
    # the score its channel gave (not recomputed), the lexical one gets its cosine.
    assert dict(seeds) == {
        pottery: 0.9,
        oscar: pytest.approx(float(vector @ stored.fetchone()[0]), abs=1e-5),
    }


def test_prepare_recall_loads_the_link_graph_once(chat):
    assert chat.prepare_recall() == "rebuilt"
    assert chat.prepare_recall() == "current"
    result = chat.recall("pottery", channels=["graph"])
    assert result.trace.to_dict()["channels"]["graph"]["links"]["state"] == "current"


def test_speakers_and_their_facts_from_memory_are_duckdbs(chat):
    """A small bank answers speaker focus from memory (the units' labels), the
    same as from DuckDB, before and after the speaker's entity is renamed."""
    from core.recall.unitcache import labels_in_memory

    everything = [u.id for u in chat.units(limit=100)]

    def both(query: str):
        chat.prepare_recall()
        labels = labels_in_memory(chat.store)
        assert labels is not None
        memory = (
            speakers(chat.store, query, labels),
            spoken_by(chat.store, everything, ["Melanie"], labels),
        )
        assert memory == (
            speakers(chat.store, query),
            spoken_by(chat.store, everything, ["Melanie"]),
        )
        return memory

    who, spoken = both("What does Melanie do to relax?")
    assert who.named == ("Melanie",) and spoken == said_by(chat, "Melanie")
    melanie = next(e for e in chat.entities() if e.name == "Melanie")
    chat.rename_entity(melanie.id, "Mel")
    who, _ = both("What does Mel do to relax?")
    assert who.named == ("Melanie",) and "Mel" in who.names["Melanie"]
