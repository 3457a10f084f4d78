"""Shared helpers for the curation and snapshot tests.

`build_bank` lays out a small bank by hand — entities, facts, an opinion with
its confidence events, an observation, documents and turns, links of every
kind — so each test knows exactly what is there, independent of how retain's
extraction heuristics evolve.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from core import Bank, Network, NewUnit
from core.curate.relink import relink_units
from core.store.bank_store import utcnow

T0 = datetime(2024, 3, 1, 9, 0)
MARKER = "Zyxquorblat"  # a name no tokenizer, stemmer or dictionary has seen

# Tables whose rows are the bank's memory (jobs and the audit log are not).
MEMORY_TABLES = {
    "units": "id",
    "entities": "id",
    "mentions": "unit_id, entity_id, surface",
    "links": "source, target, kind, entity_id, relation, weight",
    "opinion_events": "id",
    "observations": "entity_id",
    "observation_sources": "observation_id, unit_id",
    "entity_decisions": "id",
    "documents": "id",
    "turns": "document_id, id",
    "meta": "key",
}


@dataclass
class Built:
    entities: dict[str, str] = field(default_factory=dict)  # key -> entity id
    units: dict[str, str] = field(default_factory=dict)  # key -> unit id
    turns: dict[str, str] = field(default_factory=dict)


def add_entity(bank: Bank, name: str, type: str = "person", aliases=()) -> str:
    from core.types import new_id

    entity_id = new_id()
    now = utcnow()
    with bank.store.transaction() as tx:
        tx.con.execute(
            "INSERT INTO entities (id, name, type, aliases, status, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 'active', ?, ?)",
            [entity_id, name, type, list(aliases), now, now],
        )
    return entity_id


def build_bank(bank: Bank) -> Built:
    b = Built()
    for key, name, aliases in (
        ("alice", "Alice", ()),
        ("bob", "Bob", ("Bobby",)),
        ("marker", MARKER, (f"{MARKER} Jr",)),
        ("google", "Google", ()),
    ):
        b.entities[key] = add_entity(bank, name, "org" if key == "google" else "person", aliases)
    e = b.entities
    doc = "doc1"
    turns = [
        ("t1", "user", "Alice started at Google last week."),
        ("t2", "user", f"Bob said {MARKER} plays the cello every evening."),
        ("t3", "assistant", f"I recommended a concert to {MARKER} and Bob."),
        ("t4", "user", "Alice thinks the office is too loud."),
    ]
    with bank.store.transaction() as tx:
        tx.con.execute(
            "INSERT INTO documents (id, title, source_path, content_hash, format, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [doc, f"chat with {MARKER}", "/tmp/chat.txt", "h", "lines", utcnow()],
        )
        for i, (tid, speaker, text) in enumerate(turns):
            tx.con.execute(
                "INSERT INTO turns (document_id, id, idx, speaker, text, timestamp, session)"
                " VALUES (?, ?, ?, ?, ?, ?, 's1')",
                [doc, tid, i, speaker, text, T0 + timedelta(minutes=i)],
            )
            b.turns[tid] = tid
    W, X, OP, OB = Network.WORLD, Network.EXPERIENCE, Network.OPINION, Network.OBSERVATION
    M = MARKER
    # fmt: off
    specs = [  # key, text, network, hours after T0, entities, source turns, confidence
        ("a_google", "Alice works at Google as an engineer.", W, 0, ("alice", "google"), ("t1",), None),
        ("a_office", "Alice finds the Google office too loud.", W, 30, ("alice", "google"), ("t4",), None),
        ("m_cello", f"{M} plays the cello every evening.", W, 1, ("marker",), ("t2",), None),
        ("m_bob", f"Bob and {M} are old friends from school.", W, 2, ("marker", "bob"), ("t2",), None),
        ("i_concert", f"I recommended a concert to {M} and Bob.", X, 3, ("marker", "bob"), ("t3",), None),
        ("o_music", f"{M} is probably a gifted musician.", OP, 4, ("marker",), ("t2",), 0.7),
        ("o_alice", "Alice would prefer a quieter office.", OP, 31, ("alice",), ("t4",), 0.6),
        ("bob_bike", "Bob rides his bike to work.", W, 50, ("bob",), (), None),
        ("plain", "The weather in Lisbon was sunny all week.", W, 200, (), (), None),
        # Names the marker but resolution missed it: a purge must still redact it.
        ("b_lend", f"Bob lent his spare bike to {M}'s sister.", W, 60, ("bob",), (), None),
        ("obs_marker", f"{M} is a cellist and an old friend of Bob.", OB, 5, ("marker",), ("t2",), None),
    ]
    # fmt: on
    units = []
    for key, text, network, hours, ents, sources, confidence in specs:
        units.append(
            NewUnit(
                text=text,
                network=network,
                occurred_start=T0 + timedelta(hours=hours),
                mentioned_at=T0 + timedelta(hours=hours),
                confidence=confidence,
                source_ids=sources,
                entity_ids=tuple(e[k] for k in ents),
            ).with_id()
        )
        b.units[key] = units[-1].id
    bank.add_units(units)
    u = b.units
    with bank.store.transaction() as tx:
        relink_units(tx.con, bank.store.vectors, list(u.values()), bank.config)
        tx.con.execute(
            "INSERT INTO links VALUES (?, ?, 'causal', 0.8, NULL, 'causes'),"
            " (?, ?, 'causal', 0.8, NULL, 'caused_by')",
            [u["m_cello"], u["o_music"], u["o_music"], u["m_cello"]],
        )
        for n, (before, after, reason) in enumerate(
            [(None, 0.5, "formed"), (0.5, 0.7, f"{MARKER} plays every evening")]
        ):
            tx.con.execute(
                "INSERT INTO opinion_events (id, opinion_id, happened_at, relation,"
                " confidence_before, confidence_after, evidence_id, reason)"
                " VALUES (?, ?, ?, 'reinforce', ?, ?, ?, ?)",
                [
                    f"ev{n}",
                    u["o_music"],
                    T0 + timedelta(hours=n),
                    before,
                    after,
                    u["m_cello"],
                    reason,
                ],
            )
        tx.con.execute(
            "INSERT INTO opinion_events (id, opinion_id, happened_at, relation,"
            " confidence_before, confidence_after, evidence_id, reason)"
            " VALUES ('ev9', ?, ?, 'formed', NULL, 0.6, NULL, 'said so')",
            [u["o_alice"], T0],
        )
        tx.con.execute(
            "INSERT INTO observations VALUES (?, ?, 'rules', '', ?)",
            [e["marker"], u["obs_marker"], utcnow()],
        )
        tx.con.execute(
            "INSERT INTO observation_sources VALUES (?, ?), (?, ?)",
            [u["obs_marker"], u["m_cello"], u["obs_marker"], u["m_bob"]],
        )
    return b


def dump(bank: Bank, tables=None) -> dict[str, list[tuple]]:
    """Every row of the memory tables, in a canonical order (vectors included)."""
    con = bank.store.reader()
    present = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    out = {}
    for table, order in (tables or MEMORY_TABLES).items():
        if table in present:
            rows = con.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            if table == "meta":
                # Where this copy was exported to is not memory (a snapshot leaves it).
                rows = [r for r in rows if r[0] != "exports"]
            out[table] = sorted(rows, key=repr)
    return out


def table_rows(bank: Bank, sql: str, params=()) -> list[tuple]:
    return bank.store.reader().execute(sql, list(params)).fetchall()


_QUERY_VECTORS: dict[tuple[str, str], np.ndarray] = {}


def vector_ids(bank: Bank, text: str, k: int = 50, where: str | None = None) -> list[str]:
    key = (bank.engine.embedder.name, text)
    if key not in _QUERY_VECTORS:
        _QUERY_VECTORS[key] = bank.engine.embedder.embed_one(text)
    vector = _QUERY_VECTORS[key]
    return [h.id for h in bank.store.vectors.search(vector, k, where=where)]


def lexical_ids(bank: Bank, text: str, k: int = 50) -> list[str]:
    return [h.id for h in bank.store.lexical.search(text, k)]


def folder_contains(folder: Path, needle: bytes) -> list[Path]:
    """Every file under `folder` whose bytes contain `needle` (any case for ASCII)."""
    found = []
    variants = {needle, needle.lower(), needle.upper()}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if any(v in data for v in variants):
                found.append(path)
    return found
