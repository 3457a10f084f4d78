"""The in-memory link graph follows the links table: appends, deletes, rewrites."""

from __future__ import annotations

import pytest

from core.recall.activation import adjacency
from core.recall.linkgraph import LinkGraph
from tests.support.links import link_tables


@pytest.fixture
def con():
    con = link_tables()
    yield con
    con.close()


def add(con, rows):
    both = [r for a, b, k, w in rows for r in ((a, b, k, w), (b, a, k, w))]
    con.executemany("INSERT INTO links VALUES (?, ?, ?, ?, NULL, NULL)", both)


def edges(graph, nodes):
    return sorted((e.source, e.target, e.kind, round(e.weight, 6)) for e in graph.neighbours(nodes))


def expected(rows, nodes):
    found = adjacency(rows)(nodes)
    return sorted((e.source, e.target, e.kind, round(e.weight, 6)) for e in found)


ROWS = [
    ("a", "b", "entity", 1.0),
    ("a", "c", "temporal", 0.5),
    ("b", "d", "causal", 0.8),
    ("c", "d", "semantic", 0.75),
]


def test_graph_matches_the_table_and_follows_appends(con):
    add(con, ROWS)
    graph = LinkGraph()
    assert graph.refresh(con) == "rebuilt"
    for nodes in (["a"], ["b", "c"], ["d", "zzz"], []):
        assert edges(graph, nodes) == expected(ROWS, nodes)
    assert graph.refresh(con) == "current"
    more = [("d", "e", "entity", 1.0), ("a", "e", "temporal", 0.25)]
    add(con, more)
    assert graph.refresh(con) == "appended"
    for nodes in (["a"], ["d", "e"], ["a", "b", "c", "d", "e"]):
        assert edges(graph, nodes) == expected(ROWS + more, nodes)
    # Many appends get merged into the base arrays; answers stay the same.
    many = [(f"n{i}", f"n{i + 1}", "temporal", 1.0) for i in range(50)]
    add(con, many)
    assert graph.refresh(con) == "appended"
    assert edges(graph, ["n10", "a"]) == expected(ROWS + more + many, ["n10", "a"])


def test_deletes_and_rewrites_rebuild(con):
    add(con, ROWS)
    graph = LinkGraph()
    graph.refresh(con)
    con.execute("DELETE FROM links WHERE kind = 'causal'")
    assert graph.refresh(con) == "rebuilt"
    assert ("b", "d", "causal", 0.8) not in edges(graph, ["b"])
    # A rewrite that keeps the row count (curation relinking a unit): new rowids.
    con.execute("DELETE FROM links WHERE kind = 'entity'")
    con.executemany(
        "INSERT INTO links VALUES (?, ?, 'entity', 0.1, NULL, NULL)", [("a", "b"), ("b", "a")]
    )
    assert graph.refresh(con) == "current"  # same count: unseen until the store says it wrote
    assert graph.refresh(con, generation=2) == "rebuilt"
    assert ("a", "b", "entity", 0.1) in edges(graph, ["a"])
    assert graph.refresh(con, generation=2) == "current"
    assert graph.refresh(con, generation=3) == "current"  # a write that left links alone


def test_unknown_kinds_carry_nothing(con):
    add(con, [("a", "b", "mystery", 1.0), ("a", "c", "entity", 1.0)])
    graph = LinkGraph()
    graph.refresh(con)
    assert edges(graph, ["a"]) == [("a", "c", "entity", 1.0)]


def test_entity_fan_weakens_links_through_common_entities(con):
    # e-common is mentioned by all 8 units, e-rare by 2: ln(2)/ln(8) = 1/3.
    con.executemany("INSERT INTO units VALUES (?)", [[f"u{i}"] for i in range(8)])
    con.executemany(
        "INSERT INTO mentions VALUES (?, ?, NULL)",
        [[f"u{i}", "e-common"] for i in range(8)] + [["u0", "e-rare"], ["u1", "e-rare"]],
    )
    con.executemany(
        "INSERT INTO links VALUES (?, ?, 'entity', 1.0, ?, NULL)",
        [
            ["u0", "u1", "e-rare"],
            ["u1", "u0", "e-rare"],
            ["u0", "u2", "e-common"],
            ["u2", "u0", "e-common"],
        ],
    )
    graph = LinkGraph()
    graph.refresh(con)
    plain = {e.target: e.weight for e in graph.neighbours(["u0"])}
    assert plain == {"u1": 1.0, "u2": 1.0}
    fan = {e.target: e.weight for e in graph.neighbours(["u0"], entity_fan=True)}
    assert fan["u1"] == pytest.approx(1 - 1 / 3, abs=1e-6)
    assert fan["u2"] == pytest.approx(0.0, abs=1e-6)


def test_a_merge_that_adds_and_drops_no_link_is_still_seen(bank):
    """Merging X into Y when Y has no links of its own and no new links are
    written leaves the links table's size and last rowid as they were: only the
    rewritten rows tell the graph held in memory that the links' entity changed."""
    from core import NewUnit
    from core.recall.linkgraph import link_graph

    bank.add_units(
        [
            NewUnit(text="Xavier plays the cello.", entity_ids=("x",), id="u1"),
            NewUnit(text="Xavier joined an orchestra.", entity_ids=("x",), id="u2"),
            NewUnit(text="Yolanda paints.", entity_ids=("y",), id="u3"),
            NewUnit(text="The weather was mild.", id="u4"),
        ]
    )
    with bank.store.transaction() as tx:
        for entity, name in (("x", "Xavier"), ("y", "Yolanda")):
            tx.con.execute(
                "INSERT INTO entities VALUES (?, ?, 'person', [], 'active', now(), now())",
                [entity, name],
            )
        tx.con.execute(
            "INSERT INTO links VALUES ('u1', 'u2', 'entity', 1.0, 'x', NULL),"
            " ('u2', 'u1', 'entity', 1.0, 'x', NULL)"
        )
    bank.set_profile(config={"retain.entity_links_per_entity": 0})
    bank.prepare_recall()  # held in memory, as the studio holds it
    bank.merge_entities("x", "y")
    bank.prepare_recall()
    fresh = LinkGraph()
    fresh.refresh(bank.store.reader())

    def edges(graph):  # weighted by their entity's fan: reads each link's entity
        return sorted(
            (e.source, e.target, round(e.weight, 6)) for e in graph.neighbours(["u1", "u2"], True)
        )

    assert edges(link_graph(bank.store)) == edges(fresh)
