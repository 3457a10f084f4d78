"""Hindsight 1.1.0's paths and shapes, over Engram banks.

A Hindsight `bank_id` is an Engram bank's name. What both systems have is
answered in Hindsight's shapes; what only Hindsight has (mental models,
directives, tags, the knowledge base, webhooks, files...) is a 501 naming it,
and a request field Engram cannot honour is a 422 naming the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request

from core import limits
from core.bank import Bank
from core.config import checked_changes
from core.server import models as m
from core.server.admission import read_only
from core.server.errors import not_found, not_supported, refuse
from core.server.operations import Operation, Operations
from core.server.retain import check_request, retain
from core.server.served import ServedBanks
from core.server.version import ENGRAM_VERSION, HINDSIGHT_API_VERSION
from core.types import BankNotFoundError, Disposition, EngramError, UnitStatus
from core.vocabulary import NETWORKS

router = APIRouter()
unsupported = APIRouter()
BANK = "/v1/default/banks/{bank_id}"
LEVEL_TOKENS = {"low": 2048, "mid": 4096, "high": 8192}


def served_banks(request: Request) -> ServedBanks:
    return request.app.state.served


def operations(request: Request) -> Operations:
    return request.app.state.operations


Served = Annotated[ServedBanks, Depends(served_banks)]
Ops = Annotated[Operations, Depends(operations)]


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


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
    try:
        served.get(bank_id)
    except BankNotFoundError:
        on_disk = {ref for i in served.engine.banks() for ref in (i.id, i.name)}
        if not served.open_on_demand and bank_id in on_disk:
            raise  # on disk, but this process does not serve it
        # The client's bank_id is the bank's id (and its first name): its handle for good.
        served.create(bank_id, bank_id=bank_id)
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
            raise HTTPException(
                422,
                [
                    {
                        "loc": ["body", "updates"],
                        "msg": str(error).strip("'\""),
                        "type": "value_error",
                    }
                ],
            ) from error
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
def retain_memories(
    bank_id: str, body: m.RetainRequest, served: Served, ops: Ops
) -> m.RetainResponse:
    """Retain items. Synchronous: answers once every document is committed.
    With `"async": true`: answers at once with an `operation_id` to poll."""
    mode = check_request(body)
    name = served.get(bank_id).id

    def work() -> dict[str, Any]:
        with served.using(name) as bank:
            change, summary = retain(bank, body, mode)
        served.changed(name, change)
        return summary

    if body.async_:
        op = ops.submit(name, "retain", len(body.items), work, body.operation_id)
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


def _status(op: Operation) -> m.OperationStatusResponse:
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
    return _status(op)


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
    "tags": "Engram has no tags",
    "tag_groups": "Engram has no tags",
    "min_scores": "Engram packs by rank within max_tokens, without score floors",
    "temporal_window": "give the time in the query, or use /engram/v1 recall's start/end",
    "prefer_observations": "Engram recalls the networks named in `types`",
}


def entity_names(bank: Bank, ids: set[str]) -> dict[str, str]:
    return bank.entity_names(sorted(ids)) if ids else {}


@router.post(BANK + "/memories/recall", response_model=m.RecallResponse, tags=["Memory"])
@read_only
def recall(bank_id: str, body: m.RecallRequest, served: Served) -> m.RecallResponse:
    """Engram's recall: `budget` is how many candidates each channel returns
    (low/mid/high), `max_tokens` the token budget the facts are packed into."""
    refuse(body.model_dump(), RECALL_REFUSALS)
    include = body.include or m.IncludeOptions()
    refuse(
        include.model_dump(),
        {
            "chunks": "source turns come with /engram/v1 recall and the documents API",
            "source_facts": "Engram's observations name their entities, not source facts",
        },
        where="include",
    )
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
    )
    names = entity_names(bank, {e for item in result.items for e in item.entity_ids})
    results = [
        m.RecallResult(
            id=item.unit_id,
            text=item.text,
            type=item.network,
            entities=[names[e] for e in item.entity_ids if e in names],
            occurred_start=iso(item.occurred_start),
            occurred_end=iso(item.occurred_end),
            score=item.score,
        )
        for item in result.items
    ]
    entities = None
    if include.entities is not None:
        entities = {}
        for obs in result.observations:
            for entity_id in obs.entity_ids:
                name = names.get(entity_id) or entity_names(bank, {entity_id}).get(entity_id, "")
                entities[name] = {
                    "entity_id": entity_id,
                    "canonical_name": name,
                    "observations": [{"text": obs.text}],
                }
    return m.RecallResponse(
        results=results, trace=result.trace.to_dict() if body.trace else None, entities=entities
    )


REFLECT_REFUSALS = {
    "context": "put it in the query",
    "max_tokens": "the answer's length is up to the bank's language model",
    "response_schema": "Engram answers in text",
    "tags": "Engram has no tags",
    "tag_groups": "Engram has no tags",
    "fact_types": "Engram's reflect weighs every network",
    "exclude_mental_model_ids": "Engram has no mental models",
    "reflect_search_observations_max_tokens": "Engram's reflect has one evidence budget",
}


@router.post(BANK + "/reflect", response_model=m.ReflectResponse, tags=["Memory"])
def reflect(bank_id: str, body: m.ReflectRequest, served: Served) -> m.ReflectResponse:
    """Answer from memory under the bank's disposition; the reflection is kept
    and the opinions it forms are applied (as Hindsight's reflect does).
    `budget` is the evidence budget (low 2048, mid 4096, high 8192 tokens)."""
    refuse(body.model_dump(), REFLECT_REFUSALS)
    if body.include is not None and body.include.tool_calls is not None:
        raise not_supported("tool_calls", "Engram's reflect makes no tool calls", "include")
    with served.using(bank_id) as bank:
        reflection = bank.reflect(body.query, budget_tokens=LEVEL_TOKENS[body.budget], commit=False)
        change = bank.commit_reflection(reflection)
    served.changed(bank.id, change)
    based_on = None
    if body.include is not None and body.include.facts is not None:
        based_on = m.ReflectBasedOn(
            memories=[
                m.ReflectFact(id=e.unit_id, text=e.text, type=e.network)
                for e in reflection.evidence
            ]
        )
    return m.ReflectResponse(
        text=reflection.answer,
        based_on=based_on,
        reflection_id=reflection.id,
        mode=reflection.mode,
    )


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
    tags: Annotated[list[str] | None, Query()] = None,
    tags_match: str | None = None,
    consolidation_state: str | None = None,
) -> m.ListMemoryUnitsResponse:
    """Units, most recent occurrence first. `time_field` may only be
    `occurred_start` (a window over when facts happened); `state=invalidated`
    lists retracted units."""
    refuse(
        {"tags": tags, "consolidation_state": consolidation_state},
        {"tags": "Engram has no tags", "consolidation_state": "Engram queues observation jobs"},
        where="query",
    )
    bank = served.get(bank_id)
    filters: dict[str, Any] = {
        "network": type,
        "text": q,
        "entity": entity_id,
        "start": start_date,
        "end": end_date,
        "status": UnitStatus.RETRACTED if state == "invalidated" else UnitStatus.ACTIVE,
        "document": document_id,
    }
    units = bank.units(
        order="occurred_start", descending=True, offset=offset, limit=limit, **filters
    )
    total = bank.count(**filters)
    names = entity_names(bank, {e for u in units for e in u.entity_ids})
    return m.ListMemoryUnitsResponse(
        items=[_memory_item(u, names) for u in units], total=total, limit=limit, offset=offset
    )


def _memory_item(unit, names: dict[str, str]) -> m.MemoryUnitListItem:
    return m.MemoryUnitListItem(
        id=unit.id,
        text=unit.text,
        date=iso(unit.occurred_start or unit.mentioned_at or unit.created_at),
        fact_type=str(unit.network),
        mentioned_at=iso(unit.mentioned_at),
        occurred_start=iso(unit.occurred_start),
        occurred_end=iso(unit.occurred_end),
        entities=", ".join(names[e] for e in unit.entity_ids if e in names) or None,
        state="invalidated" if unit.status is UnitStatus.RETRACTED else "valid",
        updated_at=iso(unit.updated_at),
    )


@router.get(BANK + "/memories/{memory_id}", tags=["Memory"])
def get_memory(bank_id: str, memory_id: str, served: Served) -> dict[str, Any]:
    """One unit with its entities and the turns it was drawn from."""
    bank = served.get(bank_id)
    try:
        unit = bank.unit(memory_id)
    except EngramError as error:
        raise not_found(str(error)) from error
    names = entity_names(bank, set(unit.entity_ids))
    return {
        **_memory_item(unit, names).model_dump(),
        "entities": [names[e] for e in unit.entity_ids if e in names],
        "confidence": unit.confidence,
        "source_turns": [
            {"id": t.id, "speaker": t.speaker, "text": t.text, "timestamp": iso(t.timestamp)}
            for t in bank.provenance(memory_id)
        ],
    }


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
    tags: Annotated[list[str] | None, Query()] = None,
    tags_match: str | None = None,
    tag_groups: str | None = None,
) -> m.EntityListResponse:
    refuse(
        {"tags": tags, "tag_groups": tag_groups},
        dict.fromkeys(("tags", "tag_groups"), "Engram has no tags"),
        "query",
    )
    entities = served.get(bank_id).entities()
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
    for document in bank.documents():
        if document.id == document_id:
            return document
    raise not_found(f"no document {document_id!r} in bank {bank.name!r}")


def _document_metadata(document) -> dict[str, Any]:
    return {
        "title": document.title,
        "format": document.format,
        "source_path": document.source_path,
        "turns": document.turns,
        "extraction_mode": document.extraction_mode,
    }


@router.get(BANK + "/documents", response_model=m.ListDocumentsResponse, tags=["Documents"])
def list_documents(
    bank_id: str,
    served: Served,
    q: str | None = None,
    limit: Annotated[int, Query(ge=0, le=limits.PAGE)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
) -> m.ListDocumentsResponse:
    bank = served.get(bank_id)
    documents = [
        d
        for d in bank.documents()
        if not q or q.lower() in d.id.lower() or q.lower() in d.title.lower()
    ]
    return m.ListDocumentsResponse(
        items=[
            m.DocumentListItem(
                id=d.id,
                bank_id=bank.id,
                content_hash=d.content_hash,
                created_at=iso(d.created_at),
                updated_at=iso(d.created_at),
                memory_unit_count=d.units,
                document_metadata=_document_metadata(d),
            )
            for d in documents[offset : offset + limit]
        ],
        total=len(documents),
        limit=limit,
        offset=offset,
    )


@router.get(
    BANK + "/documents/{document_id:path}", response_model=m.DocumentResponse, tags=["Documents"]
)
def get_document(bank_id: str, document_id: str, served: Served) -> m.DocumentResponse:
    bank = served.get(bank_id)
    document = stored_document(bank, document_id)
    turns = bank.turns(document_id)
    text = "\n".join(f"{t.speaker}: {t.text}" if t.speaker else t.text for t in turns)
    return m.DocumentResponse(
        id=document.id,
        bank_id=bank.id,
        original_text=text,
        content_hash=document.content_hash,
        created_at=iso(document.created_at),
        updated_at=iso(document.created_at),
        memory_unit_count=document.units,
        document_metadata=_document_metadata(document),
    )


@router.delete(
    BANK + "/documents/{document_id:path}",
    response_model=m.DeleteDocumentResponse,
    tags=["Documents"],
)
def delete_document(bank_id: str, document_id: str, served: Served) -> m.DeleteDocumentResponse:
    with served.using(bank_id) as bank:
        document = stored_document(bank, document_id)
        change = bank.delete_document(document_id, actor="agent")
    served.changed(bank.id, change)
    return m.DeleteDocumentResponse(
        success=True,
        message=f"document {document_id!r} deleted",
        document_id=document_id,
        memory_units_deleted=document.units,
    )


# -- what only Hindsight has ------------------------------------------------------------

UNSUPPORTED = {
    "mental-models": "mental models",
    "directives": "directives",
    "knowledge": "the knowledge base",
    "webhooks": "webhooks",
    "files": "file uploads",
    "tags": "tags",
    "aliases": "bank aliases",
    "consolidate": "consolidation runs (Engram queues observation jobs)",
    "consolidation": "consolidation",
    "observations": "observation scopes",
    "graph": "the graph view",
    "chunks": "chunks",
    "attachments": "attachments",
    "llm-requests": "LLM traces",
    "audit": "Hindsight's audit log (see /engram/v1/.../audit)",
}


@unsupported.api_route(
    "/v1/{rest:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False
)
def not_in_engram(rest: str) -> None:
    """Anything else Hindsight has: a 501 naming it, never a silent success; a
    path neither has is a 404."""
    words = rest.split("/")
    feature = next((UNSUPPORTED[w] for w in words if w in UNSUPPORTED), None)
    if feature is None:
        raise HTTPException(404, f"no such path: /v1/{rest}")
    raise HTTPException(501, f"not supported by Engram: {feature}")
