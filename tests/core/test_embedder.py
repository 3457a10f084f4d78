"""The ONNX embedder computes what sentence-transformers computed, without torch."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from core.providers.embedder import Embedder, ModelMissingError, default_model_path

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"


def test_vectors_agree_with_sentence_transformers(embedder):
    # Vectors sentence-transformers (torch) made from the same weights before
    # the switch; banks keep their recorded model name on this agreement.
    reference = json.loads(REFERENCE.read_text("utf-8"))
    got = embedder.embed(reference["texts"])
    cosines = (got * np.asarray(reference["vectors"], np.float32)).sum(axis=1)
    assert cosines.min() > 0.9999
    assert embedder.name == "sentence-transformers/all-MiniLM-L6-v2" and embedder.dim == 384


def test_unit_length_and_padding_do_not_change_a_vector(embedder):
    short = "Alice likes green tea."
    alone = embedder.embed_one(short)
    # In a batch with a long text, the short one is padded: the mask keeps it the same.
    batch = embedder.embed([short, "Bob " * 200, "x", "y", "z", "w"])
    assert np.linalg.norm(alone) == pytest.approx(1.0, abs=1e-5)
    assert np.abs(batch[0] - alone).max() < 1e-5


def test_one_thread_for_a_query_more_for_a_batch(tmp_path):
    embedder = Embedder(batch_threads=2)
    assert set(embedder._sessions) == {1}
    texts = [f"fact number {i} about the Atlas launch" for i in range(8)]
    together = embedder.embed(texts)
    assert set(embedder._sessions) == {1, 2}
    one_by_one = np.stack([embedder.embed_one(t) for t in texts])
    assert np.abs(together - one_by_one).max() < 1e-5


def test_long_texts_are_cut_where_sentence_transformers_cuts_them(embedder):
    phrase = "the quarterly roadmap review "
    head = phrase * 80  # past the 256-token limit
    a = embedder.embed_one(head + "ends in Lisbon")
    b = embedder.embed_one(head + "ends somewhere else entirely")
    assert np.abs(a - b).max() < 1e-6
    # Counting is not cut, and has no [CLS]/[SEP].
    assert embedder.count_tokens(head) == 80 * embedder.count_tokens(phrase) > 256


def test_token_counts(embedder):
    assert embedder.count_tokens_batch(["hello world", "", "Hello, world!"]) == [2, 0, 4]
    assert embedder.count_tokens_batch([]) == []


def test_a_missing_model_says_how_to_build_it(tmp_path):
    folder = tmp_path / "minilm"
    shutil.copytree(default_model_path(), folder, ignore=shutil.ignore_patterns("*.onnx"))
    with pytest.raises(ModelMissingError, match="make model"):
        Embedder(folder)


def test_no_torch_on_the_embedding_path(embedder):
    embedder.embed_one("anything")
    assert "torch" not in sys.modules and "sentence_transformers" not in sys.modules
