"""Recall: four channels in parallel, fusion, rerank, packing, and a trace of it all.

`recall(bank, query, budget_tokens)` is the entry point (`Bank.recall` delegates
to it); the stages live in their own modules so the studio can re-run one
(spreading activation with other δ and μ, say) from a trace.

The names load on first use (PEP 562), so the CLI can read `core.recall.settings`
for its choices without loading the stores.
"""

from __future__ import annotations

from core.lazy import lazy_exports

_EXPORTS = {
    "Candidate": "core.recall.rerank",
    "CrossEncoderReranker": "core.recall.rerank",
    "FusionOrder": "core.recall.rerank",
    "HeuristicReranker": "core.recall.rerank",
    "RecallItem": "core.recall.result",
    "RecallResult": "core.recall.result",
    "RerankContext": "core.recall.rerank",
    "Reranker": "core.recall.rerank",
    "explain": "core.recall.trace",
    "recall": "core.recall.pipeline",
}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports("core.recall", _EXPORTS, globals())
