"""How many `Bank` calls the studio makes for one user action, and where a fact's
conversation is found: each such call is a round trip once the bank is remote.

Builds two banks in a temporary data folder with the hash embedder (what is
counted does not depend on what vectors mean): the demo conversations (rules
mode), and 505 one-turn documents whose last one holds the fact looked at (the
case the fact detail's document scan gave up on). Then, through a proxy that
counts every call of a public `Bank` method, it runs what the studio runs for

- opening a fact's detail (the detail pane's loaders), on the demo bank and on
  the 505-document bank (and says whether the conversation was found);
- one graph view of a query (the graph pane's recall + neighbourhood), of a
  unit and of an entity.

Prints JSON: calls per action, by method.

    .venv/bin/python benchmarks/calls_per_action.py
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEMO = REPO / "resources" / "demo"
DOCUMENTS = 505


def open_detail(bank, unit) -> dict:
    """What the detail pane's `_load_extras` runs for one selected fact."""
    from app.panes import detail

    conversation = detail.load_provenance(bank, unit)
    detail.load_links(bank, unit.id)
    return {"conversation_found": bool(conversation.title), **bank.take()}


def graph_views(bank, query: str, entity: str) -> dict:
    from app.graph import neighbourhood

    out = {}
    result = bank.recall(query, count_access=False)
    neighbourhood.of_trace(bank, result.trace, result.unit_ids)
    out["query"] = bank.take()
    unit_id = result.unit_ids[0]
    neighbourhood.of_unit(bank, unit_id)
    out["unit"] = bank.take()
    neighbourhood.of_entity(bank, entity)
    out["entity"] = bank.take()
    return out


def main() -> int:
    from core import Document, Engine, Turn
    from tests.support.counting import Counting
    from tests.support.embedders import HashEmbedder

    home = Path(tempfile.mkdtemp(prefix="engram-calls-"))
    try:
        with Engine(home, embedder=HashEmbedder()) as engine:
            demo = engine.create_bank("demo")
            for path in sorted(DEMO.glob("0*")):
                demo.ingest(path, mode="rules")
            many = engine.create_bank("many")
            start = datetime(2024, 1, 1)
            documents = [
                Document(
                    id=f"d{i:03}",
                    title=f"Conversation {i}",
                    turns=(
                        Turn("t0", "Ana", f"Ana booked room {i} for the offsite.", start),
                        Turn("t1", "Ben", f"Ben said room {i} has a projector.", start),
                    ),
                )
                for i in range(DOCUMENTS)
            ]
            for i, document in enumerate(documents):
                documents[i] = Document(
                    id=document.id,
                    title=document.title,
                    turns=tuple(
                        Turn(t.id, t.speaker, t.text, start + timedelta(days=i))
                        for t in document.turns
                    ),
                )
            many.ingest(documents, mode="verbatim")
            last = many.units(text="room 504 has", limit=1)[0]

            counted = Counting(demo)
            fact = demo.units(text="Lisbon", limit=1)[0]
            entity = max(demo.entities(), key=lambda e: e.mention_count).name
            report = {
                "fact_detail_demo": open_detail(counted, fact),
                "fact_detail_505_documents": open_detail(Counting(many), last),
                "graph_view": graph_views(counted, "Where did Maya move?", entity),
            }
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
