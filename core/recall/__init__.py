"""Recall: four channels in parallel, fusion, rerank, packing, and a trace of it all.

`recall(bank, query, budget_tokens)` is the entry point (`Bank.recall` delegates
to it); the stages live in their own modules so the studio can re-run one
(spreading activation with other δ and μ, say) from a trace.
"""

from core.recall.pipeline import recall
from core.recall.rerank import (
    Candidate,
    CrossEncoderReranker,
    FusionOrder,
    HeuristicReranker,
    RerankContext,
    Reranker,
)
from core.recall.result import RecallItem, RecallResult
from core.recall.trace import explain

__all__ = [
    "Candidate",
    "CrossEncoderReranker",
    "FusionOrder",
    "HeuristicReranker",
    "RecallItem",
    "RecallResult",
    "RerankContext",
    "Reranker",
    "explain",
    "recall",
]
