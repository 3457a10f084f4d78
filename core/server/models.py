"""Request and response bodies of the Hindsight-compatible API (Hindsight 1.1.0's
shapes: what `hindsight-client` 1.1.0 sends and validates).

Requests forbid unknown fields, so a misspelt field is a 422 naming it rather
than silently ignored. Fields Hindsight has and Engram cannot honour are
accepted by the model and refused by the route when set (see `refuse`).

Every text field has its limit from core/limits.py (the importer's, MCP's and
the CLI's too), and every field of every request is checked for what no store
can keep (a lone surrogate, a NUL, nesting past `limits.NESTING`) and for a
time its offset carries outside years 1..9999: a 422 naming the field.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from core import limits
from core import tags as tagging
from core.timeparse import TimeOutOfRange, naive_utc
from core.types import InvalidInputError
from core.vocabulary import LEVELS

Budget = Literal[tuple(LEVELS)]
TagsMatch = Literal[tagging.TAG_MATCHES]
Content = Annotated[str, Field(max_length=limits.TURN_CHARS)]
Name = Annotated[str, Field(max_length=limits.NAME_CHARS)]
Identifier = Annotated[str, Field(max_length=limits.ID_CHARS)]
Title = Annotated[str, Field(max_length=limits.TITLE_CHARS)]
Question = Annotated[str, Field(min_length=1, max_length=limits.QUERY_CHARS)]
Background = Annotated[str, Field(max_length=limits.BACKGROUND_CHARS)]


def _in_utc_range(value: datetime) -> datetime:
    try:
        naive_utc(value)
    except TimeOutOfRange as error:
        raise PydanticCustomError("datetime_range", str(error)) from None
    return value


# A time a query parameter gives (a body's are checked by `Request`).
Time = Annotated[datetime, AfterValidator(_in_utc_range)]


def _checked(check, value, field: str):
    """A core check as a pydantic validator: its message becomes the 422's."""
    try:
        return check(value, field)
    except InvalidInputError as error:
        raise ValueError(str(error)) from None


def timestamp_value(value: Any) -> Any:
    """Hindsight's timestamp: ISO 8601 (a trailing Z is UTC), "unset" (no time at
    all), or empty/null (the time of the request)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if value.strip().lower() == "unset":
            return "unset"
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"not an ISO 8601 time: {value[:40]!r} (like 2024-01-15T10:30:00Z, or 'unset')"
            ) from None
    return value


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        """What no store keeps is a 422 naming the field (and, inside a list or an
        object, the element), never a 500 from DuckDB."""
        if isinstance(value, datetime):
            return _in_utc_range(value)
        problem = limits.first_unstorable(value)
        if problem is not None:
            where = f"{limits.field_name(problem.loc)}: " if problem.loc else ""
            raise PydanticCustomError(problem.kind, where + problem.reason)
        return value


class Response(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


# -- monitoring -----------------------------------------------------------------------


class FeaturesInfo(Response):
    observations: bool = True
    mcp: bool = True
    worker: bool = False
    bank_config_api: bool = True
    bank_llm_health: bool = True
    file_upload_api: bool = False
    document_export_api: bool = False
    document_import_api: bool = False
    # Hindsight's request audit log is not Engram's curation audit (/engram/v1/.../audit).
    audit_log: bool = False
    llm_trace: bool = False
    store_document_text: bool = True


class VersionResponse(Response):
    api_version: str = Field(description="the Hindsight API version this server speaks")
    engram_version: str
    features: FeaturesInfo


class HealthResponse(Response):
    status: str
    banks: int


# -- banks ----------------------------------------------------------------------------


class DispositionTraits(Request):
    skepticism: int = Field(ge=1, le=5)
    literalism: int = Field(ge=1, le=5)
    empathy: int = Field(ge=1, le=5)


class BankListItem(Response):
    bank_id: str
    name: str | None = None
    disposition: DispositionTraits
    mission: str | None = None
    created_at: str | None = None
    fact_count: int | None = None


class BankListResponse(Response):
    banks: list[BankListItem]
    total: int
    limit: int
    offset: int


class BankProfileResponse(Response):
    bank_id: str
    name: str
    disposition: DispositionTraits
    mission: str
    background: str | None = None


class CreateBankRequest(Request):
    """Hindsight's create-or-update body. `name` is kept as the agent's name,
    `mission`/`reflect_mission`/`background` as the bank's background."""

    name: Name | None = None
    disposition: DispositionTraits | None = None
    disposition_skepticism: int | None = Field(None, ge=1, le=5)
    disposition_literalism: int | None = Field(None, ge=1, le=5)
    disposition_empathy: int | None = Field(None, ge=1, le=5)
    mission: Background | None = None
    background: Background | None = None
    reflect_mission: Background | None = None
    # Hindsight's retain and retrieval switches: refused when set.
    retain_mission: str | None = None
    retain_extraction_mode: str | None = None
    retain_custom_instructions: str | None = None
    retain_chunk_size: int | None = None
    retain_structured_chunk_size: int | None = None
    retain_max_attachments_per_chunk: int | None = None
    enable_observations: bool | None = None
    observations_mission: str | None = None
    enable_text_search: bool | None = None
    enable_temporal_retrieval: bool | None = None
    enable_graph_retrieval: bool | None = None
    enable_reranking: bool | None = None


class UpdateDispositionRequest(Request):
    disposition: DispositionTraits


class BankConfigResponse(Response):
    bank_id: str
    config: dict[str, Any]
    overrides: dict[str, Any]


class BankConfigUpdate(Request):
    updates: dict[str, Any]


class DeleteResponse(Response):
    success: bool
    message: str | None = None
    deleted_count: int | None = None


class BankStatsResponse(Response):
    bank_id: str
    total_nodes: int
    total_links: int
    total_documents: int
    nodes_by_fact_type: dict[str, int]
    links_by_link_type: dict[str, int]
    links_by_fact_type: dict[str, int]
    links_breakdown: dict[str, dict[str, int]]
    pending_operations: int
    failed_operations: int
    pending_consolidation: int | None = None
    total_observations: int | None = None


# -- retain ---------------------------------------------------------------------------


class EntityInput(Request):
    text: str
    type: str | None = None


class MemoryItem(Request):
    content: Content | list[dict[str, Any]] = Field(description="the text to retain")
    timestamp: datetime | Literal["unset"] | None = Field(
        None,
        description="when it was said (ISO 8601; a time without a zone is UTC). Omitted: the "
        "time of the request, against which 'yesterday' or 'last week' in the text is read. "
        "'unset': no time at all (timeless reference material).",
    )
    context: Title | None = Field(None, description="kept as the document's title")
    metadata: dict[str, str] | None = Field(
        None,
        description="any string map (at most 100 keys), kept on the turn and on every memory "
        "drawn from it, returned by recall and the listings; 'speaker' also names the "
        "turn's speaker",
    )
    document_id: Identifier | None = None
    entities: list[EntityInput] | None = None
    resolve_entities: bool | None = None
    tags: list[str] | None = Field(
        None, description="scopes (a user, a session...): recall, reflect and list filter by them"
    )
    observation_scopes: str | list[list[str]] | None = None
    strategy: str | None = Field(
        None, description="Engram's extraction mode: auto, llm, rules or verbatim"
    )
    update_mode: Literal["replace", "append"] | None = Field(
        None,
        description="with a document_id already retained: 'replace' (default) its content, or "
        "'append' this item's turns after its stored ones",
    )

    _timestamp = field_validator("timestamp", mode="before")(
        classmethod(lambda cls, v: timestamp_value(v))
    )

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value):
        return list(_checked(tagging.check_tags, value, "tags")) if value is not None else None

    @field_validator("metadata", mode="before")
    @classmethod
    def _metadata(cls, value):
        return _checked(tagging.check_metadata, value, "metadata") if value is not None else None

    @field_validator("metadata")
    @classmethod
    def _speaker_is_a_name(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        speaker = (value or {}).get("speaker")
        if speaker is not None and len(speaker) > limits.NAME_CHARS:
            raise PydanticCustomError(
                "string_too_long",
                f"speaker: is {len(speaker):,} characters, over the limit of"
                f" {limits.NAME_CHARS:,} for a name",
            )
        return value


class RetainRequest(Request):
    items: list[MemoryItem] = Field(min_length=1)
    async_: bool | None = Field(False, alias="async")
    document_tags: list[str] | None = Field(
        None, description="tags for every item (added to each item's own)"
    )
    operation_id: Identifier | None = None

    @field_validator("document_tags", mode="before")
    @classmethod
    def _tags(cls, value):
        if value is None:
            return None
        return list(_checked(tagging.check_tags, value, "document_tags"))


class RetainResponse(Response):
    success: bool
    bank_id: str
    items_count: int
    async_: bool = Field(alias="async", serialization_alias="async")
    operation_id: str | None = None
    operation_ids: list[str] | None = None
    document_ids: list[str] | None = None
    units_added: int | None = None


class OperationStatusResponse(Response):
    operation_id: str
    status: Literal["pending", "processing", "completed", "failed", "cancelled"]
    operation_type: str = "retain"
    created_at: str | None = None
    updated_at: str | None = None
    completed_at: str | None = None
    error_message: str | None = None
    result_metadata: dict[str, Any] | None = None


class OperationResponse(Response):
    id: str
    task_type: str
    items_count: int
    created_at: str
    status: str
    error_message: str | None = None


class OperationsListResponse(Response):
    bank_id: str
    total: int
    limit: int
    offset: int
    operations: list[OperationResponse]


# -- recall and reflect ---------------------------------------------------------------


class IncludeMaxTokens(Request):
    max_tokens: int | None = None
    max_tokens_per_observation: int | None = None


class IncludeOptions(Request):
    """What comes with the results. As in Hindsight, entity observations come by
    default (500 tokens); `"entities": null` leaves them out."""

    entities: IncludeMaxTokens | None = Field(default_factory=lambda: IncludeMaxTokens())
    chunks: IncludeMaxTokens | None = None
    source_facts: IncludeMaxTokens | None = None


class TaggedRequest(Request):
    """Hindsight's tag filter: `tags` with `tags_match`, or `tag_groups`."""

    tags: list[str] | None = Field(
        None, description="only memories these tags let through (see tags_match)"
    )
    tags_match: TagsMatch = Field(
        "any",
        description="'any' (one of the tags, or untagged), 'all' (every tag, or untagged), "
        "'any_strict' / 'all_strict' (the same, untagged excluded), 'exact' (exactly these)",
    )
    tag_groups: list[dict[str, Any]] | None = Field(
        None,
        description="a compound filter, AND-ed: leaves {tags, match} and {and: [...]}, "
        "{or: [...]}, {not: {...}}",
    )

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value):
        return list(_checked(tagging.check_tags, value, "tags")) if value is not None else None

    @model_validator(mode="after")
    def _one_filter(self):
        if self.tags is not None and self.tag_groups is not None:
            raise ValueError("'tags' and 'tag_groups' are mutually exclusive")
        return self

    def tag_scope(self) -> tagging.TagScope | None:
        try:
            groups = [
                tagging.group_from_json(g, f"tag_groups[{i}]")
                for i, g in enumerate(self.tag_groups or ())
            ]
        except InvalidInputError as error:
            from core.server.errors import field_error

            raise field_error("tag_groups", str(error)) from None
        return tagging.scope_of(self.tags, self.tags_match, groups)


class RecallRequest(TaggedRequest):
    query: Question
    types: list[Literal["world", "experience", "observation", "opinion"]] | None = None
    prefer_observations: bool | None = None
    budget: Budget = "mid"
    max_tokens: int = Field(4096, ge=1)
    trace: bool = False
    query_timestamp: datetime | None = None
    include: IncludeOptions = Field(default_factory=IncludeOptions)
    min_scores: dict[str, float] | None = None
    temporal_window: dict[str, Any] | None = None

    _timestamp = field_validator("query_timestamp", mode="before")(
        classmethod(lambda cls, v: timestamp_value(v) if v != "unset" else v)
    )


class RecallResult(Response):
    id: str
    text: str
    type: str | None = None
    entities: list[str] | None = None
    context: str | None = Field(None, description="the document's title (retain's `context`)")
    occurred_start: str | None = None
    occurred_end: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None
    metadata: dict[str, str] | None = None
    chunk_id: str | None = Field(
        None, description="the source turn it was drawn from (see `chunks`): DOCUMENT:INDEX"
    )
    tags: list[str] | None = None
    source_fact_ids: list[str] | None = Field(
        None, description="an observation's source facts (with include.source_facts)"
    )
    score: float | None = None


class EntityObservationResponse(Response):
    text: str
    mentioned_at: str | None = None


class ChunkData(Response):
    id: str
    text: str
    chunk_index: int
    truncated: bool = False


class EntityState(Response):
    entity_id: str
    canonical_name: str
    observations: list[EntityObservationResponse]


class RecallResponse(Response):
    results: list[RecallResult]
    trace: dict[str, Any] | None = None
    entities: dict[str, EntityState] | None = None
    chunks: dict[str, ChunkData] | None = None
    source_facts: dict[str, RecallResult] | None = None
    source_facts_truncated: bool | None = None


class ReflectIncludeOptions(Request):
    facts: dict[str, Any] | None = None
    tool_calls: dict[str, Any] | None = None


class ReflectRequest(TaggedRequest):
    query: Question
    budget: Budget = "low"
    context: str | None = Field(
        None, description="the asker's situation: given to the answer, and recalled with"
    )
    max_tokens: int = Field(4096, ge=1, description="the longest answer, in tokens")
    include: ReflectIncludeOptions | None = None
    response_schema: dict[str, Any] | None = Field(
        None,
        description="a JSON schema: the answer is also given as `structured_output` fitting it",
    )
    apply_all_directives: bool | None = None
    fact_types: list[str] | None = None
    exclude_mental_models: bool | None = None
    exclude_mental_model_ids: list[str] | None = None
    reflect_search_observations_max_tokens: int | None = None
    reflect_search_observations_include_entities: bool | None = None


class ReflectFact(Response):
    id: str | None = None
    text: str
    type: str | None = None
    context: str | None = None
    occurred_start: str | None = None
    occurred_end: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None
    chunk_id: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, str] | None = None


class ReflectBasedOn(Response):
    memories: list[ReflectFact] = []
    mental_models: list[dict[str, Any]] = []
    directives: list[dict[str, Any]] = []


class ReflectResponse(Response):
    text: str
    based_on: ReflectBasedOn | None = None
    structured_output: dict[str, Any] | None = None
    structured_output_error: str | None = None
    reflection_id: str | None = None
    mode: str | None = None


# -- memories, entities, documents ----------------------------------------------------


class MemoryUnitListItem(Response):
    id: str
    text: str | None = None
    context: str | None = None
    date: str | None = None
    fact_type: str | None = None
    document_id: str | None = None
    mentioned_at: str | None = None
    occurred_start: str | None = None
    occurred_end: str | None = None
    entities: str | None = None
    chunk_id: str | None = None
    tags: list[str] | None = None
    metadata: dict[str, str] | None = None
    state: str | None = None
    updated_at: str | None = None
    source_memory_ids: list[str] | None = None


class ListMemoryUnitsResponse(Response):
    items: list[MemoryUnitListItem]
    total: int
    limit: int
    offset: int


class EntityListItem(Response):
    id: str
    canonical_name: str
    mention_count: int
    first_seen: str | None = None
    last_seen: str | None = None
    metadata: dict[str, Any] | None = None


class EntityListResponse(Response):
    items: list[EntityListItem]
    total: int
    limit: int
    offset: int


class EntityDetailResponse(EntityListItem):
    observations: list[EntityObservationResponse]


class DocumentListItem(Response):
    id: str
    bank_id: str | None = None
    content_hash: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    text_length: int = 0
    memory_unit_count: int | None = None
    document_metadata: dict[str, Any] | None = None
    tags: list[str] | None = None


class ListDocumentsResponse(Response):
    items: list[DocumentListItem]
    total: int
    limit: int
    offset: int


class DocumentResponse(Response):
    id: str
    bank_id: str
    original_text: str | None
    content_hash: str | None
    created_at: str
    updated_at: str
    memory_unit_count: int
    nodes_by_fact_type: dict[str, int] | None = None
    tags: list[str] | None = None
    document_metadata: dict[str, Any] | None = None


class ChunkResponse(Response):
    chunk_id: str
    document_id: str
    bank_id: str
    chunk_index: int
    chunk_text: str
    created_at: str | None = None


class ListChunksResponse(Response):
    items: list[ChunkResponse]
    total: int
    limit: int
    offset: int


class TagItem(Response):
    tag: str
    count: int


class ListTagsResponse(Response):
    items: list[TagItem]
    total: int
    limit: int
    offset: int


class DeleteDocumentResponse(Response):
    success: bool
    message: str
    document_id: str
    memory_units_deleted: int


class UpdateMemoryRequest(Request):
    """Hindsight's memory curation: correct the fact, or take it out of use."""

    text: Annotated[str, Field(max_length=limits.UNIT_CHARS)] | None = Field(
        None, description="the corrected fact (re-embedded, re-linked)"
    )
    context: str | None = None
    occurred_start: str | None = Field(None, description="ISO 8601; '' or null clears it")
    occurred_end: str | None = Field(None, description="ISO 8601; '' or null clears it")
    mentioned_at: str | None = None
    fact_type: Literal["world", "experience", "opinion"] | None = Field(
        None, description="move it to another network"
    )
    entities: list[Name] | None = Field(
        None, description="the entities it mentions, by name or id ([] detaches all)"
    )
    resolve_entities: bool = True
    state: Literal["valid", "invalidated"] | None = Field(
        None, description="'invalidated' hides it from recall and reflect; 'valid' brings it back"
    )
    reason: Annotated[str, Field(max_length=limits.REASON_CHARS)] | None = Field(
        None, description="why, kept in the audit entry"
    )

    @model_validator(mode="after")
    def _an_edit(self):
        edits = {"text", "occurred_start", "occurred_end", "fact_type", "entities", "state"}
        if not (edits & self.model_fields_set):
            if {"context", "mentioned_at"} & self.model_fields_set:
                raise ValueError(
                    "Engram keeps a memory's context on its document and its mention time "
                    "on its source turns: neither is edited on the memory"
                )
            raise ValueError("give at least one field to change")
        if {"context", "mentioned_at"} & self.model_fields_set:
            raise ValueError("context and mentioned_at are not edited on a memory in Engram")
        return self


class TimeseriesBucket(Response):
    time: str
    world: int = 0
    experience: int = 0
    opinion: int = 0
    observation: int = 0


class TimeseriesResponse(Response):
    bank_id: str
    period: str
    trunc: str
    time_field: str
    buckets: list[TimeseriesBucket]


class LlmOperationHealth(Response):
    operation: str
    ok: bool
    status: str
    latency_ms: float | None = None


class BankLlmHealthResponse(Response):
    bank_id: str
    operations: list[LlmOperationHealth]


class OperationActionResponse(Response):
    success: bool
    message: str
    operation_id: str
