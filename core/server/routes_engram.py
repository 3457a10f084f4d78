"""Engram's own API, for what Hindsight lacks: the full recall trace, opinions
and their history, reflection compare, curation, and snapshots.

Every write names what it changed in the same `Change` shape the studio's
panes use: `{"added": {"unit": [...]}, "updated": {...}, "removed": {...}}`.
Who made it is the request's bearer token (its name is the audit's actor).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse
from pydantic import Field
from starlette.background import BackgroundTask

from core import limits
from core.jsonable import to_jsonable
from core.server.admission import read_only
from core.server.models import Question
from core.server.models import Request as Body
from core.server.routes_hindsight import Served, stored_document
from core.types import Change, Disposition, EngramError
from core.vocabulary import CHANNELS, LEVELS, NETWORKS

router = APIRouter(prefix="/engram/v1", tags=["Engram"])
BANK = "/banks/{bank_id}"
SNAPSHOT_IMPORT_SUFFIX = "/engram/v1/snapshots/import"


def change_dict(change: Change) -> dict[str, dict[str, list[str]]]:
    def side(ids) -> dict[str, list[str]]:
        return {str(kind): sorted(values) for kind, values in ids.items()}

    return {
        "added": side(change.added),
        "updated": side(change.updated),
        "removed": side(change.removed),
    }


def write(served, bank_id: str, action) -> dict[str, Any]:
    """Run `action(bank) -> Change` under the bank's lock; announce and describe it."""
    with served.using(bank_id) as bank:
        change = action(bank)
    served.changed(bank.id, change)
    return {"change": change_dict(change)}


# -- banks --------------------------------------------------------------------------


@router.get("/banks")
def banks(served: Served) -> dict[str, Any]:
    """The banks' names (`banks`) and each one's immutable id with its name (`items`):
    a bank is reached by either in every `{bank_id}` path."""
    infos = served.infos()
    return {
        "banks": [i.name for i in infos],
        "items": [{"id": i.id, "name": i.name, "created_at": i.created_at} for i in infos],
    }


@router.get(BANK)
def bank_info(bank_id: str, served: Served) -> dict[str, Any]:
    bank = served.get(bank_id)
    profile = bank.profile()
    return {
        "id": bank.id,
        "name": bank.name,
        "background": profile.background,
        "agent_name": profile.agent_name,
        "disposition": profile.disposition.to_dict(),
        "units": {str(n): bank.count(n) for n in NETWORKS},
        "entities": len(bank.entities()),
        "documents": len(bank.documents()),
        "pending_jobs": bank.pending_jobs(),
    }


@router.get("/config/spec")
def config_spec() -> dict[str, Any]:
    """Every bank setting: type, range, default and help (core/config.py)."""
    from core.config import spec_table

    return {"settings": spec_table()}


class ConfigChange(Body):
    settings: dict[str, Any]


@router.get(BANK + "/config")
def bank_config(bank_id: str, served: Served) -> dict[str, Any]:
    bank = served.get(bank_id)
    return {"config": bank.profile().config, "warnings": bank.profile_warnings()}


@router.patch(BANK + "/config")
def change_config(bank_id: str, body: ConfigChange, served: Served) -> dict[str, Any]:
    """Change settings (null: back to the default); all are checked before any is
    saved, and a bad one is a 422 naming its key."""
    from core.config import checked_changes

    settings = checked_changes(body.settings)  # before the lock: a bad key costs nothing
    return write(served, bank_id, lambda bank: bank.set_profile(config=settings))


@router.get(BANK + "/verify")
def verify(bank_id: str, served: Served) -> dict[str, Any]:
    report = served.get(bank_id).verify()
    return {"ok": report.ok, **to_jsonable(report)}


# -- recall -------------------------------------------------------------------------


class RecallBody(Body):
    query: Question
    budget_tokens: int = Field(1024, ge=1)
    networks: list[Literal[NETWORKS]] | None = None
    level: Literal[tuple(LEVELS)] = "mid"
    now: datetime | None = None
    start: datetime | None = None
    end: datetime | None = None
    channels: list[Literal[CHANNELS]] | None = None
    reranker: Literal["heuristic", "none"] | None = None
    observation_budget: int = Field(0, ge=0)


@router.post(BANK + "/recall")
@read_only
def recall(bank_id: str, body: RecallBody, served: Served) -> dict[str, Any]:
    """Engram's recall with everything it reports: scores per channel, fusion,
    rerank, packing and timings (`trace`)."""
    result = served.get(bank_id).recall(**body.model_dump(exclude={"query"}), query=body.query)
    return result.to_dict()


# -- reflect and opinions -------------------------------------------------------------


class DispositionBody(Body):
    skepticism: int = Field(3, ge=1, le=5)
    literalism: int = Field(3, ge=1, le=5)
    empathy: int = Field(3, ge=1, le=5)
    bias: float = Field(0.2, ge=0.0, le=1.0)

    def value(self) -> Disposition:
        return Disposition(**self.model_dump())


class ReflectBody(Body):
    query: Question
    disposition: DispositionBody | None = None
    budget_tokens: int = Field(4096, ge=1)
    commit: bool = True
    now: datetime | None = None


@router.post(BANK + "/reflect")
def reflect(bank_id: str, body: ReflectBody, served: Served) -> dict[str, Any]:
    """Reflect under the bank's disposition or the one given; `commit` keeps it
    and applies its opinions."""
    disposition = body.disposition.value() if body.disposition else None
    with served.using(bank_id) as bank:
        reflection = bank.reflect(
            body.query, disposition, body.budget_tokens, commit=False, now=body.now
        )
        change = bank.commit_reflection(reflection) if body.commit else Change()
    served.changed(bank.id, change)
    return {"reflection": reflection.to_dict(), "change": change_dict(change)}


class CompareBody(Body):
    query: Question
    dispositions: list[DispositionBody] = Field(min_length=2, max_length=4)
    budget_tokens: int = Field(4096, ge=1)
    now: datetime | None = None


@router.post(BANK + "/reflect/compare")
@read_only
def compare(bank_id: str, body: CompareBody, served: Served) -> dict[str, Any]:
    """The same evidence answered under 2–4 dispositions. Commits nothing."""
    comparison = served.get(bank_id).compare(
        body.query, [d.value() for d in body.dispositions], body.budget_tokens, now=body.now
    )
    return {
        "query": comparison.query,
        "mixed": comparison.mixed,
        "warning": comparison.warning or None,
        "reflections": [r.to_dict() for r in comparison],
    }


@router.get(BANK + "/reflections")
def reflections(
    bank_id: str,
    served: Served,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
) -> dict[str, Any]:
    found = served.get(bank_id).reflections(limit=limit, offset=offset)
    return {"reflections": [r.to_dict() for r in found]}


@router.get(BANK + "/opinions")
def opinions(
    bank_id: str,
    served: Served,
    entity: str | None = None,
    min_confidence: Annotated[float | None, Query(ge=0, le=1)] = None,
    limit: Annotated[int | None, Query(ge=1, le=limits.PAGE)] = None,
) -> dict[str, Any]:
    found = served.get(bank_id).opinions(entity, min_confidence=min_confidence, limit=limit)
    return {"opinions": to_jsonable(found)}


@router.get(BANK + "/opinions/changed")
def opinions_changed(
    bank_id: str, served: Served, start: datetime | None = None, end: datetime | None = None
) -> dict[str, Any]:
    changes = served.get(bank_id).opinions_changed(start, end)
    return {"changes": to_jsonable(changes)}


@router.get(BANK + "/opinions/{opinion_id}/history")
def opinion_history(bank_id: str, opinion_id: str, served: Served) -> dict[str, Any]:
    trajectory = served.get(bank_id).opinion_history(opinion_id)
    return {
        "opinion": to_jsonable(trajectory.opinion),
        "texts": trajectory.texts,
        "steps": to_jsonable(list(trajectory.steps)),
    }


# -- curation -----------------------------------------------------------------------


@router.get(BANK + "/units/{unit_id}")
def unit(bank_id: str, unit_id: str, served: Served) -> dict[str, Any]:
    bank = served.get(bank_id)
    found = bank.unit(unit_id)
    return {"unit": to_jsonable(found), "provenance": to_jsonable(bank.provenance(unit_id))}


class EditBody(Body):
    text: str | None = None
    network: Literal[NETWORKS] | None = None
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    confidence: float | None = Field(None, ge=0, le=1)
    entity_ids: list[str] | None = None


@router.patch(BANK + "/units/{unit_id}")
def edit_unit(bank_id: str, unit_id: str, body: EditBody, served: Served) -> dict[str, Any]:
    """Edit a unit; only the fields given change (audited, undoable)."""
    given = body.model_dump(exclude_unset=True)
    return write(served, bank_id, lambda b: b.edit_unit(unit_id, **given))


class UnitsBody(Body):
    unit_ids: list[str] = Field(min_length=1)


@router.post(BANK + "/units/delete")
def delete_units(bank_id: str, body: UnitsBody, served: Served) -> dict[str, Any]:
    return write(served, bank_id, lambda b: b.delete_units(body.unit_ids))


class RenameBody(Body):
    name: str = Field(min_length=1)
    keep_alias: bool = True


@router.patch(BANK + "/entities/{entity_id}")
def rename_entity(bank_id: str, entity_id: str, body: RenameBody, served: Served) -> dict[str, Any]:
    return write(
        served,
        bank_id,
        lambda b: b.rename_entity(entity_id, body.name, keep_alias=body.keep_alias),
    )


class MergeBody(Body):
    into: str = Field(min_length=1, description="the entity that stays")


@router.post(BANK + "/entities/{entity_id}/merge")
def merge_entities(bank_id: str, entity_id: str, body: MergeBody, served: Served) -> dict[str, Any]:
    return write(served, bank_id, lambda b: b.merge_entities(entity_id, body.into))


class SplitBody(Body):
    unit_ids: list[str] = Field(min_length=1)
    name: str = Field(min_length=1)
    type: str | None = None


@router.post(BANK + "/entities/{entity_id}/split")
def split_entity(bank_id: str, entity_id: str, body: SplitBody, served: Served) -> dict[str, Any]:
    return write(
        served,
        bank_id,
        lambda b: b.split_entity(entity_id, body.unit_ids, body.name, type=body.type),
    )


@router.get(BANK + "/entities/{entity_id}/retract-preview")
def retract_preview(bank_id: str, entity_id: str, served: Served) -> dict[str, Any]:
    return to_jsonable(served.get(bank_id).retract_preview(entity_id))


@router.post(BANK + "/entities/{entity_id}/retract")
def retract(bank_id: str, entity_id: str, served: Served):
    return write(served, bank_id, lambda b: b.retract_entity(entity_id))


@router.post(BANK + "/entities/{entity_id}/restore")
def restore(bank_id: str, entity_id: str, served: Served):
    return write(served, bank_id, lambda b: b.restore_entity(entity_id))


class PurgeBody(Body):
    confirm: bool = Field(
        description="must be true: a purge destroys the entity and everything derived "
        "from it, and cannot be undone"
    )


@router.post(BANK + "/entities/{entity_id}/purge")
def purge(bank_id: str, entity_id: str, body: PurgeBody, served: Served) -> dict[str, Any]:
    if not body.confirm:
        raise EngramError('a purge cannot be undone: send {"confirm": true} to run it')
    return write(served, bank_id, lambda b: b.purge_entity(entity_id, confirm=True))


@router.post(BANK + "/undo")
def undo(bank_id: str, served: Served) -> dict[str, Any]:
    return write(served, bank_id, lambda b: b.undo())


@router.post(BANK + "/redo")
def redo(bank_id: str, served: Served) -> dict[str, Any]:
    return write(served, bank_id, lambda b: b.redo())


@router.get(BANK + "/audit")
def audit(
    bank_id: str,
    served: Served,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    offset: Annotated[int, Query(ge=0, le=limits.OFFSET)] = 0,
    action: str | None = None,
    target: str | None = None,
    actor: str | None = None,
) -> dict[str, Any]:
    entries = served.get(bank_id).audit(
        limit=limit, offset=offset, action=action, target=target, actor=actor
    )
    return {"entries": to_jsonable(entries)}


# -- documents (Hindsight's API lists, reads and deletes them) -------------------------


@router.get(BANK + "/documents/{document_id}/delete-preview")
def document_delete_preview(bank_id: str, document_id: str, served: Served) -> dict[str, Any]:
    """What deleting the document would remove (each unit) and change, before
    DELETE /v1/default/banks/{bank_id}/documents/{document_id} does it."""
    bank = served.get(bank_id)
    stored_document(bank, document_id)  # a 404 naming it, as Hindsight's routes give
    return to_jsonable(bank.document_preview(document_id))


class ReingestBody(Body):
    mode: Literal["auto", "llm", "rules", "verbatim"] = "auto"


@router.post(BANK + "/documents/{document_id}/reingest")
def reingest_document(
    bank_id: str, document_id: str, served: Served, body: ReingestBody | None = None
) -> dict[str, Any]:
    """Extract a stored document again from its turns. Failed chunks are listed
    (nothing of them is written); the observation rebuilds it queues are counted
    in `pending_jobs` (recall leaves out what they will rebuild until they run)."""
    mode = (body or ReingestBody()).mode
    with served.using(bank_id) as bank:
        stored_document(bank, document_id)
        report = bank.reingest_document(document_id, mode)
        pending = bank.pending_jobs()
    served.changed(bank.id, report.change)
    return {
        "mode": report.mode,
        "facts": report.facts_total,
        "failures": [f.reason for f in report.failures],
        "pending_jobs": pending,
        "change": change_dict(report.change),
    }


# -- snapshots ----------------------------------------------------------------------


@router.get(BANK + "/snapshot", response_class=FileResponse)
def export_snapshot(bank_id: str, served: Served) -> FileResponse:
    """The whole bank as one `.engram` file, streamed."""
    path = served.transfer_path(bank_id)
    try:
        with served.using(bank_id) as bank:
            # Where the client keeps the file is not known here: say how it left.
            bank.export_snapshot(path, record_as="downloaded", record_host="an HTTP client")
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return FileResponse(
        path,
        media_type="application/zip",
        filename=f"{_safe_filename(bank.name)}.engram",
        background=BackgroundTask(path.unlink, missing_ok=True),
    )


def _safe_filename(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "bank"


@router.post(
    "/snapshots/import",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
            },
        }
    },
)
async def import_snapshot(
    request: Request,
    served: Served,
    name: str | None = None,
    replace: bool = False,
    restore_purged: bool = False,
):
    """Upload a `.engram` file (the raw bytes as the body) to create a bank from it
    (default name: the one it was exported with), or with `replace=true` to replace
    the bank of that name atomically. The body streams to a temporary file within
    the snapshot size limit; the importer validates it and changes nothing when it
    refuses it. With `Accept: application/x-ndjson` the answer streams the
    import's progress and it can be cancelled (core/server/calls.py); its value
    is the bank's listing. A snapshot that would bring back what the replaced bank
    purged is a 409 unless `restore_purged=true`."""
    from starlette.concurrency import run_in_threadpool

    from core.server.routes_cli import NDJSON, _streamed
    from core.server.wire import encode

    path = served.transfer_path()
    try:
        with path.open("wb") as out:
            async for chunk in request.stream():
                out.write(chunk)
    except BaseException:
        path.unlink(missing_ok=True)
        raise

    def work(progress=None, cancel=None):
        try:
            bank = served.import_snapshot(
                path, name, replace, progress=progress, cancel=cancel, restore_purged=restore_purged
            )
        finally:
            path.unlink(missing_ok=True)
        return {"value": encode(served.info(bank.id))}, bank

    if NDJSON in request.headers.get("accept", ""):
        return _streamed(request, lambda progress, cancel: work(progress, cancel)[0])
    _, bank = await run_in_threadpool(work)
    return {"bank": bank.name, "units": bank.count(status=None)}
