"""Recall end to end on real banks in tmp_path: channels, filters, trace, edge cases."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from core import InvalidInputError, Network, NewUnit, RecallResult
from core.recall import explain
from core.recall.trace import RecallTrace, activation_path

FACTS = [
    # (text, network, occurred_start, entities)
    (
        "Alice started a new job as an engineer at Google.",
        "world",
        datetime(2023, 3, 2),
        ("alice", "google"),
    ),
    ("Alice adopted a grey cat called Miso.", "world", datetime(2023, 4, 10), ("alice",)),
    ("Bob went camping in Yosemite with his kids.", "world", datetime(2023, 6, 12), ("bob",)),
    (
        "Bob's daughter turned seven and had a dinosaur party.",
        "world",
        datetime(2023, 6, 20),
        ("bob",),
    ),
    (
        "Carol moved from Sweden to Lisbon for her studies.",
        "world",
        datetime(2023, 7, 5),
        ("carol",),
    ),
    ("Carol painted a sunrise over the Tagus river.", "world", datetime(2023, 8, 1), ("carol",)),
    ("I recommended a pottery class to Carol.", "experience", datetime(2023, 8, 3), ("carol",)),
    ("I think Bob should take more holidays.", "opinion", datetime(2023, 8, 9), ("bob",)),
    (
        "The Lisbon studio hosts a pottery workshop every Friday.",
        "world",
        datetime(2023, 9, 1),
        ("lisbon",),
    ),
    (
        "Alice's team at Google shipped a search feature.",
        "world",
        datetime(2023, 10, 2),
        ("alice", "google"),
    ),
]


def add_facts(bank):
    units = [
        NewUnit(
            text=text,
            network=Network(net),
            occurred_start=when,
            mentioned_at=when,
            source_ids=(f"D{i + 1}:1",),
            entity_ids=entities,
            confidence=0.7 if net == "opinion" else None,
            id=f"u{i}",
        )
        for i, (text, net, when, entities) in enumerate(FACTS)
    ]
    bank.add_units(units)
    # Entity links, both directions as retain stores them.
    rows = []
    for i, a in enumerate(units):
        for b in units[i + 1 :]:
            for entity in set(a.entity_ids) & set(b.entity_ids):
                rows += [(a.id, b.id, "entity", 1.0, entity), (b.id, a.id, "entity", 1.0, entity)]
    with bank.store.transaction() as tx:
        tx.con.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, NULL)", rows)
    return units


@pytest.fixture
def filled(bank):
    add_facts(bank)
    return bank


def retract(bank, unit_id):
    with bank.store.transaction() as tx:
        tx.con.execute("UPDATE units SET status = 'retracted' WHERE id = ?", [unit_id])
        tx.touch([unit_id])


def check_budget_and_order(result: RecallResult, budget: int):
    assert sum(item.tokens for item in result.items) == result.tokens_used <= budget
    ranks = [item.rank for item in result.items]
    assert ranks == sorted(ranks)


def test_recall_finds_the_relevant_fact_and_fills_the_budget(filled):
    result = filled.recall("Where does Alice work?", budget_tokens=40)
    assert result.items[0].unit_id in {"u0", "u9"}
    check_budget_and_order(result, 40)
    assert result.reranker == "heuristic"
    item = result.items[0]
    assert item.source_ids and item.entity_ids and item.occurred_start is not None
    assert item.tokens == filled.engine.embedder.count_tokens(item.text)
    big = filled.recall("Where does Alice work?", budget_tokens=10_000)
    assert {i.unit_id for i in big.items} == {f"u{i}" for i in range(10)}


def test_trace_explains_every_packed_item(filled):
    result = filled.recall(
        "What did Carol do in August 2023?", budget_tokens=60, now=datetime(2023, 12, 1)
    )
    trace = json.loads(json.dumps(result.trace.to_dict()))  # plain JSON data, round-trips
    assert trace == result.trace.to_dict()
    # A saved trace reads back as the trace it was.
    assert RecallTrace.from_dict(trace) == result.trace
    assert json.loads(result.to_json())["items"][0]["unit_id"] == result.items[0].unit_id
    assert set(trace["channels"]) == {"semantic", "lexical", "graph", "temporal"}
    assert trace["interval"]["start"].startswith("2023-08-01")
    assert trace["channels"]["temporal"]["ids"], trace["channels"]["temporal"]
    assert trace["activation"]["seeds"]
    assert trace["packing"]["packed"] == result.unit_ids
    assert trace["packing"]["tokens_used"] == result.tokens_used
    for key in ("embed", "semantic", "lexical", "graph", "temporal", "fusion", "rerank", "total"):
        assert trace["timings_ms"][key] >= 0
    assert result.items
    for item in result.items:
        why = explain(trace, item.unit_id)
        assert why["packed"] and why["channels"], why
        assert why["tokens"] == item.tokens
        assert why["rerank"]["score"] == pytest.approx(item.score)
        # The fused entry says exactly which channels ranked it, and where.
        assert {c: v["rank"] for c, v in why["fused"]["contributions"].items()} == {
            c: v["rank"] for c, v in why["channels"].items()
        }
        if "graph" in why["channels"]:
            path = why["activation_path"]
            assert path[-1]["node"] == item.unit_id
            assert path[0]["from"] in {s["node"] for s in trace["activation"]["seeds"]}
    for skipped in trace["packing"]["skipped"]:
        assert skipped["tokens"] > skipped["left"]


def test_graph_channel_reaches_linked_units(filled):
    result = filled.recall(
        "Alice's new job at Google", channels=["graph"], settings={"recall.activation_seeds": 1}
    )
    graph = result.trace.to_dict()["channels"]["graph"]
    seed = result.trace.to_dict()["activation"]["seeds"][0]["node"]
    assert seed in {"u0", "u9"}
    # Linked through the alice/google entities: the other Alice facts.
    assert set(graph["ids"]) == {"u0", "u1", "u9"} - {seed}
    assert "semantic" not in result.trace.to_dict()["channels"]  # ran for seeds only, not fused
    for step in result.trace.to_dict()["activation"]["steps"]:
        assert activation_path(result.trace, step["node"])[-1] == step


def test_temporal_channel_is_silent_without_a_time(filled):
    result = filled.recall("Who likes pottery?", channels=["temporal"])
    temporal = result.trace.to_dict()["channels"]["temporal"]
    assert not temporal["ran"] and temporal["ids"] == []
    assert "no time" in temporal["note"]
    assert result.items == ()


def test_temporal_channel_keeps_to_the_interval(filled):
    result = filled.recall("What happened in June 2023?", channels=["temporal"])
    assert set(result.trace.to_dict()["channels"]["temporal"]["ids"]) == {"u2", "u3"}
    assert {i.unit_id for i in result.items} == {"u2", "u3"}


def test_networks_and_time_filters_apply_to_every_channel(filled):
    only_opinion = filled.recall("Bob holidays camping kids", networks=["opinion"])
    assert [i.unit_id for i in only_opinion.items] == ["u7"]
    for channel in only_opinion.trace.to_dict()["channels"].values():
        assert set(channel["ids"]) <= {"u7"}
    summer = filled.recall(
        "Bob camping with kids dinosaur", start=datetime(2023, 6, 15), end=datetime(2023, 7, 1)
    )
    assert {i.unit_id for i in summer.items} == {"u3"}
    for channel in summer.trace.to_dict()["channels"].values():
        assert set(channel["ids"]) <= {"u3"}


def test_retracted_units_are_never_recalled(filled):
    retract(filled, "u1")
    result = filled.recall("Alice adopted a grey cat called Miso", budget_tokens=10_000)
    assert "u1" not in result.unit_ids
    for channel in result.trace.to_dict()["channels"].values():
        assert "u1" not in channel["ids"]
    # Activation never passes through it either, though a seed still links to it.
    seeds = {s["node"] for s in result.trace.to_dict()["activation"]["seeds"]}
    assert seeds & {"u0", "u9"}
    assert "u1" not in {s["node"] for s in result.trace.to_dict()["activation"]["steps"]}


def test_observations_under_their_own_budget(filled):
    filled.add_units(
        [
            NewUnit(
                text="Carol is a student in Lisbon who paints and does pottery.",
                network=Network.OBSERVATION,
                entity_ids=("carol",),
                id="obs-carol",
            )
        ]
    )
    result = filled.recall(
        "Carol painting", budget_tokens=20, networks=["world"], observation_budget=50
    )
    assert [o.unit_id for o in result.observations] == ["obs-carol"]
    assert result.trace.to_dict()["observations"]["packed"] == ["obs-carol"]
    assert result.tokens_used <= 20
    assert not filled.recall("Carol painting", networks=["world"]).observations


def test_empty_bank(bank):
    result = bank.recall("anything at all?")
    assert result.items == () and result.tokens_used == 0
    assert result.trace.to_dict()["channels"]["semantic"]["ids"] == []
    json.dumps(result.trace.to_dict())


def test_punctuation_only_query(filled):
    result = filled.recall("?!... ;-) —")
    assert result.items == ()
    assert "no letters or digits" in result.trace.to_dict()["notes"][0]


def test_50kb_query(filled):
    query = ("Where does Alice work these days, and what did her team ship? " * 900)[:49_999] + "?"
    assert len(query) == 50_000
    result = filled.recall(query, budget_tokens=50)
    assert {"u0", "u9"} & set(result.unit_ids)
    assert result.trace.to_dict()["query_chars"] == 50_000
    assert len(result.trace.to_dict()["query"]) <= 2000
    check_budget_and_order(result, 50)


def test_one_unit_bank(bank):
    bank.add_units([NewUnit(text="The only memory: a red bicycle.", source_ids=("t1",))])
    result = bank.recall("bicycle")
    assert [i.text for i in result.items] == ["The only memory: a red bicycle."]
    assert result.source_ids == {"t1"}


def test_all_networks_filtered_out(filled):
    result = filled.recall("Alice", networks=[])
    assert result.items == ()
    assert "no networks" in result.trace.to_dict()["notes"][0]
    assert filled.recall("Alice", networks=["observation"]).items == ()


def test_zero_budget_packs_nothing(filled):
    result = filled.recall("Alice", budget_tokens=0)
    assert result.items == () and result.trace.to_dict()["packing"]["skipped"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"query": ""},
        {"query": "   "},
        {"query": 42},
        {"query": "x", "budget_tokens": -1},
        {"query": "x", "budget_tokens": 1.5},
        {"query": "x", "level": "huge"},
        {"query": "x", "networks": ["dreams"]},
        {"query": "x", "channels": ["telepathy"]},
        {"query": "x", "channels": []},
        {"query": "x", "reranker": "magic"},
        {"query": "x", "settings": {"recall.nope": 1}},
    ],
)
def test_bad_input_gets_a_clear_error(bank, kwargs):
    with pytest.raises(InvalidInputError):
        bank.recall(**kwargs)


def test_levels_change_the_candidate_count(filled):
    low = filled.recall("Alice", level="low", channels=["semantic"])
    assert low.trace.to_dict()["candidates_per_channel"] == 20
    assert filled.recall("Alice", level="high").trace.candidates_per_channel == 150


def test_cli_recall(filled, engine, capsys):
    from core.cli import main

    home = str(engine.home)
    engine.close()
    assert main(["--home", home, "recall", "test", "Where does Alice work?", "--budget", "30"]) == 0
    out = capsys.readouterr().out
    assert "Google" in out and "reranker heuristic" in out
    assert (
        main(["--home", home, "recall", "test", "Alice", "--json", "--trace", "--network", "world"])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["trace"]["networks"] == ["world"]
    assert all(item["network"] == "world" for item in data["items"])


def test_the_trace_replays_the_waves_recall_spread(filled):
    """A per-step budget of one: recall lights one node a step, and the trace's
    waves replay to exactly the activation the graph channel ranked."""
    from core.recall.trace import replay_activation

    result = filled.recall(
        "Alice's new job at Google",
        channels=["graph"],
        settings={"recall.activation_seeds": 1, "recall.activation_step_budget": 1},
    )
    activation = result.trace.to_dict()["activation"]
    waves = activation["waves"]
    assert len(waves) >= 2 and all(len(w["lit"]) == 1 for w in waves)
    assert activation["step_budget"] == 1
    levels = replay_activation(activation)
    graph = result.trace.to_dict()["channels"]["graph"]
    for unit_id, a in zip(graph["ids"], graph["activation"], strict=True):
        assert levels[-1][unit_id] == pytest.approx(a)
    for wave, before, after in zip(waves, levels[:-1], levels[1:], strict=True):
        assert set(after) - set(before) == set(wave["lit"])
        assert all(c["to"] in wave["lit"] for c in wave["carried"])
