"""The rest of Hindsight 1.1.0's routes: bank stats and their time series, the
language model's health, tags, chunks, operations' cancel / retry / delete, and
a 501 naming the feature for everything Engram does not have (docs/server.md
lists them).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query

from core import limits
from core.server import models as m
from core.server.admission import read_only
from core.server.errors import not_found, not_implemented
from core.server.memory_views import iso
from core.server.routes_hindsight import BANK, Ops, Served

router = APIRouter()
unsupported = APIRouter()

# -- stats ------------------------------------------------------------------------------


def _now() -> datetime:
    """The request's time: UTC, without a zone (as the stores keep times)."""
    return datetime.now(UTC).replace(tzinfo=None)


PERIODS = {
    "1h": (timedelta(hours=1), "minute"),
    "12h": (timedelta(hours=12), "hour"),
    "1d": (timedelta(days=1), "hour"),
    "7d": (timedelta(days=7), "day"),
    "30d": (timedelta(days=30), "day"),
    "90d": (timedelta(days=90), "day"),
}


@router.get(
    BANK + "/stats/memories-timeseries", response_model=m.TimeseriesResponse, tags=["Banks"]
)
def memories_timeseries(
    bank_id: str,
    served: Served,
    period: Literal[tuple(PERIODS)] = "7d",
    time_field: Literal["created_at", "mentioned_at", "occurred_start"] = "created_at",
) -> m.TimeseriesResponse:
    """Active memories per network, bucketed over the last `period` by
    `time_field` (a unit without one counts at its created_at), every bucket
    listed."""
    span, trunc = PERIODS[period]
    bank = served.get(bank_id)
    end = _now()
    buckets = bank.memories_timeseries(end - span, end, trunc, time_field)
    return m.TimeseriesResponse(
        bank_id=bank.id,
        period=period,
        trunc=trunc,
        time_field=time_field,
        buckets=[m.TimeseriesBucket(time=iso(at), **counts) for at, counts in buckets],
    )


# -- the language model -----------------------------------------------------------------


@router.post(BANK + "/health/llm", response_model=m.BankLlmHealthResponse, tags=["Banks"])
@read_only
def llm_health(bank_id: str, served: Served) -> m.BankLlmHealthResponse:
    """Whether the configured language model answers, for each operation that
    uses it (retain, reflect and the observation rebuilds share one)."""
    bank = served.get(bank_id)
    lm = served.engine.language_model()
    if lm is None:
        status, ok, latency = "not_configured", False, None
    else:
        started = time.perf_counter()
        try:
            probe = lm.probe()
        finally:
            lm.close()
        latency = (time.perf_counter() - started) * 1000.0
        ok = probe.ready
        status = "connected" if ok else ("timeout" if "time" in probe.reason else "unreachable")
    return m.BankLlmHealthResponse(
        bank_id=bank.id,
        operations=[
            m.LlmOperationHealth(operation=op, ok=ok, status=status, latency_ms=latency)
            for op in ("retain", "consolidation", "reflect")
        ],
    )


# -- tags ----------------------------------------------------------------------


@router.get(BANK + "/tags", response_model=m.ListTagsResponse, tags=["Memory"])
def list_tags(
    bank_id: str,
    served: Served,
    q: str | None = None,
    limit: Annotated[int, Query(ge=0, le=10_000)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
) -> m.ListTagsResponse:
    """The tags the bank's active memories carry, most used first."""
    page, total = served.get(bank_id).tag_counts(q, offset=offset, limit=limit)
    return m.ListTagsResponse(
        items=[m.TagItem(tag=t, count=n) for t, n in page], total=total, limit=limit, offset=offset
    )


# -- operations -----------------------------------------------------------------------------


@router.delete(
    BANK + "/operations/{operation_id}",
    response_model=m.OperationActionResponse,
    tags=["Operations"],
)
def cancel_operation(
    bank_id: str, operation_id: str, served: Served, ops: Ops
) -> m.OperationActionResponse:
    """Cancel a queued operation. One already running finishes (its retain is one
    transaction per document: stopping it half-way would help no one): 409."""
    name = served.get(bank_id).id
    op = ops.get(name, operation_id)
    if op is None:
        raise not_found(f"no operation {operation_id!r} in bank {bank_id!r}")
    if not ops.cancel(name, operation_id):
        raise HTTPException(
            409, f"operation {operation_id!r} is {op.status}: only a pending one cancels"
        )
    return m.OperationActionResponse(
        success=True, message="cancelled before it ran", operation_id=operation_id
    )


@router.post(
    BANK + "/operations/{operation_id}/retry",
    response_model=m.OperationActionResponse,
    tags=["Operations"],
)
def retry_operation(
    bank_id: str, operation_id: str, served: Served, ops: Ops
) -> m.OperationActionResponse:
    """Run a failed or cancelled operation again (a retain skips what it wrote)."""
    name = served.get(bank_id).id
    op = ops.get(name, operation_id)
    if op is None:
        raise not_found(f"no operation {operation_id!r} in bank {bank_id!r}")
    if not ops.retry(name, operation_id):
        raise HTTPException(
            409,
            f"operation {operation_id!r} is {op.status}: only a failed or cancelled one is retried",
        )
    return m.OperationActionResponse(
        success=True, message="queued again", operation_id=operation_id
    )


@router.delete(
    BANK + "/operations/{operation_id}/delete",
    response_model=m.OperationActionResponse,
    tags=["Operations"],
)
def delete_operation(
    bank_id: str, operation_id: str, served: Served, ops: Ops
) -> m.OperationActionResponse:
    """Forget a finished operation's record."""
    name = served.get(bank_id).id
    op = ops.get(name, operation_id)
    if op is None:
        raise not_found(f"no operation {operation_id!r} in bank {bank_id!r}")
    if not ops.forget(name, operation_id):
        raise HTTPException(409, f"operation {operation_id!r} is {op.status}: it has not finished")
    return m.OperationActionResponse(success=True, message="forgotten", operation_id=operation_id)


# -- what only Hindsight has ------------------------------------------------------------

UNSUPPORTED = {
    "mental-models": "mental models",
    "directives": "directives",
    "knowledge-base": "the knowledge base",
    "webhooks": "webhooks",
    "files": "file uploads",
    "aliases": "bank aliases",
    "consolidate": "consolidation runs (Engram rebuilds observations after each change)",
    "consolidation": "consolidation recovery (Engram rebuilds observations after each change)",
    "consolidation-strategies": "consolidation strategies",
    "observations": "observation scopes (a tag filter shows an observation only when every "
    "fact it was made from passes)",
    "graph": "the graph view (see Engram's studio and /engram/v1 recall's trace)",
    "attachments": "attachments",
    "llm-requests": "LLM request traces",
    "audit-logs": "Hindsight's request audit log (Engram's curation audit is "
    "GET /engram/v1/banks/{bank}/audit)",
    "history": "document history",
    "regenerate": "entity regeneration (Engram rebuilds observations after each change)",
    "dry-run-extract": "dry-run extraction",
    "prompts": "prompt previews",
    "import": "bank templates (use /engram/v1 snapshots)",
    "export": "bank templates (use /engram/v1 snapshots)",
    "transfer": "bank transfer (use /engram/v1 snapshots)",
    "document-transfer": "document transfer (use /engram/v1 snapshots)",
    "clone": "bank cloning (export and import a snapshot)",
    "background": "the background merge (set the mission with PUT /v1/default/banks/{bank})",
    "bank-template-schema": "bank templates",
    "metrics": "Prometheus metrics",
    "chunks": "chunk lookup by id alone (Engram's chunks are a document's turns: "
    "GET /v1/default/banks/{bank}/documents/{document}/chunks)",
}


@unsupported.api_route(
    "/v1/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False
)
def not_in_engram(rest: str) -> None:
    """Anything else Hindsight has: a 501 naming it, never a silent success; a
    path neither has is a 404."""
    words = rest.split("/")
    feature = next((UNSUPPORTED[w] for w in reversed(words) if w in UNSUPPORTED), None)
    if feature is None:
        raise HTTPException(404, f"no such path: /v1/{rest}")
    raise not_implemented(feature)


@unsupported.get("/metrics", include_in_schema=False)
def metrics() -> None:
    raise not_implemented(UNSUPPORTED["metrics"])
