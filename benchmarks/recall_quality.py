"""Recall quality on the LoCoMo development split: evidence recall per category.

Each conversation is ingested as its own bank (public API only: Engine,
create_bank, Bank.ingest, Bank.recall), in `rules` and `verbatim` mode. For
every question of categories 1-4 with evidence, recall runs with the question
and a token budget, and

    evidence recall = |evidence ∩ source ids of the returned facts| / |evidence|

is averaged per category and over all questions of categories 1-4, at 1,024
and 4,096 tokens, for each channel alone, semantic+BM25 fused (RRF, no
rerank) and the full pipeline. The banks are built as `engram ingest` builds
them: the observation jobs run after the ingest, so the entity profiles are in
the bank. "full" recalls every network (profiles included: the bank a user
has); "full-facts" the three fact networks only (the figure before profiles
were built here). Evidence ids are normalised as the split's
README says (packed lists split, malformed ids repaired, unknown turns
dropped, questions left without evidence skipped).

    .venv/bin/python benchmarks/recall_quality.py [--modes verbatim rules] [--limit N]

Banks are kept in benchmarks/out/quality-home and reused by later runs
(--fresh re-ingests). Prints a table per mode and writes JSON and Markdown
to benchmarks/out/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import Engine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
OUT = ROOT / "benchmarks" / "out"
CATEGORIES = (1, 2, 3, 4)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BUDGETS = (1024, 4096)

# name -> recall options. Channels alone and the hybrid baseline keep their
# fused order (reranker "none"), embed the query as it is and have no speaker
# focus; the full pipeline is the default recall.
PLAIN = {
    "reranker": "none",
    "settings": {"recall.speaker_focus": 0.0, "recall.embed_without_speakers": False},
}
CONFIGS: dict[str, dict] = {
    "semantic": {"channels": ["semantic"], **PLAIN},
    "lexical": {"channels": ["lexical"], **PLAIN},
    "graph": {"channels": ["graph"], **PLAIN},
    "temporal": {"channels": ["temporal"], **PLAIN},
    "semantic+bm25": {"channels": ["semantic", "lexical"], **PLAIN},
    "full": {},
    "full-facts": {"networks": ["world", "experience", "opinion"]},
}


def level_for(budget: int) -> str:
    # ~25 tokens a turn: 4,096 tokens need more candidates than "mid" gives.
    return "mid" if budget <= 1024 else "high"


# -- evidence -------------------------------------------------------------------------

_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def normalise_evidence(raw: list, turn_ids: set[str]) -> list[str]:
    """Split packed entries, repair malformed ids, drop ids of turns that do not exist."""
    out: list[str] = []
    for entry in raw:
        for session, turn in _ID.findall(str(entry)):
            dia = f"D{int(session)}:{int(turn)}"
            if dia in turn_ids and dia not in out:
                out.append(dia)
    return out


def questions(sample: dict) -> list[dict]:
    turn_ids = {
        t["dia_id"]
        for key, value in sample["conversation"].items()
        if re.fullmatch(r"session_\d+", key)
        for t in value
    }
    out = []
    for qa in sample["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = normalise_evidence(qa.get("evidence") or [], turn_ids)
        if evidence:
            out.append(
                {"question": qa["question"], "category": qa["category"], "evidence": evidence}
            )
    return out


# -- ingest ---------------------------------------------------------------------------


def ingest(bank, document, mode: str, profiles: bool = True) -> dict:
    """Bank.ingest, then the observation jobs as `engram ingest` runs them
    (`profiles`); a plain verbatim loader (each turn one unit) where Bank.ingest
    is missing, so the benchmark runs on code before retain."""
    t0 = time.perf_counter()
    if hasattr(bank, "ingest"):
        report = bank.ingest(document, mode=mode)
        how = "Bank.ingest"
        detail = {k: v for k, v in vars(report).items() if isinstance(v, int | float | str)}
        if profiles and bank.pending_jobs():
            jobs = bank.process_jobs()
            detail["observations"] = jobs.observations_written
    else:
        if mode != "verbatim":
            raise SystemExit(f"Bank.ingest is not available yet: cannot ingest in {mode} mode")
        from core import NewUnit

        bank.add_units(
            [
                NewUnit(
                    text=f"{turn.speaker}: {turn.text}",
                    source_ids=(turn.id,),
                    occurred_start=turn.timestamp,
                    mentioned_at=turn.timestamp,
                )
                for turn in document.turns
            ]
        )
        how, detail = "add_units (fallback)", {}
    return {"how": how, "seconds": time.perf_counter() - t0, "units": bank.count(), **detail}


# -- measure --------------------------------------------------------------------------


class RememberingEmbedder:
    """The engine's embedder, remembering each text's vector and token count.

    Every question is recalled 12 times (6 rankings x 2 budgets); embedding it
    once is the same vector, and the measure is about what is recalled, not how
    fast (benchmarks/recall_speed.py measures that)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._vectors: dict[str, object] = {}
        self._tokens: dict[str, int] = {}

    def embed(self, texts, batch_size: int = 64):
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.inner.embed(missing, batch_size), strict=True))
        if not texts:
            return self.inner.embed([])
        return np.stack([self._vectors[t] for t in texts])

    def embed_one(self, text: str):
        return self.embed([text])[0]

    def count_tokens(self, text: str) -> int:
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts) -> list[int]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._tokens]
        if missing:
            self._tokens.update(zip(missing, self.inner.count_tokens_batch(missing), strict=True))
        return [self._tokens[t] for t in texts]


def run_mode(
    mode: str,
    samples: list[dict],
    documents: dict,
    configs: dict,
    limit: int | None,
    home: Path,
    fresh: bool,
    embedder=None,
    profiles: bool = True,
):
    scores: dict[tuple[str, int], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    latency: dict[str, list[float]] = defaultdict(list)
    banks_info = {}
    per_question: list[dict] = []
    if embedder is None:
        from core.providers.embedder import shared_embedder

        embedder = shared_embedder()
    with Engine(home, embedder=RememberingEmbedder(embedder)) as engine:
        existing = {b.name for b in engine.banks()}
        for sample in samples:
            sid = sample["sample_id"]
            name = f"{sid}-{mode}"
            if name in existing and not fresh:
                bank = engine.open_bank(name)
                banks_info[sid] = {"how": "reused", "units": bank.count()}
            else:
                if name in existing:
                    engine.delete_bank(name)
                bank = engine.create_bank(name)
                banks_info[sid] = ingest(bank, documents[sid], mode, profiles)
            qs = questions(sample)[:limit] if limit else questions(sample)
            print(f"  {sid}: {banks_info[sid]['units']} units, {len(qs)} questions", flush=True)
            for q in qs:
                evidence = set(q["evidence"])
                for name, options in configs.items():
                    for budget in BUDGETS:
                        result = bank.recall(
                            q["question"],
                            budget_tokens=budget,
                            level=level_for(budget),
                            count_access=False,
                            **options,
                        )
                        got = result.source_ids & evidence
                        scores[(name, budget)][q["category"]].append(len(got) / len(evidence))
                        per_question.append(
                            {
                                "conversation": sid,
                                "question": q["question"],
                                "category": q["category"],
                                "evidence": q["evidence"],
                                "config": name,
                                "budget": budget,
                                "found": sorted(got),
                            }
                        )
                        latency[name].append(result.trace.to_dict()["timings_ms"]["total"])
            bank.close()
    table = {}
    for (name, budget), by_cat in scores.items():
        row = {str(c): statistics.fmean(v) for c, v in sorted(by_cat.items())}
        row["1-4"] = statistics.fmean([x for v in by_cat.values() for x in v])
        row["n"] = sum(len(v) for v in by_cat.values())
        table.setdefault(name, {})[str(budget)] = row
    return {
        "mode": mode,
        "banks": banks_info,
        "recall": table,
        "median_ms": {k: statistics.median(v) for k, v in latency.items()},
        "per_question": per_question,
    }


def print_table(result: dict) -> None:
    print(
        f"\nmode: {result['mode']}  (evidence recall; categories 1 multi-hop, 2 temporal, "
        "3 open-domain, 4 single-hop)"
    )
    header = f"{'ranking':<15}" + "".join(
        f"| {f'cat {c} @{b}':>11} " for b in BUDGETS for c in (*CATEGORIES, "1-4")
    )
    print(header)
    print("-" * len(header))
    for name, by_budget in result["recall"].items():
        cells = ""
        for b in BUDGETS:
            row = by_budget[str(b)]
            cells += "".join(
                f"| {row.get(str(c), float('nan')):>11.3f} " for c in (*CATEGORIES, "1-4")
            )
        print(f"{name:<15}{cells}")


def markdown(result: dict) -> str:
    lines = [
        f"mode **{result['mode']}**",
        "",
        "| ranking | "
        + " | ".join(f"{c}@{b}" for b in BUDGETS for c in ("c1", "c2", "c3", "c4", "1-4"))
        + " |",
        "|---|" + "---|" * (5 * len(BUDGETS)),
    ]
    for name, by_budget in result["recall"].items():
        cells = [
            f"{by_budget[str(b)].get(c, float('nan')):.3f}"
            for b in BUDGETS
            for c in ("1", "2", "3", "4", "1-4")
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--modes", nargs="+", default=["verbatim", "rules"])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--conversations", nargs="+", help="sample ids (default: all)")
    parser.add_argument("--limit", type=int, help="questions per conversation (for quick runs)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--home", type=Path, default=OUT / "quality-home", help="where the banks are kept"
    )
    parser.add_argument("--fresh", action="store_true", help="re-ingest banks kept from a run")
    parser.add_argument(
        "--no-profiles",
        action="store_true",
        help="leave the observation jobs queued (no entity profiles in the banks)",
    )
    parser.add_argument(
        "--embedder",
        choices=("onnx", "sentence-transformers"),
        default="onnx",
        help="the engine's (default) or the one before issue 14 (needs torch), for comparison",
    )
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="recall settings for every ranking, e.g. recall.weight_graph=0.5",
    )
    args = parser.parse_args(argv)

    from core.retain.importers import load_documents

    samples = json.loads(args.data.read_text("utf-8"))
    if args.conversations:
        samples = [s for s in samples if s["sample_id"] in args.conversations]
    documents = {d.title: d for d in load_documents(args.data, "locomo")}
    overrides = dict(item.split("=", 1) for item in args.set)
    configs = {
        name: {**CONFIGS[name], "settings": {**CONFIGS[name].get("settings", {}), **overrides}}
        for name in args.configs
    }
    args.out.mkdir(parents=True, exist_ok=True)
    embedder = None
    if args.embedder == "sentence-transformers":
        from benchmarks.embedder_compare import SentenceTransformersEmbedder

        embedder = SentenceTransformersEmbedder()
    results = []
    for mode in args.modes:
        print(f"mode {mode}:", flush=True)
        t0 = time.perf_counter()
        result = run_mode(
            mode,
            samples,
            documents,
            configs,
            args.limit,
            args.home,
            args.fresh,
            embedder,
            not args.no_profiles,
        )
        result["seconds"] = time.perf_counter() - t0
        results.append(result)
        print_table(result)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = args.out / f"recall_quality-{stamp}.json"
    path.write_text(json.dumps(results, indent=2), "utf-8")
    (args.out / f"recall_quality-{stamp}.md").write_text(
        "\n\n".join(markdown(r) for r in results) + "\n", "utf-8"
    )
    print(f"\nsaved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
