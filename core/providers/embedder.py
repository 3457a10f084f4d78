"""Sentence embeddings and token counts from one local model, without torch.

all-MiniLM-L6-v2 runs as an ONNX graph on onnxruntime, tokenised by the
`tokenizers` library; the graph is built from the published weights when the
package is built (`make model`, core/providers/minilm_export.py), so nothing is
fetched at run time. Pooling, normalisation and the longest text follow the
model's sentence-transformers config (modules.json, 1_Pooling/config.json,
sentence_bert_config.json), so vectors agree with sentence-transformers'
(cosine > 0.9999) and banks keep their recorded model name.

Threads are chosen per call: a single query runs on one intra-op thread (on a
shared machine two threads that wait on each other are far slower than one),
ingest batches on a second session with a thread per core. The model is loaded
once per process (a second bank reuses it) and the same tokenizer counts tokens
for the recall budget.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_DIR_ENV = "ENGRAM_MODEL_DIR"
# Up to this many texts a call runs on the one-thread session.
SMALL_CALL = 4


class ModelMissingError(RuntimeError):
    """The ONNX graph was not built (a checkout before `make model`)."""


def default_model_path() -> Path:
    """The model folder: ENGRAM_MODEL_DIR, else the one inside the package
    (a PyInstaller bundle or a wheel carries it there too)."""
    override = os.environ.get(MODEL_DIR_ENV)
    return Path(override) if override else Path(__file__).resolve().parent / "minilm"


def _pooling(folder: Path) -> tuple[str, bool, int]:
    """(pooling mode, normalise?, max tokens) from the sentence-transformers config."""
    modules = json.loads((folder / "modules.json").read_text("utf-8"))
    kinds = {m["type"].rsplit(".", 1)[-1]: m for m in modules}
    pooling = json.loads((folder / kinds["Pooling"]["path"] / "config.json").read_text("utf-8"))
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
    if modes != ["pooling_mode_mean_tokens"]:
        raise ValueError(f"unsupported pooling {modes} in {folder}")
    max_len = json.loads((folder / "sentence_bert_config.json").read_text("utf-8"))
    return "mean", "Normalize" in kinds, int(max_len["max_seq_length"])


class Embedder:
    """Batched, normalised embeddings plus the tokenizer of the same model."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        name: str | None = None,
        batch_threads: int | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        folder = Path(model_path) if model_path else default_model_path()
        self.path = folder
        if not (folder / "model.onnx").is_file():
            raise ModelMissingError(
                f"the embedding model is not built in {folder}: run `make model` "
                "(python -m core.providers.minilm_export)"
            )
        self.name = name or (DEFAULT_MODEL_NAME if model_path is None else folder.name)
        _, self._normalise, max_tokens = _pooling(folder)
        config = json.loads((folder / "config.json").read_text("utf-8"))
        self.dim = int(config["hidden_size"])

        self._counter = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._counter.no_padding()
        self._counter.no_truncation()
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

        self.batch_threads = batch_threads or max(1, min(4, os.cpu_count() or 1))
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()
        self._session(1)  # load now: a missing or broken model shows at once

    def _session(self, threads: int):
        """The inference session with `threads` intra-op threads, made on first use."""
        with self._lock:
            session = self._sessions.get(threads)
            if session is None:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.inter_op_num_threads = 1
                options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
                # Threads that spin while they wait steal the core a busy machine lacks.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                options.log_severity_level = 3
                session = ort.InferenceSession(
                    str(self.path / "model.onnx"), options, providers=["CPUExecutionProvider"]
                )
                self._sessions[threads] = session
            return session

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        threads = 1 if len(texts) <= SMALL_CALL else self.batch_threads
        session = self._session(threads)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # Like sentence-transformers: sort by length so a batch pads little.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._embed_batch(session, [texts[i] for i in chunk])
        return out

    def _embed_batch(self, session, texts: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": mask})
        # Mean over real tokens (sentence-transformers' Pooling, mean mode) ...
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
        if not self._normalise:
            return pooled
        # ... then Normalize: x / max(||x||, 1e-12), as torch's F.normalize.
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def count_tokens(self, text: str) -> int:
        return self.count_tokens_batch([text])[0]

    def count_tokens_batch(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        encoded = self._counter.encode_batch(list(texts), add_special_tokens=False)
        return [len(e.ids) for e in encoded]


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> Embedder:
    """The process-wide default embedder, loaded on first use."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Embedder()
        return _shared
