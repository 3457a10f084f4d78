"""Entity resolution: string similarity rules, scored merges with context, and the
decisions recorded for each surface."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from core.retain.entities import (
    EntityResolver,
    ResolverSettings,
    codes,
    fold,
    is_entity_name,
    name_similarity,
    normalize_surface,
    time_score,
)
from core.store.bank_store import utcnow
from core.types import Document, Turn

DAY = datetime(2024, 3, 1, 10, 0)


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        ("Tom", "Tomás", 0.85, 1.0),
        ("Tom", "Tomás Rivera", 0.85, 1.0),
        ("Northwind", "Northwind Analytics", 0.9, 1.0),
        ("Caroline", "caroline", 1.0, 1.0),
        ("José", "Jose", 1.0, 1.0),
        ("Mell", "Mel", 0.8, 1.0),
        ("Room 101", "Room 102", 0.0, 0.0),
        ("Room 101", "Room", 0.0, 0.0),
        ("Flight BA117", "Flight BA118", 0.0, 0.0),
        ("Oscar", "Caro", 0.0, 0.69),
        ("Al", "Alice Smith", 0.0, 0.69),
        ("LGBTQ", "Connected LGBTQ Activists", 0.0, 0.69),
    ],
)
def test_name_similarity(a: str, b: str, low: float, high: float) -> None:
    assert low <= name_similarity(a, b) <= high
    assert name_similarity(a, b) == pytest.approx(name_similarity(b, a))


def test_surface_helpers() -> None:
    assert normalize_surface("  the  Northwind's ") == "Northwind"
    assert normalize_surface('"Room 101"') == "Room 101"
    assert fold("Tomás  Rivera!") == "tomas rivera"
    assert codes("room 101 b7") == {"101", "b7"}
    assert not is_entity_name("I") and not is_entity_name("they") and not is_entity_name("--")
    assert is_entity_name("Priya")
    near = time_score([DAY], [DAY + timedelta(days=400), DAY + timedelta(days=1)], 30)
    assert near == pytest.approx(pow(2.718281828, -1 / 30), rel=1e-3)
    assert time_score([DAY], [], 30) == 0.0


def resolver(bank, **settings) -> EntityResolver:
    base = ResolverSettings.from_config(bank.config)
    for key, value in settings.items():
        base = type(base)(**{**base.__dict__, key: value})
    return EntityResolver(bank.store.reader(), base, document_id="doc", now=utcnow())


def test_within_a_document_a_surface_is_one_entity(bank) -> None:
    r = resolver(bank)
    first = r.resolve("Northwind Analytics", "org", {"Alice"}, [DAY])
    assert r.resolve("northwind analytics", "other", {"Bob"}, [DAY]) == first
    assert r.resolve("Northwind Analytics", "place", set(), [DAY]) == first
    assert r.resolve("I", "person") is None
    # "Northwind" in the same context merges; the decision carries its scores.
    assert r.resolve("Northwind", "org", {"Alice"}, [DAY]) == first
    merge = next(d for d in r.decisions if d.surface == "Northwind")
    assert merge.decision == "merge" and merge.candidate_id == first
    assert merge.score >= merge.threshold == 0.75
    assert merge.name_score == pytest.approx(0.9) and merge.cooccurrence_score == 1.0
    # Numbers must match: a different room is a different entity, however alike.
    room = r.resolve("Room 101", "place", {"Alice"}, [DAY])
    assert r.resolve("Room 102", "place", {"Alice"}, [DAY]) != room
    assert len(r.new_entities) == 3
    # One decision per distinct surface of the document.
    assert [d.surface for d in r.decisions] == [
        "Northwind Analytics",
        "Northwind",
        "Room 101",
        "Room 102",
    ]


def test_a_name_alone_does_not_merge(bank) -> None:
    r = resolver(bank)
    tomas = r.resolve("Tomás", "person", {"Alice", "Lisbon"}, [DAY])
    # Same first name, no shared neighbours, a year apart: a different Tom.
    other = r.resolve("Tom", "person", {"Zed"}, [DAY + timedelta(days=365)])
    assert other != tomas
    decision = next(d for d in r.decisions if d.surface == "Tom")
    assert decision.decision == "new" and decision.candidate_id == tomas
    assert decision.score < decision.threshold
    jordan = r.resolve("Jordan", "person", set(), [DAY])
    with bank.store.transaction() as tx:
        r.write(tx.con)
    # In a later document: a person is never a place, even by the exact name.
    later = resolver(bank)
    assert later.resolve("Jordan", "place", set(), [DAY]) != jordan
    assert later.resolve("JORDAN", "other", set(), [DAY]) != jordan  # the same surface: cached
    again = resolver(bank)
    assert again.resolve("Jordan", "other", set(), [DAY]) == jordan
    assert again.decisions[-1].decision == "exact"
    assert {e.name for e in bank.entities()} == {"Tomás", "Tom", "Jordan"}


def doc(title: str, day: datetime, turns: list[tuple[str, str]]) -> Document:
    return Document(
        id="",
        title=title,
        turns=tuple(Turn(f"{title}{i}", s, t, day, "s1", i) for i, (s, t) in enumerate(turns)),
    )


def test_resolution_across_documents_with_decisions_recorded(bank) -> None:
    bank.ingest(
        doc(
            "one",
            DAY,
            [
                ("Alice", "Yesterday I had lunch with Tomás at Northwind Analytics."),
                ("Bob", "Did Tomás book Room 101 for the review?"),
                ("Alice", "Yes, Tomás booked Room 101 at Northwind Analytics."),
            ],
        ),
        mode="verbatim",
    )
    entities = {e.name: e for e in bank.entities()}
    assert {"Alice", "Bob", "Tomás", "Northwind Analytics", "Room 101"} <= set(entities)
    report = bank.ingest(
        doc(
            "two",
            DAY + timedelta(days=2),
            [
                ("Alice", "I met Tom for coffee near Northwind this morning."),
                ("Bob", "Is the review still in Room 102 with Tom?"),
                ("Alice", "No, Tom moved it to Room 102 at Northwind."),
            ],
        ),
        mode="verbatim",
    )
    after = {e.name: e for e in bank.entities()}
    tomas = after["Tomás"]
    assert "Tom" in tomas.aliases and "Tom" not in after
    assert "Northwind" in after["Northwind Analytics"].aliases
    assert "Room 102" in after and after["Room 102"].id != after["Room 101"].id
    assert report.entities_merged == 2 and report.entities_new == 1  # Room 102
    # Each speaker is one person entity.
    assert after["Alice"].type == "person" and after["Bob"].type == "person"
    # The decisions name the candidate and the score that decided.
    decisions = {d.surface: d for d in bank.entity_decisions() if d.document_id}
    tom = next(d for d in bank.entity_decisions(tomas.id) if d.surface == "Tom")
    assert tom.decision == "merge" and tom.entity_id == tomas.id
    assert tom.score >= tom.threshold and tom.name_score >= 0.85
    assert tom.cooccurrence_score > 0 and tom.time_score > 0.9
    room = next(d for d in bank.entity_decisions() if d.surface == "Room 102")
    assert room.decision == "new"
    assert decisions["Alice"].decision == "exact"
    # Units of the second document mention the canonical entity.
    assert {u.id for u in bank.units(entity="Tom", limit=None)} == {
        u.id for u in bank.units(entity=tomas.id, limit=None)
    }
    assert len(bank.units(entity=tomas.id, limit=None)) == 6
