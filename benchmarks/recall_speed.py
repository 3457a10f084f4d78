"""Recall latency per stage and end to end at 1k, 10k and 100k units.

The corpus is generated: template sentences about a few hundred people,
places and activities over three years, embedded with the real model, with
real entities (mentions) and links laid the way retain lays them (both
directions stored): entity links to the 20 previous units mentioning the same
entity, temporal links to the 10 nearest units in time (weight exp(-gap/24h)),
semantic links to the 5 most similar units at cosine >= 0.7 within a window.

For each size, idle and with one core busy (a busy-loop process the script
starts and stops itself): median and p95 of the end-to-end time of
`Bank.recall` measured around the call, query embedding included
("end_to_end"), and as extra columns every stage in the recall trace (the
query embedding "embed", and "total_excluding_embedding"), cross-encoder off,
default heuristic reranker; plus brute-force numpy cosine top-k over the same
vectors in the same run, and the ratio of the recall without embedding to it.

    .venv/bin/python benchmarks/recall_speed.py [--sizes 1000 10000 100000] [--queries 60]

Vectors and banks are cached under benchmarks/out/ (delete them to rebuild).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from benchmarks.busy import CONDITIONS, condition  # noqa: E402
from core import Engine, Network, NewUnit  # noqa: E402

OUT = Path(__file__).resolve().parent / "out"
START = datetime(2021, 1, 4, 9)
SESSION = 20  # units per session (one date)

FIRST = (
    "Alice Bruno Carmen Dmitri Elena Farid Greta Hiro Ines Jonas Keiko Lars Maya Nadia Omar "
    "Priya Quentin Rosa Sami Tomas Ulla Victor Wen Xenia Yusuf Zara Anton Bea Cyril Dana "
    "Emil Fiona Gustav Hana Ivan Julia Kofi Lena Marco Nina Oskar Paula Rafael Sofia Theo "
    "Uma Vera Willem Yara Zeno"
).split()
LAST = "Moreau Tanaka Okafor Lindqvist Rossi Novak Haddad Silva Kowalski Berg".split()
PLACES = (
    "Lisbon Kyoto Nairobi Oslo Lima Krakow Hanoi Austin Porto Tbilisi Quebec Dakar Seville "
    "Bergen Cusco Utrecht Malmo Ghent Bologna Riga the city library the climbing gym the "
    "farmers market the harbour the community garden the old theatre the river park"
).split(" ")
ACTIVITIES = [
    "started a pottery class",
    "ran a charity half marathon",
    "adopted a rescue dog",
    "painted a sunrise over the water",
    "went camping in the mountains",
    "gave a talk about renewable energy",
    "finished reading a novel about migration",
    "joined a choir",
    "volunteered at a food bank",
    "planned a surprise birthday party",
    "learned to bake sourdough bread",
    "fixed an old bicycle",
    "visited a modern art museum",
    "started a new job as a nurse",
    "moved into a flat near the station",
    "took the kids to see dinosaurs",
    "signed up for a photography course",
    "hiked to a glacier",
    "wrote a letter to an old friend",
    "repaired the garden fence",
    "organised a neighbourhood cleanup",
    "tried surfing for the first time",
    "sold a painting at a local fair",
    "cooked a traditional family recipe",
    "built a small wooden boat",
    "won a chess tournament",
    "applied to an adoption agency",
    "celebrated ten years of marriage",
    "recorded a song with friends",
    "went to a support group meeting",
]
REASONS = [
    "because it helped with stress",
    "to raise money for the shelter",
    "after a long and difficult winter",
    "so that the children could learn something new",
    "with a lot of encouragement from family",
    "",
    "",
    "",
]
QUERIES = [
    "What did {p} do at {place}?",
    "When did {p} go camping?",
    "Who started a pottery class?",
    "What activities has {p} done with friends?",
    "What did {p} do in June 2022?",
    "Where did {p} volunteer last month?",
    "Why did {p} start running?",
    "Which events did {p} attend in 2023?",
    "What does {p} do to relax?",
    "Did anyone adopt a dog in spring 2021?",
]


def people(rng: random.Random) -> list[str]:
    return [f"{f} {rng.choice(LAST)}" for f in FIRST for _ in range(4)]


def corpus(n: int, seed: int = 7):
    """n units: (text, network, when, entity names), in time order."""
    rng = random.Random(seed)
    persons = people(rng)
    days = 3 * 365
    rows = []
    for i in range(n):
        session = i // SESSION
        when = START + timedelta(days=days * session * SESSION / max(n, 1), minutes=i % SESSION)
        p1 = rng.choice(persons)
        activity = rng.choice(ACTIVITIES)
        place = rng.choice(PLACES)
        reason = rng.choice(REASONS)
        entities = [p1, place]
        kind = rng.random()
        if kind < 0.15:
            text = f"I went with {p1} to {place}, where {p1.split()[0]} {activity} {reason}"
            network = Network.EXPERIENCE
        elif kind < 0.2:
            text = f"I think {p1} {activity.replace('started', 'should start')} {reason}"
            network = Network.OPINION
        else:
            p2 = rng.choice(persons)
            entities.append(p2)
            text = f"{p1} {activity} with {p2} at {place} {reason}"
            network = Network.WORLD
        rows.append((" ".join(text.split()) + ".", network, when, entities))
    return rows


def vectors_for(texts: list[str], embedder, cache: Path) -> np.ndarray:
    if cache.exists():
        vectors = np.load(cache)
        if len(vectors) >= len(texts):
            return vectors[: len(texts)]
    t0 = time.perf_counter()
    vectors = embedder.embed(texts, batch_size=256)
    print(f"  embedded {len(texts)} sentences in {time.perf_counter() - t0:.0f} s", flush=True)
    np.save(cache, vectors)
    return vectors


def plan_links(rows, vectors: np.ndarray, ids: list[str]):
    """Link pairs (a, b, kind, weight, entity) as retain would lay them."""
    pairs: dict[tuple[str, str, str, str | None], float] = {}
    by_entity: dict[str, list[int]] = {}
    for i, (_, _, _, entities) in enumerate(rows):
        for e in set(entities):
            previous = by_entity.setdefault(e, [])
            for j in previous[-20:]:
                pairs[(ids[j], ids[i], "entity", e)] = 1.0
            previous.append(i)
    times = np.array([r[2].timestamp() / 3600.0 for r in rows])
    for i in range(len(rows)):
        lo, hi = max(0, i - 5), min(len(rows), i + 6)
        for j in range(lo, hi):
            gap = abs(times[j] - times[i])
            if j != i and gap <= 72:
                key = (ids[min(i, j)], ids[max(i, j)], "temporal", None)
                pairs[key] = float(np.exp(-gap / 24.0))
    window = 2000
    for start in range(0, len(rows), window):
        block = vectors[start : start + window]
        sims = block @ block.T
        np.fill_diagonal(sims, -1)
        top = np.argsort(-sims, axis=1)[:, :5]
        for r in range(len(block)):
            for c in top[r]:
                if sims[r, c] >= 0.7:
                    a, b = sorted((ids[start + r], ids[start + c]))
                    pairs[(a, b, "semantic", None)] = float(sims[r, c])
    return pairs


def build_bank(engine: Engine, n: int, rows, vectors: np.ndarray):
    name = f"speed-{n}"
    if any(b.name == name for b in engine.banks()):
        bank = engine.open_bank(name)
        if bank.count() == n:
            return bank
        bank.close()
        engine.delete_bank(name)
    t0 = time.perf_counter()
    bank = engine.create_bank(name)
    ids = [f"s{i:07d}" for i in range(n)]
    entity_ids = {e: f"e{k:05d}" for k, e in enumerate(sorted({e for r in rows for e in r[3]}))}
    bank.add_units(
        [
            NewUnit(
                text=text,
                network=network,
                occurred_start=when,
                mentioned_at=when,
                source_ids=(f"turn-{i}",),
                entity_ids=tuple(dict.fromkeys(entity_ids[e] for e in entities)),
                vector=tuple(vectors[i].tolist()),
                id=ids[i],
            )
            for i, (text, network, when, entities) in enumerate(rows)
        ]
    )
    pairs = plan_links(rows, vectors, ids)
    source, target, kind, weight, entity = [], [], [], [], []
    for (a, b, k, e), w in pairs.items():
        for s, t in ((a, b), (b, a)):
            source.append(s)
            target.append(t)
            kind.append(k)
            weight.append(w)
            entity.append(entity_ids.get(e) if e else None)
    table = pa.table(
        {
            "source": source,
            "target": target,
            "kind": kind,
            "weight": weight,
            "entity_id": pa.array(entity, pa.string()),
        }
    )
    now = datetime(2024, 1, 1)
    entities_table = pa.table(
        {
            "id": list(entity_ids.values()),
            "name": list(entity_ids),
            "now": [now] * len(entity_ids),
        }
    )
    with bank.store.transaction() as tx:
        tx.con.register("_links", table)
        tx.con.execute(
            "INSERT INTO links SELECT source, target, kind, weight, entity_id, NULL FROM _links"
        )
        tx.con.unregister("_links")
        tx.con.register("_entities", entities_table)
        tx.con.execute(
            "INSERT INTO entities (id, name, type, aliases, status, created_at, updated_at)"
            " SELECT id, name, 'other', [], 'active', now, now FROM _entities"
        )
        tx.con.unregister("_entities")
    bank.store.vectors.compact()
    bank.store.checkpoint()
    print(
        f"  built bank of {n} units, {len(source)} link rows in {time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    return bank


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def recall_times(bank, queries: list[str], budget: int) -> dict[str, list[float]]:
    """Per query: the wall time around Bank.recall and every stage of its trace (ms)."""
    stages: dict[str, list[float]] = {}
    for q in queries:
        t0 = time.perf_counter()
        result = bank.recall(q, budget_tokens=budget, count_access=False)
        stages.setdefault("end_to_end", []).append((time.perf_counter() - t0) * 1000)
        for stage, ms in result.trace.to_dict()["timings_ms"].items():
            stages.setdefault(stage, []).append(ms)
    return stages


def measure(bank, vectors: np.ndarray, queries: list[str], budget: int) -> dict:
    first = bank.recall(queries[0], budget_tokens=budget, count_access=False)
    links = first.trace.to_dict()["channels"]["graph"].get("links", {})
    for q in queries[1:4]:  # warm caches and the thread pool
        bank.recall(q, budget_tokens=budget, count_access=False)
    by_condition = {}
    for name in CONDITIONS:
        with condition(name):
            by_condition[name] = recall_times(bank, queries, budget)
    stages = by_condition["idle"]
    query_vectors = bank.engine.embedder.embed(queries)
    numpy_ms = []
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    for qv in query_vectors:
        t0 = time.perf_counter()
        sims = matrix @ qv
        k = min(50, len(sims) - 1)
        top = np.argpartition(-sims, k)[:k]
        top[np.argsort(-sims[top])]
        numpy_ms.append((time.perf_counter() - t0) * 1000)
    table = {
        stage: {"median": statistics.median(v), "p95": percentile(v, 95)}
        for stage, v in stages.items()
    }
    for name in CONDITIONS[1:]:
        for stage in ("end_to_end", "embed", "total_excluding_embedding"):
            v = by_condition[name][stage]
            table[f"{stage} ({name})"] = {"median": statistics.median(v), "p95": percentile(v, 95)}
    # Reading the links into memory happens once per opened bank (first recall).
    table["first_recall_links_load"] = {"median": links.get("ms", 0.0), "p95": links.get("ms", 0.0)}
    table["numpy_topk"] = {"median": statistics.median(numpy_ms), "p95": percentile(numpy_ms, 95)}
    table["ratio_vs_numpy"] = {
        "median": table["total_excluding_embedding"]["median"] / table["numpy_topk"]["median"],
        "p95": table["total_excluding_embedding"]["p95"] / table["numpy_topk"]["p95"],
    }
    return table


STAGES = [
    "end_to_end",
    "end_to_end (busy)",
    "embed",
    "embed (busy)",
    "total_excluding_embedding (busy)",
    "semantic",
    "lexical",
    "graph",
    "temporal",
    "channels",
    "fusion",
    "load",
    "rerank",
    "packing",
    "total_excluding_embedding",
    "numpy_topk",
    "ratio_vs_numpy",
    "first_recall_links_load",
]


def print_table(results: dict[int, dict]) -> None:
    sizes = sorted(results)
    print(
        f"\n{'stage (ms)':<28}" + "".join(f"| {f'{n:,} median':>15} | {'p95':>8} " for n in sizes)
    )
    for stage in STAGES:
        cells = ""
        for n in sizes:
            row = results[n].get(stage)
            cells += (
                f"| {row['median']:>15.2f} | {row['p95']:>8.2f} "
                if row
                else f"| {'-':>15} | {'-':>8} "
            )
        print(f"{stage:<28}{cells}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--budget", type=int, default=1024)
    parser.add_argument("--home", type=Path, default=OUT / "speed-home")
    parser.add_argument(
        "--embedder",
        choices=("onnx", "sentence-transformers"),
        default="onnx",
        help="the engine's (default) or the one before issue 14, for comparison",
    )
    args = parser.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    biggest = max(args.sizes)
    rows = corpus(biggest)
    rng = random.Random(11)
    persons = people(random.Random(7))
    queries = [
        rng.choice(QUERIES).format(p=rng.choice(persons).split()[0], place=rng.choice(PLACES))
        for _ in range(args.queries)
    ]
    results = {}
    embedder = None
    if args.embedder == "sentence-transformers":
        from benchmarks.embedder_compare import SentenceTransformersEmbedder

        embedder = SentenceTransformersEmbedder()
    with Engine(args.home, embedder=embedder) as engine:
        vectors = vectors_for([r[0] for r in rows], engine.embedder, OUT / "speed-vectors.npy")
        for n in sorted(args.sizes):
            # Each size spreads over the same three years; its texts (and so its
            # vectors) are the first n of the biggest corpus.
            sub = corpus(n)
            sub_vectors = vectors[:n]
            bank = build_bank(engine, n, sub, sub_vectors)
            results[n] = measure(bank, sub_vectors, queries, args.budget)
            print(
                f"  {n}: median end to end {results[n]['end_to_end']['median']:.1f} ms idle, "
                f"{results[n]['end_to_end (busy)']['median']:.1f} ms with one core busy",
                flush=True,
            )
            bank.close()
    print_table(results)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = OUT / f"recall_speed-{stamp}.json"
    path.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=2), "utf-8")
    print(f"\nsaved {path}  (cores: {os.cpu_count()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
