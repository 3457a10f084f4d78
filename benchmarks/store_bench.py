"""Store benchmark: 100,000 units with precomputed vectors.

Measures insert throughput, bank open time, a 100-row page sorted by
occurrence time and filtered by network, vector top-50 and BM25 top-50 —
the last two also against brute-force numpy cosine and the `rank-bm25`
package, measured in the same run on the same data.

    .venv/bin/python benchmarks/store_bench.py [--units 100000] [--queries 50]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from core import Engine, Network, NewUnit

WORDS = (
    "alice bob carol dave erin frank grace heidi ivan judy hiking paris berlin lisbon "
    "coffee project atlas beacon launch review design budget contract meeting travel "
    "kubernetes postgres database outage deadline baby move office garden concert book "
    "painting camping support group adoption school marathon recipe guitar piano dog cat"
).split()


def make_units(n: int, dim: int, seed: int = 1) -> tuple[list[NewUnit], np.ndarray, list[str]]:
    rng = random.Random(seed)
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    networks = [Network.WORLD, Network.EXPERIENCE, Network.OPINION, Network.OBSERVATION]
    base = datetime(2022, 1, 1)
    texts, units = [], []
    for i in range(n):
        text = " ".join(rng.choices(WORDS, k=rng.randint(8, 20))) + f" fact{i}"
        texts.append(text)
        units.append(
            NewUnit(
                text,
                networks[i % 4],
                occurred_start=base + timedelta(minutes=rng.randrange(0, 2_000_000)),
                vector=tuple(vectors[i]),
            )
        )
    return units, vectors, texts


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

    units, vectors, texts = make_units(args.units, SpecOnly.dim)
    rows = []
    with tempfile.TemporaryDirectory() as home:
        engine = Engine(Path(home), embedder=SpecOnly())
        bank = engine.create_bank("bench")
        t = time.perf_counter()
        bank.add_units(units)
        insert_s = time.perf_counter() - t
        rows.append(("insert", f"{args.units / insert_s:,.0f} units/s", f"{insert_s:.1f} s total"))
        bank.close()

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
            vectors[rng.integers(0, args.units)] + rng.normal(0, 0.05, SpecOnly.dim)
            for _ in range(args.queries)
        ]
        qi = iter(queries * 3)
        v_med, v_p95 = median_ms(lambda: bank.store.vectors.search(next(qi), 50), args.queries)
        matrix = vectors

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

        from rank_bm25 import BM25Okapi

        t = time.perf_counter()
        bm25 = BM25Okapi([text.split() for text in texts])
        build_s = time.perf_counter() - t

        def rank_bm25_top50() -> None:
            scores = bm25.get_scores(next(ti).split())
            np.argpartition(-scores, 50)[:50]

        r_med, _ = median_ms(rank_bm25_top50, min(args.queries, 20))
        rows.append(
            (
                "BM25 top-50 (Tantivy)",
                f"median {b_med:.2f} ms, p95 {b_p95:.2f}",
                f"rank-bm25 {r_med:.0f} ms (build {build_s:.0f} s), ratio {b_med / r_med:.4f}x",
            )
        )
        bank.close()
        engine.close()

    print(f"store benchmark, {args.units:,} units, {args.queries} queries each")
    for name, value, note in rows:
        print(f"  {name:<32} {value:<28} {note}")


if __name__ == "__main__":
    main()
