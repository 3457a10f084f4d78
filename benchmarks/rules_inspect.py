"""What rules-mode retain makes of a LoCoMo dev conversation, for a person to read.

Extraction statistics need no bank (seconds); `--bank` also ingests the
conversation into a temporary bank in rules mode, runs the observation jobs
and reports entities with types, observation lengths and the opinions whose
confidence moved (with the evidence that moved them).

    .venv/bin/python benchmarks/rules_inspect.py [--conversations conv-26 …] [--bank]
        [--show N]   # print N sample facts per conversation
        [--home DIR] # read the rules banks recall_quality.py kept there ({id}-rules),
                     # ingesting those missing (opinions only; no observation jobs run)
        [--moves N]  # print N opinion moves drawn at random over all conversations
                     # (default: every move), for a person to judge

Printed: facts per turn, median fact tokens (the embedder's tokenizer) against
verbatim's, facts per network, questions stored as opinions (must be 0).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.providers.embedder import shared_embedder  # noqa: E402
from core.retain.extract import chunk_exchanges  # noqa: E402
from core.retain.facts import verbatim_facts  # noqa: E402
from core.retain.importers import load_documents  # noqa: E402
from core.retain.rules import RulesExtractor  # noqa: E402
from core.types import Network  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev" / "locomo-dev.json"


def extraction_stats(document, embedder, show: int) -> dict:
    extractor = RulesExtractor()
    facts = []
    known: list[str] = []
    for exchange in chunk_exchanges(document):
        got = extractor.extract(exchange, "", known)
        facts.extend(got)
        for fact in got:
            for mention in fact.entities:
                if mention.name not in known:
                    known.append(mention.name)
    turns = [t for t in document.turns if t.text.strip()]
    verbatim = [f.text for f in verbatim_facts(document, "", [])]
    tokens = embedder.count_tokens_batch([f.text for f in facts])
    v_tokens = embedder.count_tokens_batch(verbatim) if verbatim else [0]
    networks = Counter(f.network.value for f in facts)
    # An opinion holding a question, wherever in its text.
    question_opinions = [f for f in facts if f.network is Network.OPINION and "?" in f.text]
    print(
        f"{document.title}: {len(turns)} turns, {len(facts)} facts "
        f"({len(facts) / len(turns):.2f}/turn), median fact tokens "
        f"{statistics.median(tokens):.0f} (verbatim {statistics.median(v_tokens):.0f}), "
        f"networks {dict(networks)}, questions as opinions {len(question_opinions)}"
    )
    for fact in question_opinions[:5]:
        print(f"   question-opinion: {fact.text}")
    if show:
        for fact in random.Random(0).sample(facts, min(show, len(facts))):
            conf = f" c={fact.confidence:.2f}" if fact.confidence is not None else ""
            ents = ", ".join(f"{m.name}/{m.type}" for m in fact.entities)
            print(f"   [{fact.network.value}{conf}] {fact.text}  {{{ents}}}")
    return {
        "turns": len(turns),
        "facts": len(facts),
        "tokens": tokens,
        "verbatim_tokens": v_tokens,
        "question_opinions": len(question_opinions),
    }


def bank_stats(document, engine, *, kept: bool = False) -> list[dict]:
    """Print what the bank holds; returns its opinion moves (one dict each)."""
    if kept:
        name = f"{document.title}-rules"
        if name in {b.name for b in engine.banks()}:
            bank = engine.open_bank(name)
        else:
            bank = engine.create_bank(name)
            bank.ingest(document, mode="rules")
        moves = opinion_moves(bank, document.title)
        bank.close()
        return moves
    bank = engine.create_bank(document.title)
    bank.ingest(document, mode="rules")
    bank.process_jobs()
    entities = bank.entities()
    by_type = Counter(e.type for e in entities)
    print(f"  entities {len(entities)} {dict(by_type)}")
    for entity in sorted(entities, key=lambda e: (e.type, e.name)):
        print(f"    {entity.type:<8} {entity.name}  aliases={list(entity.aliases)}")
    lengths = []
    for entity in entities:
        observation = bank.observation(entity.id)
        if observation is not None:
            lengths.append(engine.embedder.count_tokens(observation.text))
    if lengths:
        print(
            f"  observations {len(lengths)}: median {statistics.median(lengths):.0f} tokens, "
            f"max {max(lengths)}"
        )
        longest = max(
            (bank.observation(e.id) for e in entities if bank.observation(e.id) is not None),
            key=lambda u: len(u.text),
        )
        print(f"  longest: {longest.text[:600]}")
    moves = opinion_moves(bank, document.title)
    bank.close()
    return moves


def opinion_moves(bank, title: str) -> list[dict]:
    """Count the opinions that moved; returns every move with its evidence."""
    opinions = bank.opinions()
    moved = [c for c in bank.opinions_changed() if any(e.relation != "formed" for e in c.events)]
    moves = []
    for change in moved:
        for event in change.events:
            if event.relation == "formed":
                continue
            moves.append(
                {
                    "conversation": title,
                    "opinion": change.opinion.text,
                    "relation": event.relation,
                    "before": event.confidence_before,
                    "after": event.confidence_after,
                    "reason": event.reason,
                    "evidence": bank.unit(event.evidence_id).text if event.evidence_id else "",
                }
            )
    by_relation = Counter(m["relation"] for m in moves)
    print(
        f"  {title}: opinions {len(opinions)}, moved {len(moved)} "
        f"({len(moves)} steps: {dict(by_relation)})"
    )
    return moves


def print_moves(moves: list[dict], n: int | None) -> None:
    sample = moves if n is None else random.Random(0).sample(moves, min(n, len(moves)))
    for i, move in enumerate(sample, 1):
        print(
            f"[{i}] {move['conversation']} {move['relation']} "
            f"{move['before']:.2f}->{move['after']:.2f} ({move['reason']})\n"
            f"    OPINION  {move['opinion']}\n    EVIDENCE {move['evidence']}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", nargs="+")
    parser.add_argument("--bank", action="store_true", help="also ingest into a bank")
    parser.add_argument("--show", type=int, default=0)
    parser.add_argument("--home", type=Path, help="read the rules banks kept here")
    parser.add_argument("--moves", type=int, help="opinion moves to print (default all)")
    args = parser.parse_args()
    embedder = shared_embedder()
    documents = load_documents(args.data, "locomo")
    if args.conversations:
        documents = [d for d in documents if d.title in args.conversations]
    totals = Counter()
    all_tokens: list[int] = []
    all_verbatim: list[int] = []
    for document in documents:
        stats = extraction_stats(document, embedder, args.show)
        totals.update(turns=stats["turns"], facts=stats["facts"], qo=stats["question_opinions"])
        all_tokens += stats["tokens"]
        all_verbatim += stats["verbatim_tokens"]
    print(
        f"ALL: {totals['facts'] / totals['turns']:.2f} facts/turn, median fact tokens "
        f"{statistics.median(all_tokens):.0f} (verbatim {statistics.median(all_verbatim):.0f}), "
        f"questions as opinions {totals['qo']}"
    )
    if args.bank or args.home:
        from core import Engine

        with tempfile.TemporaryDirectory(prefix="rules-inspect-") as tmp:
            moves: list[dict] = []
            with Engine(args.home or tmp, embedder=embedder) as engine:
                for document in documents:
                    print(f"== {document.title} (bank)")
                    moves += bank_stats(document, engine, kept=args.home is not None)
            print_moves(moves, args.moves)
    return 0


if __name__ == "__main__":
    sys.exit(main())
