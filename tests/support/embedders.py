"""A deterministic test embedder: no model, no onnxruntime session, microseconds a text.

An engine takes its embedder as an argument (`Engine(home, embedder=...)`), so
tests whose subject is not what the embedding means (stores, snapshots, the
studio's large tables) use this one; tests about retain's merging and recall's
ranking keep the real all-MiniLM-L6-v2 (`core.providers.embedder.shared_embedder`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from core.providers.embedder import DEFAULT_MODEL_NAME


class HashEmbedder:
    """Deterministic vectors from a text's hash: same text same vector, any two
    different texts about orthogonal (so nothing is a near duplicate).

    Named like the default model by default, so banks made with it open with
    the real one too; give another name/dim to test re-embedding."""

    def __init__(self, name: str = DEFAULT_MODEL_NAME, dim: int = 384):
        self.name = name
        self.dim = dim
        self.calls = 0

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        return [self.count_tokens(t) for t in texts]
