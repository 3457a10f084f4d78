"""Rerankers: the heuristic's documented formula, and the real CrossEncoder path
with a tiny randomly initialised cross-encoder saved to tmp_path."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np
import pytest

from core import NewUnit
from core.recall import Candidate, CrossEncoderReranker, HeuristicReranker, RerankContext
from core.recall.timescore import interval_proximity


def test_heuristic_formula():
    now = datetime(2024, 1, 1)
    ranker = HeuristicReranker(time_weight=0.5, recency_weight=0.1, half_life_days=10)
    candidates = [
        Candidate("a", "x", "world", 0.03, 1, occurred_start=datetime(2023, 12, 22)),
        Candidate("b", "y", "world", 0.02, 2, occurred_start=datetime(2023, 6, 15)),
        Candidate("c", "z", "world", 0.01, 3),
    ]
    context = RerankContext(now, datetime(2023, 6, 1), datetime(2023, 7, 1))
    scores = ranker.score("q", candidates, context)
    assert scores[0] == pytest.approx(1.0 + 0.1 * 0.5)  # 10 days old: half recency
    june = interval_proximity(
        datetime(2023, 6, 15), None, datetime(2023, 6, 1), datetime(2023, 7, 1)
    )
    assert june == pytest.approx(1 / (1 + 1 / 15))  # a day off the midpoint (16 June)
    assert scores[1] == pytest.approx(2 / 3 + 0.5 * june + 0.1 * 0.5 ** (200 / 10))
    assert scores[2] == pytest.approx(1 / 3)  # undated: fused share only
    assert scores[1] > scores[0]  # the query's month lifts b over a


def test_interval_proximity_edges():
    q = (datetime(2023, 6, 1), datetime(2023, 7, 1))
    assert interval_proximity(None, None, *q) == 0.0
    assert interval_proximity(datetime(2023, 7, 1), None, *q) == 0.0  # half-open end
    assert interval_proximity(datetime(2023, 6, 16), None, *q) == pytest.approx(1.0)
    edge = interval_proximity(datetime(2023, 6, 1), None, *q)
    assert 0.5 <= edge < 0.6
    # A long occurrence overlapping the interval counts.
    assert interval_proximity(datetime(2023, 1, 1), datetime(2023, 12, 31), *q) > 0


def test_the_time_weighs_as_surely_as_it_was_read():
    now = datetime(2024, 1, 1)
    ranker = HeuristicReranker(time_weight=0.5, recency_weight=0.0)
    [june] = [Candidate("b", "y", "world", 0.02, 1, occurred_start=datetime(2023, 6, 16))]
    window = (datetime(2023, 6, 1), datetime(2023, 7, 1))
    sure = ranker.score("q", [june], RerankContext(now, *window, interval_confidence=1.0))
    vague = ranker.score("q", [june], RerankContext(now, *window, interval_confidence=0.3))
    assert sure == [pytest.approx(1.0 + 0.5)] and vague == [pytest.approx(1.0 + 0.5 * 0.3)]


def test_an_open_window_favours_the_side_that_was_named():
    from core.timeparse import OPEN_START

    # "as of December 2023": the latest state before its end counts most.
    as_of = (OPEN_START, datetime(2024, 1, 1))
    late = interval_proximity(datetime(2023, 12, 20), None, *as_of)
    early = interval_proximity(datetime(2023, 3, 1), None, *as_of)
    assert late > 0.5 > early > 0
    assert interval_proximity(datetime(2024, 2, 1), None, *as_of) == 0.0


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A 2-layer, 32-wide BERT with one output and random weights, exported to
    ONNX by the same graph builder as the embedder, with MiniLM's tokenizer."""
    import shutil

    import onnx

    from core.providers.embedder import default_model_path
    from core.providers.minilm_export import build_graph

    rng = np.random.default_rng(0)
    config = {
        "hidden_size": 32,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 128,
    }
    shapes = {
        "embeddings.word_embeddings.weight": (30522, 32),
        "embeddings.position_embeddings.weight": (128, 32),
        "embeddings.token_type_embeddings.weight": (2, 32),
        "pooler.dense.weight": (32, 32),
        "classifier.weight": (1, 32),
    }
    for i in range(2):
        p = f"encoder.layer.{i}"
        for part in ("attention.self.query", "attention.self.key", "attention.self.value"):
            shapes[f"{p}.{part}.weight"] = (32, 32)
        shapes[f"{p}.attention.output.dense.weight"] = (32, 32)
        shapes[f"{p}.intermediate.dense.weight"] = (64, 32)
        shapes[f"{p}.output.dense.weight"] = (32, 64)
    weights = {k: rng.normal(0, 0.2, s).astype(np.float32) for k, s in shapes.items()}
    for k, (out, _) in list(shapes.items()):
        if not k.startswith("embeddings."):
            weights[k.replace(".weight", ".bias")] = rng.normal(0, 0.2, out).astype(np.float32)
    norms = ["embeddings.LayerNorm"] + [
        f"encoder.layer.{i}.{n}"
        for i in range(2)
        for n in ("attention.output.LayerNorm", "output.LayerNorm")
    ]
    for n in norms:
        weights[f"{n}.weight"] = np.ones(32, np.float32)
        weights[f"{n}.bias"] = np.zeros(32, np.float32)
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    onnx.save_model(build_graph(weights, config, classifier=True), folder / "model.onnx")
    shutil.copy(default_model_path() / "tokenizer.json", folder / "tokenizer.json")
    (folder / "config.json").write_text(json.dumps(config), "utf-8")
    return folder


@pytest.mark.slow
def test_cross_encoder_reranker_runs_and_says_so(bank, tiny_cross_encoder):
    bank.add_units(
        [
            NewUnit(text=text, source_ids=(f"t{i}",))
            for i, text in enumerate(
                ["Alice likes tea.", "Bob climbs mountains.", "Carol paints.", "Dan sails."]
            )
        ]
    )
    ranker = CrossEncoderReranker(tiny_cross_encoder, max_candidates=3)
    assert ranker.name == f"cross-encoder:{tiny_cross_encoder.name}"
    result = bank.recall("Who paints?", budget_tokens=1000, reranker=ranker)
    assert result.reranker == ranker.name
    assert result.trace.to_dict()["rerank"]["name"] == ranker.name
    scores = {s["id"]: s["score"] for s in result.trace.to_dict()["rerank"]["scores"]}
    assert len(result.items) == 4
    # The packed order is the cross-encoder's order: scores descending.
    assert [i.score for i in result.items] == sorted(scores.values(), reverse=True)
    # The model really ran: its scores for the same pair repeat, and differ across pairs.
    again = ranker.score(
        "Who paints?",
        [_candidate("Carol paints."), _candidate("Dan sails.")],
        RerankContext(datetime(2024, 1, 1)),
    )
    assert again[0] == pytest.approx(
        ranker.score(
            "Who paints?", [_candidate("Carol paints.")], RerankContext(datetime(2024, 1, 1))
        )[0],
        abs=1e-5,
    )
    assert again[0] != again[1]
    # Candidates past max_candidates stay below every scored one.
    tail = ranker.score(
        "q", [_candidate(str(i)) for i in range(5)], RerankContext(datetime(2024, 1, 1))
    )
    assert max(tail[3:]) < min(tail[:3])


@pytest.mark.slow
def test_cross_encoder_from_bank_setting(bank, tiny_cross_encoder):
    bank.add_units([NewUnit(text="Alice likes tea.")])
    result = bank.recall("tea", settings={"recall.cross_encoder_path": str(tiny_cross_encoder)})
    assert result.reranker.startswith("cross-encoder:")
    assert bank.recall("tea").reranker == "heuristic"
    assert bank.recall("tea", reranker="none").reranker == "none"


def test_cross_encoder_needs_a_folder(tmp_path):
    from core import InvalidInputError

    with pytest.raises(InvalidInputError):
        CrossEncoderReranker(tmp_path / "missing")


def _candidate(text: str) -> Candidate:
    return Candidate(text, text, "world", 0.01, 1)
