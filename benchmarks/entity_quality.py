"""Entity extraction and typing against the hand-made gold file (rules mode).

The gold file (`tests/data/locomo_entities_gold.json`) lists the named entities
of two LoCoMo dev conversations. Each conversation goes through the rules
extractor exchange by exchange, as retain runs it; the distinct names its
facts mention are compared with the gold names (case, accents and a possessive
ignored):

    precision = |found ∩ gold| / |found|      recall = |gold ∩ found| / |gold|
    typing    = share of found gold persons, places and organisations typed so

    .venv/bin/python benchmarks/entity_quality.py [--show]

Needs no model: seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.retain.entities import fold, normalize_surface  # noqa: E402
from core.retain.extract import chunk_exchanges  # noqa: E402
from core.retain.importers import load_documents  # noqa: E402
from core.retain.rules import RulesExtractor  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GOLD = ROOT / "tests" / "data" / "locomo_entities_gold.json"
DATA = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
TYPED = ("person", "place", "org")


def found_entities(document) -> dict[str, str]:
    """name (folded) -> (surface, type) of every mention in the rules facts."""
    extractor = RulesExtractor()
    known: list[str] = []
    found: dict[str, tuple[str, str]] = {}
    for exchange in chunk_exchanges(document):
        for fact in extractor.extract(exchange, "", known):
            for mention in fact.entities:
                surface = normalize_surface(mention.name)
                key = fold(surface)
                if key and key not in found:
                    found[key] = (surface, mention.type)
                    known.append(surface)
    return found


def score(document, gold: list[dict]) -> dict:
    found = found_entities(document)
    gold_types = {fold(normalize_surface(g["name"])): g["type"] for g in gold}
    hits = set(found) & set(gold_types)
    typed = [k for k in hits if gold_types[k] in TYPED]
    right = [k for k in typed if found[k][1] == gold_types[k]]
    return {
        "found": len(found),
        "gold": len(gold_types),
        "precision": len(hits) / len(found) if found else 1.0,
        "recall": len(hits) / len(gold_types) if gold_types else 1.0,
        "typing": len(right) / len(typed) if typed else 1.0,
        "false_positives": sorted(found[k][0] for k in set(found) - hits),
        "missed": sorted(k for k in set(gold_types) - hits),
        "mistyped": sorted(
            f"{found[k][0]}: {found[k][1]} (gold {gold_types[k]})" for k in set(typed) - set(right)
        ),
    }


def evaluate(data: Path = DATA, gold_path: Path = GOLD) -> dict[str, dict]:
    gold = json.loads(gold_path.read_text("utf-8"))["conversations"]
    documents = {d.title: d for d in load_documents(data, "locomo")}
    results = {sid: score(documents[sid], entries) for sid, entries in gold.items()}
    hits = sum(round(r["precision"] * r["found"]) for r in results.values())
    found = sum(r["found"] for r in results.values())
    gold_n = sum(r["gold"] for r in results.values())
    recalled = sum(round(r["recall"] * r["gold"]) for r in results.values())
    results["all"] = {
        "found": found,
        "gold": gold_n,
        "precision": hits / found if found else 1.0,
        "recall": recalled / gold_n if gold_n else 1.0,
    }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show", action="store_true", help="list errors")
    args = parser.parse_args()
    results = evaluate(args.data)
    for sid, r in results.items():
        typing = f", typing {r['typing']:.3f}" if "typing" in r else ""
        print(
            f"{sid}: found {r['found']}, gold {r['gold']}, precision {r['precision']:.3f}, "
            f"recall {r['recall']:.3f}{typing}"
        )
        if args.show and sid != "all":
            print(f"  false positives: {r['false_positives']}")
            print(f"  missed: {r['missed']}")
            print(f"  mistyped: {r['mistyped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
