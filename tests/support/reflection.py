"""Shared helpers for the reflect tests.

A `Router` answers the fake Ollama server's chat requests: requests with a
JSON schema (`format`) are opinion formation, the others are the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from core import Bank, Engine, Network, NewUnit
from core.settings import EngineSettings
from core.store.bank_store import utcnow
from core.types import new_id
from tests.fakes.ollama_server import FakeOllama, Reply

ID = re.compile(r"\[([0-9a-f]{16})\]")


def use_fake(engine: Engine, fake: FakeOllama, model: str = "llama3.2") -> None:
    engine.set_settings(EngineSettings(ollama_host=fake.url, ollama_model=model))


def system_of(body: dict[str, Any]) -> str:
    return next((m["content"] for m in body["messages"] if m["role"] == "system"), "")


def user_of(body: dict[str, Any]) -> str:
    return body["messages"][-1]["content"]


def cited_ids(body: dict[str, Any]) -> list[str]:
    """The evidence ids a prompt shows, in order (the example's id excluded)."""
    text = user_of(body).split("Answer JSON only")[0]
    return list(dict.fromkeys(ID.findall(text)))


def opinion(text: str, confidence: float, support: list[str], entities=()) -> dict[str, Any]:
    return {
        "text": text,
        "confidence": confidence,
        "entities": list(entities),
        "supporting_ids": support,
    }


class Router:
    """A fake-server responder: `answer(body)` for answers, `opinions(body)` for formation.

    Either may return a Reply, a str or a dict (JSON)."""

    def __init__(
        self,
        answer: Callable[[dict[str, Any]], Any] | str = "I would suggest Yosemite again.",
        opinions: Callable[[dict[str, Any]], Any] | list | None = None,
    ) -> None:
        self.answer = answer
        self.opinions = opinions if opinions is not None else []
        self.answer_bodies: list[dict[str, Any]] = []
        self.opinion_bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Any:
        if body.get("format"):
            self.opinion_bodies.append(body)
            out = self.opinions(body) if callable(self.opinions) else self.opinions
            if isinstance(out, list):
                return Reply.json({"opinions": out})
            return out
        self.answer_bodies.append(body)
        return self.answer(body) if callable(self.answer) else self.answer


def unit(
    text: str,
    network: Network = Network.WORLD,
    *,
    when: datetime | None = None,
    confidence: float | None = None,
    sources: tuple[str, ...] = (),
    entities: tuple[str, ...] = (),
) -> NewUnit:
    return NewUnit(
        text,
        network,
        occurred_start=when,
        confidence=confidence,
        source_ids=sources,
        entity_ids=entities,
        id=new_id(),
    )


def add(bank: Bank, *units: NewUnit) -> list[str]:
    """Add units in one batch (one embedding call); returns their ids in order."""
    bank.add_units(list(units))
    return [u.id for u in units]


def add_entity(bank: Bank, name: str, aliases: tuple[str, ...] = ()) -> str:
    entity_id = new_id()
    now = utcnow()
    with bank.store.transaction() as tx:
        tx.con.execute(
            "INSERT INTO entities (id, name, type, aliases, status, created_at, updated_at)"
            " VALUES (?, ?, 'person', ?, 'active', ?, ?)",
            [entity_id, name, list(aliases), now, now],
        )
    return entity_id


def rows(bank: Bank, sql: str, params: list | None = None) -> list[tuple]:
    return bank.store.reader().execute(sql, params or []).fetchall()


def state(bank: Bank) -> dict[str, Any]:
    """Everything reflect may write, for before/after comparisons."""
    return {
        "units": rows(
            bank,
            "SELECT id, text, network, confidence, status, updated_at FROM units ORDER BY id",
        ),
        "events": rows(bank, "SELECT * FROM opinion_events ORDER BY id"),
        "reflections": rows(bank, "SELECT id, committed FROM reflections ORDER BY id"),
        "mentions": rows(bank, "SELECT * FROM mentions ORDER BY unit_id, entity_id"),
    }


def events(bank: Bank, opinion_id: str) -> list[tuple]:
    return rows(
        bank,
        "SELECT relation, confidence_before, confidence_after, evidence_id FROM opinion_events"
        " WHERE opinion_id = ? ORDER BY happened_at, CASE relation WHEN 'formed' THEN 0"
        " ELSE 1 END, rowid",
        [opinion_id],
    )
