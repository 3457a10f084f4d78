"""Store benchmark: 100,000 (or 1,000,000) units with precomputed vectors.

Measures insert throughput (in batches of 50,000, as an import streams them),
bank open time, a 100-row page sorted by occurrence time and filtered by
network, vector top-50 and BM25 top-50 — the last two also against brute-force
numpy cosine and the `rank-bm25` package (up to 200,000 units: past that it
needs more memory than the bank), measured in the same run on the same data —
then a whole `Bank.recall` with the real model embedding the query, and the
process's memory (resident now and at its peak) after each phase.

The units are random word salad with random unit vectors: no entities or
links, so recall's graph channel has nothing to spread over and the semantic
channel searches vectors no sentence would have. It measures the stores at
that size, not recall quality.

    .venv/bin/python benchmarks/store_bench.py [--units 100000] [--queries 50]
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from core import Engine, Network, NewUnit

RANK_BM25_MAX = 200_000
WORDS = (
    "alice bob carol dave erin frank grace heidi ivan judy hiking paris berlin lisbon "
    "coffee project atlas beacon launch review design budget contract meeting travel "
    "kubernetes postgres database outage deadline baby move office garden concert book "
    "painting camping support group adoption school marathon recipe guitar piano dog cat"
).split()


BATCH = 50_000


def make_units(
    start: int, n: int, dim: int, seed: int = 1
) -> tuple[list[NewUnit], np.ndarray, list[str]]:
    """Units start..start+n (the same ones whatever the batch size)."""
    rng = random.Random(seed * 1_000_003 + start)
    vectors = np.random.default_rng([seed, start]).standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    networks = [Network.WORLD, Network.EXPERIENCE, Network.OPINION, Network.OBSERVATION]
    base = datetime(2022, 1, 1)
    texts, units = [], []
    for i in range(start, start + n):
        text = " ".join(rng.choices(WORDS, k=rng.randint(8, 20))) + f" fact{i}"
        texts.append(text)
        units.append(
            NewUnit(
                text,
                networks[i % 4],
                occurred_start=base + timedelta(minutes=rng.randrange(0, 2_000_000)),
                vector=tuple(vectors[i - start]),
            )
        )
    return units, vectors, texts


def memory() -> str:
    """Resident memory now and the process's peak so far."""
    now_kb = next(
        int(line.split()[1])
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmRSS:")
    )
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return f"{now_kb / 2**20:.2f} GiB resident, peak {peak_kb / 2**20:.2f} GiB"


def median_ms(fn, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()

    class SpecOnly:  # vectors are precomputed: no model needs to load
        name, dim = "sentence-transformers/all-MiniLM-L6-v2", 384

    matrix = np.zeros((args.units, SpecOnly.dim), np.float32)
    texts: list[str] = []
    rows = []
    with tempfile.TemporaryDirectory() as home:
        engine = Engine(Path(home), embedder=SpecOnly())
        bank = engine.create_bank("bench")
        insert_s = 0.0
        for start in range(0, args.units, BATCH):
            units, vectors, batch_texts = make_units(
                start, min(BATCH, args.units - start), SpecOnly.dim
            )
            matrix[start : start + len(units)] = vectors
            texts += batch_texts
            t = time.perf_counter()
            bank.add_units(units)
            insert_s += time.perf_counter() - t
            del units
        rows.append(("insert", f"{args.units / insert_s:,.0f} units/s", f"{insert_s:.1f} s total"))
        rows.append(("memory after insert", memory(), "(the vectors and texts held here too)"))
        bank.close()
        folder = sum(f.stat().st_size for f in Path(home).rglob("*") if f.is_file())
        rows.append(("bank on disk", f"{folder / 2**30:.2f} GiB", "DuckDB + LanceDB + Tantivy"))

        t = time.perf_counter()
        bank = engine.open_bank("bench")
        rows.append(("open", f"{(time.perf_counter() - t) * 1000:.0f} ms", "incl. agreement check"))

        offsets = [
            random.Random(2).randrange(0, args.units // 4 - 100) for _ in range(args.queries)
        ]
        it = iter(offsets * 2)
        med, p95 = median_ms(
            lambda: bank.units(Network.OPINION, order="occurred_start", offset=next(it), limit=100),
            args.queries,
        )
        rows.append(("page of 100 (network, by time)", f"median {med:.1f} ms", f"p95 {p95:.1f} ms"))

        rng = np.random.default_rng(3)
        queries = [
            matrix[rng.integers(0, args.units)] + rng.normal(0, 0.05, SpecOnly.dim)
            for _ in range(args.queries)
        ]
        qi = iter(queries * 3)
        v_med, v_p95 = median_ms(lambda: bank.store.vectors.search(next(qi), 50), args.queries)

        def numpy_top50() -> None:
            q = next(qi).astype(np.float32)
            scores = matrix @ (q / np.linalg.norm(q))
            np.argpartition(-scores, 50)[:50]

        n_med, _ = median_ms(numpy_top50, args.queries)
        rows.append(
            (
                "vector top-50 (LanceDB)",
                f"median {v_med:.1f} ms, p95 {v_p95:.1f}",
                f"numpy brute force {n_med:.1f} ms, ratio {v_med / n_med:.2f}x",
            )
        )

        word_rng = random.Random(4)
        text_queries = [" ".join(word_rng.sample(WORDS, 3)) for _ in range(args.queries)]
        ti = iter(text_queries * 3)
        b_med, b_p95 = median_ms(lambda: bank.store.lexical.search(next(ti), 50), args.queries)

        if args.units <= RANK_BM25_MAX:
            from rank_bm25 import BM25Okapi

            t = time.perf_counter()
            bm25 = BM25Okapi([text.split() for text in texts])
            build_s = time.perf_counter() - t

            def rank_bm25_top50() -> None:
                scores = bm25.get_scores(next(ti).split())
                np.argpartition(-scores, 50)[:50]

            r_med, _ = median_ms(rank_bm25_top50, min(args.queries, 20))
            peer = f"rank-bm25 {r_med:.0f} ms (build {build_s:.0f} s), ratio {b_med / r_med:.4f}x"
            del bm25
        else:
            peer = f"rank-bm25 not run past {RANK_BM25_MAX:,} units"
        rows.append(("BM25 top-50 (Tantivy)", f"median {b_med:.2f} ms, p95 {b_p95:.2f}", peer))
        texts, matrix = [], None  # freed: what the recall below holds is the bank's
        bank.close()
        engine.close()

        # A whole recall, as an agent asks it: the real model embeds the query.
        t = time.perf_counter()
        engine = Engine(Path(home))
        bank = engine.open_bank("bench")
        bank.prepare_recall()
        rows.append(
            (
                "open + prepare_recall",
                f"{time.perf_counter() - t:.1f} s",
                "the link graph and the vectors read",
            )
        )
        questions = [f"What about the {' '.join(word_rng.sample(WORDS, 2))}?" for _ in range(20)]
        bank.recall(questions[0], 1024)
        stages: dict[str, list[float]] = {}
        index = ""
        for question in questions:
            trace = bank.recall(question, 1024, count_access=False).trace
            for stage, ms in trace.timings_ms.items():
                stages.setdefault(stage, []).append(ms)
            index = trace.channels["semantic"].details.get("index", "")
        med = {k: statistics.median(v) for k, v in stages.items()}
        rows.append(
            (
                "recall (1,024 tokens)",
                f"median {med['total']:.0f} ms",
                ", ".join(f"{k} {v:.1f}" for k, v in sorted(med.items(), key=lambda kv: -kv[1])),
            )
        )
        rows.append(("memory after recall", memory(), ""))
        rows.append(("semantic index", index, ""))
        bank.close()
        engine.close()

    print(f"store benchmark, {args.units:,} units, {args.queries} queries each")
    for name, value, note in rows:
        print(f"  {name:<32} {value:<28} {note}")


if __name__ == "__main__":
    main()
