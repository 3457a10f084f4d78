"""Re-embed a bank recorded with another embedding model (`engram repair BANK --re-embed`).

A bank records the model its vectors came from and an engine with another
model refuses to open it (`EmbeddingMismatchError`): mixing vectors from two
models would make recall silently wrong. Re-embedding gives every unit a
vector from the engine's model. The vectors are all computed first (with
progress; a cancel stops there and the bank is as it was), then written in one
DuckDB transaction with the model's name, and the vector index is rebuilt at
the new dimension. Links, entities and opinions stay: they were derived from
the text, which does not change.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from core.home import bank_id, read_label
from core.progress import CancelToken, Progress, check, report
from core.types import Change, InvalidInputError, Kind

if TYPE_CHECKING:
    from core.providers.embedder import Embedder

BATCH = 256


def reembed_bank(
    embedder: Embedder,
    folder: Path,
    name: str,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
) -> Change:
    """Embed every unit of the bank in `folder` (not open) again with `embedder` (the
    engine's); an empty Change when the bank already uses its model."""
    from core.store.bank_store import BankStore

    model, dim = embedder.name, embedder.dim
    store = BankStore(folder, name, model, dim, adopt_stored_embedding=True)
    try:
        if (store.embedding_model, store.dim) == (model, dim):
            return Change()
        rows = store.reader().execute("SELECT id, text FROM units ORDER BY id").fetchall()
        ids = [row[0] for row in rows]
        vectors = np.zeros((len(rows), dim), dtype=np.float32)
        for start in range(0, len(rows), BATCH):
            check(cancel)
            texts = [row[1] for row in rows[start : start + BATCH]]
            vectors[start : start + len(texts)] = embedder.embed(texts)
            report(progress, start + len(texts), len(rows), f"re-embedding with {model}")
        check(cancel)  # the last chance: after this the bank changes
        if vectors.shape[1] != dim:
            raise InvalidInputError(f"the embedder gave {vectors.shape[1]}-d vectors, not {dim}")
        store.replace_embedding(model, dim, ids, vectors)
    finally:
        store.close()
    return Change.of(
        updated={Kind.UNIT: ids, Kind.BANK: [bank_id(folder, read_label(folder) or {})]}
    )
