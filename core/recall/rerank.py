"""Rerankers: reorder the fused candidates before packing.

Pluggable through the `Reranker` protocol (a `name` and `score(...)`), so the
result can say which one ran:

- `HeuristicReranker` ("heuristic", the default: no cross-encoder model ships
  offline) — a fixed, documented combination, see its docstring.
- `CrossEncoderReranker` ("cross-encoder:<folder>") — a cross-encoder exported
  to ONNX (`model.onnx` + `tokenizer.json` in a local folder, as Hugging Face
  ONNX exports lay them out), run on onnxruntime, scoring (query, fact) pairs.
- `FusionOrder` ("none") — keeps the fused order; what the benchmarks use to
  measure fusion alone.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from core.recall.timescore import interval_proximity


@dataclass(frozen=True)
class Candidate:
    """A fused candidate as the reranker sees it."""

    unit_id: str
    text: str
    network: str
    fused_score: float
    fused_rank: int
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    channels: Mapping[str, int] = field(default_factory=dict)  # channel -> rank there


@dataclass(frozen=True)
class RerankContext:
    now: datetime
    interval_start: datetime | None = None
    interval_end: datetime | None = None
    # How surely the query's time was read (core.timeparse.reading_confidence).
    interval_confidence: float = 1.0


@runtime_checkable
class Reranker(Protocol):
    name: str

    def score(
        self, query: str, candidates: Sequence[Candidate], context: RerankContext
    ) -> list[float]:
        """One score per candidate (higher is better), in the candidates' order."""
        ...


class FusionOrder:
    """No reranking: the score is the fused score."""

    name = "none"

    def score(self, query, candidates, context) -> list[float]:
        return [c.fused_score for c in candidates]


@dataclass
class HeuristicReranker:
    """score = fused + time_weight · c · proximity + recency_weight · recency

    - fused: the RRF score divided by the best RRF score of this recall (so in
      (0, 1], the top candidate 1);
    - proximity: when the query names a time, how close the fact's occurrence
      is to it (midpoint proximity, 1 at the same midpoint, 0.5 at the edge of
      the interval, 0 outside); 0 when the query names no time; c is how
      surely the time was read (1 for "4 February 2023", 0.3 for "recently"),
      so a guessed window moves facts less;
    - recency: 0.5 ** (age / half_life) with age = now − the fact's occurrence
      end (else start, else mention time); 0 for undated facts.

    The fused rank dominates: the weights move a fact a few places, they do
    not override the channels' agreement."""

    time_weight: float = 0.5
    recency_weight: float = 0.05
    half_life_days: float = 180.0
    name: str = "heuristic"

    def features(self, candidate: Candidate, context: RerankContext, top: float) -> dict:
        fused = candidate.fused_score / top if top > 0 else 0.0
        proximity = 0.0
        if context.interval_start is not None and context.interval_end is not None:
            proximity = interval_proximity(
                candidate.occurred_start,
                candidate.occurred_end,
                context.interval_start,
                context.interval_end,
            )
        when = candidate.occurred_end or candidate.occurred_start or candidate.mentioned_at
        recency = 0.0
        if when is not None:
            age_days = max((context.now - when).total_seconds(), 0.0) / 86400.0
            recency = math.pow(0.5, age_days / self.half_life_days)
        return {"fused": fused, "proximity": proximity, "recency": recency}

    def score(self, query, candidates, context) -> list[float]:
        top = max((c.fused_score for c in candidates), default=0.0)
        scores = []
        for candidate in candidates:
            f = self.features(candidate, context, top)
            scores.append(
                f["fused"]
                + self.time_weight * context.interval_confidence * f["proximity"]
                + self.recency_weight * f["recency"]
            )
        return scores


# Loaded models are shared per folder: loading costs far more than scoring.
_CROSS_ENCODERS: dict[str, object] = {}
_CROSS_ENCODERS_LOCK = threading.Lock()


class CrossEncoderReranker:
    """An ONNX cross-encoder from a local folder (nothing is fetched): the
    first logit of each (query, fact) pair is its score.

    Scores the first `max_candidates` fused candidates (query and fact text
    cut to `max_chars`); candidates past that keep their fused order below them."""

    def __init__(
        self, model_path: str | Path, max_candidates: int = 50, max_chars: int = 2000
    ) -> None:
        path = Path(model_path)
        if not (path / "model.onnx").is_file() or not (path / "tokenizer.json").is_file():
            from core.types import InvalidInputError

            raise InvalidInputError(
                f"no cross-encoder at {path}: the folder needs model.onnx and tokenizer.json"
            )
        self.path = path
        self.name = f"cross-encoder:{path.name}"
        self.max_candidates = max_candidates
        self.max_chars = max_chars
        self._model = _load_cross_encoder(path)

    def score(self, query, candidates, context) -> list[float]:
        head = list(candidates)[: self.max_candidates]
        q = query[: self.max_chars]
        pairs = [(q, c.text[: self.max_chars]) for c in head]
        head_scores = self._model.predict(pairs) if pairs else []
        floor = min(head_scores, default=0.0)
        # The tail stays below every scored candidate, in fused order.
        tail = [floor - 1.0 - i for i in range(len(candidates) - len(head))]
        return head_scores + tail


class _OnnxCrossEncoder:
    """A sequence-classification model on onnxruntime with its own tokenizer."""

    def __init__(self, path: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # scoring is part of one query: see the embedder
        options.log_severity_level = 3
        self.session = ort.InferenceSession(
            str(path / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.enable_truncation(_max_length(path))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 32) -> list[float]:
        import numpy as np

        scores: list[float] = []
        for start in range(0, len(pairs), batch_size):
            encoded = self.tokenizer.encode_batch(pairs[start : start + batch_size])
            feed = {
                "input_ids": np.array([e.ids for e in encoded], np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], np.int64),
                "token_type_ids": np.array([e.type_ids for e in encoded], np.int64),
            }
            (logits,) = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})
            scores.extend(float(row[0]) for row in np.asarray(logits).reshape(len(encoded), -1))
        return scores


def _max_length(path: Path) -> int:
    import json

    config = path / "config.json"
    if config.is_file():
        return int(json.loads(config.read_text("utf-8")).get("max_position_embeddings", 512))
    return 512


def _load_cross_encoder(path: Path):
    key = str(path.resolve())
    with _CROSS_ENCODERS_LOCK:
        model = _CROSS_ENCODERS.get(key)
        if model is None:
            model = _OnnxCrossEncoder(Path(key))
            _CROSS_ENCODERS[key] = model
        return model
