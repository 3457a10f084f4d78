"""Hindsight 1.1.0's paths and shapes, over Engram banks.

A Hindsight `bank_id` is an Engram bank's name. What both systems have is
answered in Hindsight's shapes; what only Hindsight has (mental models,
directives, the knowledge base, webhooks, files...) is a 501 naming it
(routes_hindsight_more.py), and a request field Engram cannot honour is a 422
naming the field. Where Hindsight does something Engram does better, the
difference is in docs/server.md.

As in Hindsight, a bank comes into being on its first retain, and every read
of a bank that does not exist is a 404 — except reflect, which answers that
there is nothing to answer from (Hindsight creates the bank there; a typo in a
bank id should not leave an empty bank behind).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request

from core import limits
from core import tags as tagging
from core.bank import Bank
from core.config import checked_changes
from core.server import models as m
from core.server.admission import queued_when, read_only
from core.server.errors import field_error, not_found, not_supported, refuse
from core.server.memory_views import UnitViews, iso, turn_text
from core.server.operations import Operation, Operations
from core.server.retain import check_request, queued_payload, retain
from core.server.served import ServedBanks
from core.server.version import ENGRAM_VERSION, HINDSIGHT_API_VERSION
from core.types import (
    BankNotFoundError,
    Disposition,
    EngramError,
    InvalidInputError,
    Network,
    UnitStatus,
)
from core.vocabulary import NETWORKS

router = APIRouter()
BANK = "/v1/default/banks/{bank_id}"
LEVEL_TOKENS = {"low": 2048, "mid": 4096, "high": 8192}
INVALIDATED = (UnitStatus.HIDDEN, UnitStatus.RETRACTED)


def served_banks(request: Request) -> ServedBanks:
    return request.app.state.served


def operations(request: Request) -> Operations:
    return request.app.state.operations


Served = Annotated[ServedBanks, Depends(served_banks)]
Ops = Annotated[Operations, Depends(operations)]
TagsQuery = Annotated[list[str] | None, Query(description="only memories these tags let through")]
TagsMatchQuery = Annotated[m.TagsMatch, Query(description="how `tags` match (see recall)")]


def query_scope(tags: list[str] | None, match: str) -> tagging.TagScope | None:
    """A tag scope from query parameters (422 naming `tags` when they are bad)."""
    try:
        return tagging.scope_of(tagging.check_tags(tags, "tags"), match)
    except InvalidInputError as error:
        raise field_error("tags", str(error), "query") from None


# -- monitoring -----------------------------------------------------------------------


@router.get("/health", response_model=m.HealthResponse, tags=["Monitoring"])
@router.get("/health/ready", response_model=m.HealthResponse, tags=["Monitoring"])
async def health(request: Request) -> m.HealthResponse:
    """On the event loop, needing no worker thread: it answers however busy the
    banks are (their requests wait in their queues, holding no thread)."""
    return m.HealthResponse(status="healthy", banks=len(served_banks(request).names()))


@router.get("/health/live", tags=["Monitoring"])
async def live() -> dict[str, str]:
    return {"status": "alive"}


@router.get("/version", response_model=m.VersionResponse, tags=["Monitoring"])
@router.get("/v1/version", response_model=m.VersionResponse, include_in_schema=False)
async def version() -> m.VersionResponse:
    return m.VersionResponse(
        api_version=HINDSIGHT_API_VERSION, engram_version=ENGRAM_VERSION, features=m.FeaturesInfo()
    )


# -- banks ----------------------------------------------------------------------------


def traits(disposition: Disposition) -> m.DispositionTraits:
    return m.DispositionTraits(
        skepticism=disposition.skepticism,
        literalism=disposition.literalism,
        empathy=disposition.empathy,
    )


def profile_of(bank: Bank) -> m.BankProfileResponse:
    profile = bank.profile()
    return m.BankProfileResponse(
        bank_id=bank.id,
        name=profile.agent_name or bank.name,
        disposition=traits(profile.disposition),
        mission=profile.background,
        background=profile.background,
    )


@router.get("/v1/default/banks", response_model=m.BankListResponse, tags=["Banks"])
def list_banks(
    served: Served,
    q: str | None = None,
    limit: Annotated[int, Query(ge=0, le=limits.PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
) -> m.BankListResponse:
    infos = [i for i in served.infos() if not q or q.lower() in f"{i.id} {i.name}".lower()]
    items = []
    for info in infos[offset : offset + limit]:
        try:
            bank = served.get(info.id)
        except BankNotFoundError:
            continue  # deleted meanwhile
        except EngramError:  # held by another process: listed, not described
            items.append(
                m.BankListItem(
                    bank_id=info.id,
                    name=info.name,
                    disposition=traits(Disposition()),
                    created_at=info.created_at,
                )
            )
            continue
        profile = bank.profile()
        items.append(
            m.BankListItem(
                bank_id=info.id,
                name=profile.agent_name or info.name,
                disposition=traits(profile.disposition),
                mission=profile.background,
                created_at=info.created_at,
                fact_count=bank.count(),
            )
        )
    return m.BankListResponse(banks=items, total=len(infos), limit=limit, offset=offset)


CREATE_REFUSALS = {
    name: "Engram's retain and recall are configured with its own settings "
    "(PATCH /config with Engram's keys)"
    for name in (
        "retain_mission",
        "retain_extraction_mode",
        "retain_custom_instructions",
        "retain_chunk_size",
        "retain_structured_chunk_size",
        "retain_max_attachments_per_chunk",
        "enable_observations",
        "observations_mission",
        "enable_text_search",
        "enable_temporal_retrieval",
        "enable_graph_retrieval",
        "enable_reranking",
    )
}


def _profile_update(body: m.CreateBankRequest, current: Disposition) -> dict[str, Any]:
    values = body.model_dump()
    refuse(values, CREATE_REFUSALS)
    update: dict[str, Any] = {}
    text = body.reflect_mission or body.mission or body.background
    if text is not None:
        update["background"] = text
    if body.name is not None:
        update["agent_name"] = body.name
    base = body.disposition.model_dump() if body.disposition else current.to_dict()
    for trait in ("skepticism", "literalism", "empathy"):
        if values[f"disposition_{trait}"] is not None:
            base[trait] = values[f"disposition_{trait}"]
    new = Disposition.from_dict({**current.to_dict(), **base})
    if new != current:
        update["disposition"] = new
    return update


@router.put(BANK, response_model=m.BankProfileResponse, tags=["Banks"])
def create_or_update_bank(
    bank_id: str, body: m.CreateBankRequest, served: Served
) -> m.BankProfileResponse:
    _profile_update(body, Disposition())  # refuse what Engram cannot honour before creating
    served.get_or_create(bank_id)
    return _update_profile(served, bank_id, body)


@router.patch(BANK, response_model=m.BankProfileResponse, tags=["Banks"])
def update_bank(bank_id: str, body: m.CreateBankRequest, served: Served) -> m.BankProfileResponse:
    return _update_profile(served, bank_id, body)


def _update_profile(served: ServedBanks, bank_id: str, body: m.CreateBankRequest):
    with served.using(bank_id) as bank:
        update = _profile_update(body, bank.profile().disposition)
        if update:
            change = bank.set_profile(**update)
            served.changed(bank.id, change)
        return profile_of(bank)


@router.delete(BANK, response_model=m.DeleteResponse, tags=["Banks"])
def delete_bank(bank_id: str, served: Served) -> m.DeleteResponse:
    count = served.get(bank_id).count(status=None)
    served.delete(bank_id)
    return m.DeleteResponse(success=True, message=f"bank {bank_id!r} deleted", deleted_count=count)


@router.get(BANK + "/profile", response_model=m.BankProfileResponse, tags=["Banks"])
def get_profile(bank_id: str, served: Served) -> m.BankProfileResponse:
    return profile_of(served.get(bank_id))


@router.put(BANK + "/profile", response_model=m.BankProfileResponse, tags=["Banks"])
def update_disposition(
    bank_id: str, body: m.UpdateDispositionRequest, served: Served
) -> m.BankProfileResponse:
    served.get_or_create(bank_id)  # as Hindsight: setting a profile makes the bank
    with served.using(bank_id) as bank:
        current = bank.profile().disposition
        new = Disposition(**{**current.to_dict(), **body.disposition.model_dump()})
        served.changed(bank.id, bank.set_profile(disposition=new))
        return profile_of(bank)


def config_of(bank: Bank) -> m.BankConfigResponse:
    profile = bank.profile()
    config = dict(profile.config)
    for trait, value in profile.disposition.to_dict().items():
        config[f"disposition_{trait}"] = value
    config["reflect_mission"] = profile.background
    return m.BankConfigResponse(bank_id=bank.id, config=config, overrides=bank.config_overrides())


@router.get(BANK + "/config", response_model=m.BankConfigResponse, tags=["Banks"])
def get_config(bank_id: str, served: Served) -> m.BankConfigResponse:
    return config_of(served.get(bank_id))


@router.patch(BANK + "/config", response_model=m.BankConfigResponse, tags=["Banks"])
def update_config(bank_id: str, body: m.BankConfigUpdate, served: Served) -> m.BankConfigResponse:
    """Engram's settings by their keys (`recall.rrf_k`...), plus Hindsight's
    `disposition_*` and `reflect_mission`; any other key is a 422."""
    updates = dict(body.updates)
    served.get_or_create(bank_id)  # as Hindsight: configuring a bank makes it
    with served.using(bank_id) as bank:
        profile = bank.profile()
        disposition = profile.disposition.to_dict()
        touched = False
        for trait in ("skepticism", "literalism", "empathy"):
            if f"disposition_{trait}" in updates:
                disposition[trait] = updates.pop(f"disposition_{trait}")
                touched = True
        background = updates.pop("reflect_mission", None)
        try:
            new = Disposition.from_dict(disposition) if touched else None
            change = bank.set_profile(
                background=background,
                disposition=new,
                config=checked_changes(updates) or None,  # stored typed: "false" is False
            )
        except (KeyError, ValueError, TypeError) as error:
            raise field_error("updates", str(error).strip("'\"")) from error
        served.changed(bank.id, change)
        return config_of(bank)


@router.delete(BANK + "/config", response_model=m.BankConfigResponse, tags=["Banks"])
def reset_config(bank_id: str, served: Served) -> m.BankConfigResponse:
    """Drop the bank's setting overrides (its disposition and background stay)."""
    with served.using(bank_id) as bank:
        served.changed(bank.id, bank.reset_config())
        return config_of(bank)


@router.get(BANK + "/stats", response_model=m.BankStatsResponse, tags=["Banks"])
def stats(bank_id: str, served: Served, ops: Ops) -> m.BankStatsResponse:
    bank = served.get(bank_id)
    counted = bank.stats()
    return m.BankStatsResponse(
        bank_id=bank.id,
        total_nodes=counted.total_units,
        total_links=counted.total_links,
        total_documents=counted.documents,
        nodes_by_fact_type=dict(counted.units),
        links_by_link_type=dict(counted.links),
        links_by_fact_type=dict(counted.links_by_network),
        links_breakdown={},
        pending_operations=ops.pending(bank.id),
        failed_operations=ops.failed(bank.id),
        pending_consolidation=counted.pending_jobs,
        total_observations=counted.units.get("observation", 0),
    )


# -- retain ---------------------------------------------------------------------------


@router.post(BANK + "/memories", response_model=m.RetainResponse, tags=["Memory"])
@queued_when(lambda body: body.get("async") is True)
def retain_memories(
    bank_id: str, body: m.RetainRequest, served: Served, ops: Ops
) -> m.RetainResponse:
    """Retain items. Synchronous: answers once every document is committed.
    With `"async": true`: answers at once with an `operation_id` to poll. The
    bank is created on its first retain. An item without a timestamp was said
    at the time of the request: relative times in it ("yesterday") are read
    against that."""
    mode = check_request(body)
    name = served.get_or_create(bank_id).id

    def work() -> dict[str, Any]:
        with served.using(name) as bank:
            change, summary = retain(bank, body, mode)
        served.changed(name, change)
        return summary

    if body.async_:
        # Acknowledged once the request is committed to the bank's queue.
        op = ops.submit(name, "retain", len(body.items), queued_payload(body), body.operation_id)
        return m.RetainResponse(
            success=True,
            bank_id=name,
            items_count=len(body.items),
            async_=True,
            operation_id=op.id,
            operation_ids=[op.id],
        )
    summary = work()
    return m.RetainResponse(
        success=True,
        bank_id=name,
        items_count=len(body.items),
        async_=False,
        document_ids=summary["document_ids"],
        units_added=summary["units_added"],
    )


def status_of(op: Operation) -> m.OperationStatusResponse:
    return m.OperationStatusResponse(
        operation_id=op.id,
        status=op.status,
        operation_type=op.kind,
        created_at=op.created_at,
        updated_at=op.updated_at,
        completed_at=op.completed_at,
        error_message=op.error,
        result_metadata=op.result,
    )


@router.get(
    BANK + "/operations/{operation_id}",
    response_model=m.OperationStatusResponse,
    tags=["Operations"],
)
def operation_status(
    bank_id: str, operation_id: str, served: Served, ops: Ops
) -> m.OperationStatusResponse:
    op = ops.get(served.get(bank_id).id, operation_id)
    if op is None:
        raise not_found(f"no operation {operation_id!r} in bank {bank_id!r}")
    return status_of(op)


@router.get(BANK + "/operations", response_model=m.OperationsListResponse, tags=["Operations"])
def list_operations(
    bank_id: str,
    served: Served,
    ops: Ops,
    status: str | None = None,
    limit: Annotated[int, Query(ge=0, le=limits.PAGE)] = 20,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
) -> m.OperationsListResponse:
    name = served.get(bank_id).id
    found = [o for o in reversed(ops.of_bank(name)) if status is None or o.status == status]
    return m.OperationsListResponse(
        bank_id=name,
        total=len(found),
        limit=limit,
        offset=offset,
        operations=[
            m.OperationResponse(
                id=o.id,
                task_type=o.kind,
                items_count=o.items_count,
                created_at=o.created_at,
                status=o.status,
                error_message=o.error,
            )
            for o in found[offset : offset + limit]
        ],
    )


# -- recall and reflect ---------------------------------------------------------------

RECALL_REFUSALS = {
    "min_scores": "Engram packs by rank within max_tokens, without score floors",
    "temporal_window": "give the time in the query, or use /engram/v1 recall's start/end",
    "prefer_observations": "Engram recalls the networks named in `types`",
}


@router.post(BANK + "/memories/recall", response_model=m.RecallResponse, tags=["Memory"])
@read_only
def recall(bank_id: str, body: m.RecallRequest, served: Served) -> m.RecallResponse:
    """Engram's recall: `budget` is how many candidates each channel returns
    (low/mid/high), `max_tokens` the token budget the facts are packed into.
    `tags` are a filter before retrieval, in every channel."""
    refuse(body.model_dump(), RECALL_REFUSALS)
    include = body.include
    scope = body.tag_scope()
    bank = served.get(bank_id)
    observation_budget = 0
    if include.entities is not None:
        observation_budget = include.entities.max_tokens or 500
    result = bank.recall(
        body.query,
        budget_tokens=body.max_tokens,
        networks=body.types,
        now=body.query_timestamp,
        level=body.budget,
        observation_budget=observation_budget,
        tags=scope,
    )
    ids = [item.unit_id for item in result.items]
    observations = list(result.observations)
    views = UnitViews.of_recall(bank, result)
    with_sources = include.source_facts is not None
    results = [
        views.recall_result(views.units[item.unit_id], item.score, with_sources)
        for item in result.items
        if item.unit_id in views.units
    ]
    response = m.RecallResponse(
        results=results, trace=result.trace.to_dict() if body.trace else None
    )
    if include.entities is not None:
        response.entities = _entity_states(views, observations)
    if include.chunks is not None:
        response.chunks = _chunks(bank, views, ids, include.chunks.max_tokens or 8192)
    if with_sources:
        response.source_facts, response.source_facts_truncated = _source_facts(
            bank, views, results, include.source_facts
        )
    return response


def _entity_states(views: UnitViews, observations) -> dict[str, m.EntityState]:
    states: dict[str, m.EntityState] = {}
    for item in observations:
        unit = views.units.get(item.unit_id)
        if unit is None:
            continue
        for entity_id in unit.entity_ids:
            name = views.names.get(entity_id, entity_id)
            state = states.setdefault(
                name, m.EntityState(entity_id=entity_id, canonical_name=name, observations=[])
            )
            state.observations.append(
                m.EntityObservationResponse(text=unit.text, mentioned_at=iso(unit.mentioned_at))
            )
    return states


def _count(bank: Bank, texts: list[str]) -> list[int]:
    return bank.count_tokens(texts)


def _chunks(bank: Bank, views: UnitViews, ids: list[str], budget: int) -> dict[str, m.ChunkData]:
    """The source turns of the results, in result order, within `budget` tokens
    (the one that crosses it is cut and marked truncated)."""
    chunks: dict[str, m.ChunkData] = {}
    turns = [
        (cid, turn)
        for uid in ids
        if uid in views.units
        for cid, turn in views.chunks(views.units[uid])
    ]
    turns = [(cid, t) for n, (cid, t) in enumerate(turns) if cid not in {c for c, _ in turns[:n]}]
    texts = [turn_text(t) for _, t in turns]
    left = budget
    for (cid, turn), text, size in zip(turns, texts, _count(bank, texts), strict=True):
        if left <= 0:
            break
        truncated = size > left
        if truncated:
            text = " ".join(text.split()[: max(1, int(left * 0.75))]) + " …"
        chunks[cid] = m.ChunkData(id=cid, text=text, chunk_index=turn.index, truncated=truncated)
        left -= size
    return chunks


def _source_facts(
    bank: Bank, views: UnitViews, results: list[m.RecallResult], options: m.IncludeMaxTokens
) -> tuple[dict[str, m.RecallResult], bool]:
    wanted = list(dict.fromkeys(s for r in results for s in (r.source_fact_ids or ())))
    if not wanted:
        return {}, False
    facts = UnitViews.of_ids(bank, wanted)
    budget = options.max_tokens if options.max_tokens not in (None, -1) else None
    per = options.max_tokens_per_observation
    per = per if per not in (None, -1) else None
    ordered = [facts.units[i] for i in wanted if i in facts.units]
    sizes = _count(bank, [u.text for u in ordered])
    used_by: dict[str, int] = {}
    owner = {s: r.id for r in results for s in (r.source_fact_ids or ())}
    out: dict[str, m.RecallResult] = {}
    used, truncated = 0, False
    for unit, size in zip(ordered, sizes, strict=True):
        observation = owner.get(unit.id, "")
        if (budget is not None and used + size > budget) or (
            per is not None and used_by.get(observation, 0) + size > per
        ):
            truncated = True
            continue
        used += size
        used_by[observation] = used_by.get(observation, 0) + size
        out[unit.id] = facts.recall_result(unit, None, False)
    return out, truncated


REFLECT_REFUSALS = {
    "fact_types": "Engram's reflect weighs every network",
    "exclude_mental_model_ids": "Engram has no mental models",
    "reflect_search_observations_max_tokens": "Engram's reflect has one evidence budget",
}


@router.post(BANK + "/reflect", response_model=m.ReflectResponse, tags=["Memory"])
def reflect(bank_id: str, body: m.ReflectRequest, served: Served) -> m.ReflectResponse:
    """Answer from memory under the bank's disposition; the reflection is kept
    and the opinions it forms are applied. `budget` is the evidence budget (low
    2048, mid 4096, high 8192 tokens), `max_tokens` the answer's length, `tags`
    the scope of the evidence, `context` the asker's situation. With a
    `response_schema` the answer also comes as `structured_output` (see
    docs/server.md for what happens without a language model). A bank that does
    not exist has nothing to answer from: that is the answer, and no bank is made."""
    refuse(body.model_dump(), REFLECT_REFUSALS)
    if body.include is not None and body.include.tool_calls is not None:
        raise not_supported("tool_calls", "Engram's reflect makes no tool calls", "include")
    scope = body.tag_scope()
    if body.response_schema is not None:
        from core import check_response_schema

        try:
            check_response_schema(body.response_schema)
        except InvalidInputError as error:
            raise field_error("response_schema", str(error)) from None
    try:
        served.get(bank_id)
    except BankNotFoundError:
        return m.ReflectResponse(
            text=f"I have no memories in bank {bank_id!r} (it does not exist yet; its first "
            "retain creates it), so there is nothing to answer from.",
            based_on=m.ReflectBasedOn() if _wants_facts(body) else None,
            mode="empty",
        )
    with served.using(bank_id) as bank:
        reflection = bank.reflect(
            body.query,
            budget_tokens=LEVEL_TOKENS[body.budget],
            commit=False,
            tags=scope,
            context=body.context,
            max_tokens=body.max_tokens,
        )
        change = bank.commit_reflection(reflection)
    served.changed(bank.id, change)
    response = m.ReflectResponse(
        text=reflection.answer, reflection_id=reflection.id, mode=reflection.mode
    )
    if _wants_facts(body):
        views = UnitViews.of_ids(bank, [e.unit_id for e in reflection.evidence])
        response.based_on = m.ReflectBasedOn(
            memories=[
                views.reflect_fact(views.units[e.unit_id])
                for e in reflection.evidence
                if e.unit_id in views.units
            ]
        )
    if body.response_schema is not None:
        response.structured_output, response.structured_output_error = bank.structured_output(
            reflection, body.response_schema
        )
    return response


def _wants_facts(body: m.ReflectRequest) -> bool:
    return body.include is not None and body.include.facts is not None


# -- memories -------------------------------------------------------------------------


@router.get(BANK + "/memories/list", response_model=m.ListMemoryUnitsResponse, tags=["Memory"])
def list_memories(
    bank_id: str,
    served: Served,
    type: Literal[NETWORKS] | None = None,
    q: str | None = None,
    entity_id: str | None = None,
    time_field: Literal["occurred_start"] | None = None,
    start_date: m.Time | None = None,
    end_date: m.Time | None = None,
    limit: Annotated[int, Query(ge=0, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
    document_id: str | None = None,
    state: Literal["valid", "invalidated"] | None = None,
    tags: TagsQuery = None,
    tags_match: TagsMatchQuery = "any",
    consolidation_state: str | None = None,
) -> m.ListMemoryUnitsResponse:
    """Units, most recent occurrence first. `time_field` may only be
    `occurred_start` (a window over when facts happened); `state=invalidated`
    lists the hidden and retracted units; `tags` filter as in recall."""
    refuse(
        {"consolidation_state": consolidation_state},
        {"consolidation_state": "Engram queues observation jobs"},
        where="query",
    )
    bank = served.get(bank_id)
    filters: dict[str, Any] = {
        "network": type,
        "text": q,
        "entity": entity_id,
        "start": start_date,
        "end": end_date,
        "status": INVALIDATED if state == "invalidated" else UnitStatus.ACTIVE,
        "tags": query_scope(tags, tags_match),
        "document": document_id,
    }
    units = bank.units(
        order="occurred_start", descending=True, offset=offset, limit=limit, **filters
    )
    total = bank.count(**filters)
    views = UnitViews(bank, units)
    return m.ListMemoryUnitsResponse(
        items=[views.list_item(u) for u in units], total=total, limit=limit, offset=offset
    )


def _unit(bank: Bank, memory_id: str):
    found = bank.units_by_id([memory_id]).get(memory_id)
    if found is None:
        raise not_found(f"no memory {memory_id!r} in bank {bank.name!r}")
    return found


def memory_detail(bank: Bank, memory_id: str) -> dict[str, Any]:
    """One unit with its entities, tags, metadata and the turns it was drawn from."""
    unit = _unit(bank, memory_id)
    views = UnitViews(bank, [unit])
    return {
        **views.list_item(unit).model_dump(),
        "type": str(unit.network),
        "entities": views.entity_list(unit),
        "confidence": unit.confidence,
        "source_turns": [
            {"id": t.id, "speaker": t.speaker, "text": t.text, "timestamp": iso(t.timestamp)}
            for t in bank.provenance(memory_id)
        ],
    }


@router.get(BANK + "/memories/{memory_id}", tags=["Memory"])
def get_memory(bank_id: str, memory_id: str, served: Served) -> dict[str, Any]:
    """One unit with its entities, tags, metadata and the turns it was drawn from."""
    return memory_detail(served.get(bank_id), memory_id)


def _time(field: str, value: str | None) -> datetime | None:
    if value in (None, ""):
        return None
    parsed = m.timestamp_value(value)
    if not isinstance(parsed, datetime):
        raise field_error(field, "an ISO 8601 time, or '' to clear it")
    from core.timeparse import naive_utc

    return naive_utc(parsed)


@router.patch(BANK + "/memories/{memory_id}", tags=["Memory"])
def update_memory(
    bank_id: str, memory_id: str, body: m.UpdateMemoryRequest, served: Served
) -> dict[str, Any]:
    """Correct a memory (text, occurrence times, network, entities) or take it
    out of use (`state: "invalidated"`, reversible with `"valid"`): the same
    audited, undoable curation the studio uses (`POST /engram/v1/banks/{bank}/undo`)."""
    with served.using(bank_id) as bank:
        unit = _unit(bank, memory_id)
        change = None
        edits: dict[str, Any] = {}
        given = body.model_fields_set
        if body.text is not None:
            edits["text"] = body.text
        if body.fact_type is not None:
            edits["network"] = body.fact_type
        for field in ("occurred_start", "occurred_end"):
            if field in given:
                edits[field] = _time(field, getattr(body, field))
        if body.entities is not None:
            edits["entity_ids"] = [_entity_id(bank, name) for name in body.entities]
        if edits:
            change = bank.edit_unit(memory_id, **edits)
        if body.state == "invalidated" and unit.status is UnitStatus.ACTIVE:
            change = (change or _empty()) | bank.hide_units([memory_id], reason=body.reason)
        elif body.state == "valid" and unit.status is UnitStatus.HIDDEN:
            change = (change or _empty()) | bank.unhide_units([memory_id], reason=body.reason)
        elif body.state == "valid" and unit.status is UnitStatus.RETRACTED:
            raise HTTPException(
                409,
                f"memory {memory_id!r} was retracted with an entity: restore the entity "
                "(POST /engram/v1/banks/{bank}/entities/{id}/restore)",
            )
    if change is not None:
        served.changed(bank.id, change)
    return memory_detail(bank, memory_id)


def _empty():
    from core.types import Change

    return Change()


def _entity_id(bank: Bank, name: str) -> str:
    try:
        return bank.resolve_entity(name)
    except EngramError as error:
        raise field_error("entities", f"{error} (name an entity the bank has)") from None


@router.get(BANK + "/memories/{memory_id}/history", tags=["Memory"])
def memory_history(bank_id: str, memory_id: str, served: Served) -> dict[str, Any]:
    """What curation did to this memory (newest first) and, for an opinion, how
    its confidence moved."""
    bank = served.get(bank_id)
    unit = _unit(bank, memory_id)
    entries = bank.audit(target=memory_id, limit=None)
    out: dict[str, Any] = {
        "memory_id": memory_id,
        "type": str(unit.network),
        "history": [
            {
                "seq": e.seq,
                "at": iso(e.recorded_at),
                "actor": e.actor,
                "action": e.action,
                "before": e.before,
                "after": e.after,
                "undone": e.undone,
            }
            for e in entries
        ],
    }
    if unit.network is Network.OPINION:
        trajectory = bank.opinion_history(memory_id)
        out["confidence"] = [
            {
                "at": iso(step.event.happened_at),
                "relation": step.event.relation,
                "before": step.event.confidence_before,
                "after": step.event.confidence_after,
                "reason": step.event.reason,
            }
            for step in trajectory.steps
        ]
    return out


@router.delete(BANK + "/memories", response_model=m.DeleteResponse, tags=["Memory"])
def clear_memories(
    bank_id: str,
    served: Served,
    type: Annotated[Literal[NETWORKS] | None, Query(description="only this network")] = None,
) -> m.DeleteResponse:
    """Delete every memory of the bank (or of one network); its profile and
    documents stay. Audited and undoable, like any deletion in the studio."""
    with served.using(bank_id) as bank:
        ids = [u.id for u in bank.units(type, status=None, limit=None)]
        change = bank.delete_units(ids) if ids else None
    if change is not None:
        served.changed(bank.id, change)
    return m.DeleteResponse(
        success=True, message=f"{len(ids)} memories deleted", deleted_count=len(ids)
    )


# -- entities -------------------------------------------------------------------------


def _entity_item(entity) -> dict[str, Any]:
    return {
        "id": entity.id,
        "canonical_name": entity.name,
        "mention_count": entity.mention_count,
        "first_seen": iso(entity.first_seen),
        "last_seen": iso(entity.last_seen),
        "metadata": {"type": entity.type, "aliases": list(entity.aliases), "status": entity.status},
    }


@router.get(BANK + "/entities", response_model=m.EntityListResponse, tags=["Entities"])
def list_entities(
    bank_id: str,
    served: Served,
    limit: Annotated[int, Query(ge=0, le=limits.PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
    tags: TagsQuery = None,
    tags_match: TagsMatchQuery = "any",
    tag_groups: str | None = None,
) -> m.EntityListResponse:
    """Entities, most mentioned first; with `tags`, only those the memories in
    that scope mention."""
    refuse({"tag_groups": tag_groups}, {"tag_groups": "give tags and tags_match"}, "query")
    bank = served.get(bank_id)
    entities = bank.entities()
    scope = query_scope(tags, tags_match)
    if scope is not None:
        mentioned = {e for u in bank.units(tags=scope, limit=None) for e in u.entity_ids}
        entities = [e for e in entities if e.id in mentioned]
    return m.EntityListResponse(
        items=[m.EntityListItem(**_entity_item(e)) for e in entities[offset : offset + limit]],
        total=len(entities),
        limit=limit,
        offset=offset,
    )


@router.get(
    BANK + "/entities/{entity_id}", response_model=m.EntityDetailResponse, tags=["Entities"]
)
def get_entity(bank_id: str, entity_id: str, served: Served) -> m.EntityDetailResponse:
    bank = served.get(bank_id)
    try:
        entity = bank.entity(entity_id)
    except EngramError:
        raise not_found(f"no entity {entity_id!r} in bank {bank_id!r}") from None
    observation = bank.observation(entity_id)
    observations = (
        [
            m.EntityObservationResponse(
                text=observation.text, mentioned_at=iso(observation.updated_at)
            )
        ]
        if observation is not None
        else []
    )
    return m.EntityDetailResponse(**_entity_item(entity), observations=observations)


# -- documents ------------------------------------------------------------------------


def stored_document(bank: Bank, document_id: str):
    found = bank.documents([document_id])
    if not found:
        raise not_found(f"no document {document_id!r} in bank {bank.name!r}")
    return found[0]


def document_metadata(document) -> dict[str, Any]:
    """Hindsight's open `document_metadata`: Engram's facts about the document,
    and the metadata its items were retained with."""
    return {
        "title": document.title,
        "format": document.format,
        "turns": document.turns,
        "extraction_mode": document.extraction_mode,
        **({"metadata": document.metadata} if document.metadata else {}),
    }


@router.get(BANK + "/documents", response_model=m.ListDocumentsResponse, tags=["Documents"])
def list_documents(
    bank_id: str,
    served: Served,
    q: str | None = None,
    limit: Annotated[int, Query(ge=0, le=limits.PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
    tags: TagsQuery = None,
    tags_match: TagsMatchQuery = "any",
) -> m.ListDocumentsResponse:
    bank = served.get(bank_id)
    scope = query_scope(tags, tags_match)
    documents = [
        d
        for d in bank.documents()
        if (not q or q.lower() in d.id.lower() or q.lower() in d.title.lower())
        and tagging.matches(d.tags, scope)
    ]
    return m.ListDocumentsResponse(
        items=[
            m.DocumentListItem(
                id=d.id,
                bank_id=bank.id,
                content_hash=d.content_hash,
                created_at=iso(d.created_at),
                updated_at=iso(d.created_at),
                text_length=d.text_length,
                memory_unit_count=d.units,
                document_metadata=document_metadata(d),
                tags=list(d.tags),
            )
            for d in documents[offset : offset + limit]
        ],
        total=len(documents),
        limit=limit,
        offset=offset,
    )


@router.get(
    BANK + "/documents/{document_id:path}/chunks",
    response_model=m.ListChunksResponse,
    tags=["Documents"],
)
def document_chunks(
    bank_id: str,
    document_id: str,
    served: Served,
    limit: Annotated[int, Query(ge=0, le=limits.PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
) -> m.ListChunksResponse:
    """The document's turns, in order: Engram's chunks (ids `DOCUMENT:INDEX`)."""
    from core.server.memory_views import chunk_id

    bank = served.get(bank_id)
    document = stored_document(bank, document_id)
    turns = bank.turns(document_id)
    return m.ListChunksResponse(
        items=[
            m.ChunkResponse(
                chunk_id=chunk_id(document_id, t.index),
                document_id=document_id,
                bank_id=bank.id,
                chunk_index=t.index,
                chunk_text=turn_text(t),
                created_at=iso(document.created_at),
            )
            for t in turns[offset : offset + limit]
        ],
        total=len(turns),
        limit=limit,
        offset=offset,
    )


@router.post(BANK + "/documents/{document_id:path}/reprocess", tags=["Documents"])
def reprocess_document(bank_id: str, document_id: str, served: Served) -> dict[str, Any]:
    """Extract the document again from its stored turns (Engram's re-ingest,
    in the bank's configured mode)."""
    with served.using(bank_id) as bank:
        stored_document(bank, document_id)
        report = bank.reingest_document(document_id)
    served.changed(bank.id, report.change)
    return {"success": True, "document_id": document_id, "units": sum(report.facts.values())}


@router.get(
    BANK + "/documents/{document_id:path}", response_model=m.DocumentResponse, tags=["Documents"]
)
def get_document(bank_id: str, document_id: str, served: Served) -> m.DocumentResponse:
    bank = served.get(bank_id)
    document = stored_document(bank, document_id)
    turns = bank.turns(document_id)
    by_network: dict[str, int] = {}
    for unit in bank.units(document=document_id, limit=None):
        by_network[str(unit.network)] = by_network.get(str(unit.network), 0) + 1
    return m.DocumentResponse(
        id=document.id,
        bank_id=bank.id,
        original_text="\n".join(turn_text(t) for t in turns),
        content_hash=document.content_hash,
        created_at=iso(document.created_at),
        updated_at=iso(document.created_at),
        memory_unit_count=document.units,
        nodes_by_fact_type=by_network,
        tags=list(document.tags),
        document_metadata=document_metadata(document),
    )


@router.delete(
    BANK + "/documents/{document_id:path}",
    response_model=m.DeleteDocumentResponse,
    tags=["Documents"],
)
def delete_document(bank_id: str, document_id: str, served: Served) -> m.DeleteDocumentResponse:
    with served.using(bank_id) as bank:
        document = stored_document(bank, document_id)
        change = bank.delete_document(document_id)
    served.changed(bank.id, change)
    return m.DeleteDocumentResponse(
        success=True,
        message=f"document {document_id!r} deleted",
        document_id=document_id,
        memory_units_deleted=document.units,
    )
