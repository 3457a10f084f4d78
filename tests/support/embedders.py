"""Deterministic test embedders: no model, no onnxruntime session, microseconds a text.

An engine takes its embedder as an argument (`Engine(home, embedder=...)`), so
tests whose subject is not what the embedding means (stores, curation,
snapshots, the studio's tables) use one of these; tests about recall's ranking
keep the real all-MiniLM-L6-v2 (`core.providers.embedder.shared_embedder`).

Both are named like the real model by default, so a bank made with one opens
with the real model too; give another name/dim to test re-embedding.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from core.providers.embedder import DEFAULT_MODEL_NAME

WORD = re.compile(r"\w+")


def _seeded_unit(key: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


class HashEmbedder:
    """A vector from the whole text's hash: same text same vector, any two
    different texts about orthogonal (so nothing is a near duplicate)."""

    def __init__(self, name: str = DEFAULT_MODEL_NAME, dim: int = 384):
        self.name = name
        self.dim = dim
        self.calls = 0

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i] = self._vector(text)
        return out

    def _vector(self, text: str) -> np.ndarray:
        return _seeded_unit(text, self.dim)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count_tokens(t) for t in texts]


class WordEmbedder(HashEmbedder):
    """The sum of one fixed random vector per lower-cased word, normalised: the
    cosine of two texts grows with the words they share (a bag of words), so a
    query finds the units that use its words. No synonyms, no paraphrase: a
    test about those needs the real model."""

    def _vector(self, text: str) -> np.ndarray:
        words = WORD.findall(text.lower())
        if not words:
            return _seeded_unit(text, self.dim)
        v = np.sum([_word_vector(w, self.dim) for w in words], axis=0)
        return v / np.linalg.norm(v)


_WORDS: dict[tuple[str, int], np.ndarray] = {}


def _word_vector(word: str, dim: int) -> np.ndarray:
    key = (word, dim)
    vector = _WORDS.get(key)
    if vector is None:
        vector = _WORDS[key] = _seeded_unit("word:" + word, dim)
    return vector
