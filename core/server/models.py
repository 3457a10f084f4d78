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

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from core import limits
from core.timeparse import TimeOutOfRange, naive_utc
from core.vocabulary import LEVELS

Budget = Literal[tuple(LEVELS)]
Content = Annotated[str, Field(max_length=limits.TURN_CHARS)]
Name = Annotated[str, Field(max_length=limits.NAME_CHARS)]
Identifier = Annotated[str, Field(max_length=limits.ID_CHARS)]
Title = Annotated[str, Field(max_length=limits.TITLE_CHARS)]
Question = Annotated[str, Field(min_length=1, max_length=limits.QUERY_CHARS)]
Background = Annotated[str, Field(max_length=limits.BACKGROUND_CHARS)]
Tag = Annotated[str, Field(max_length=limits.TAG_CHARS)]
MetadataValue = Annotated[str, Field(max_length=limits.METADATA_VALUE_CHARS)]


def _in_utc_range(value: datetime) -> datetime:
    try:
        naive_utc(value)
    except TimeOutOfRange as error:
        raise PydanticCustomError("datetime_range", str(error)) from None
    return value


# A time a query parameter gives (a body's are checked by `Request`).
Time = Annotated[datetime, AfterValidator(_in_utc_range)]


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
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
    bank_llm_health: bool = False
    file_upload_api: bool = False
    document_export_api: bool = False
    document_import_api: bool = False
    audit_log: bool = True
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
    timestamp: datetime | Literal["unset"] | None = None
    context: Title | None = Field(None, description="kept as the document's title")
    metadata: dict[Tag, MetadataValue] | None = Field(
        None,
        max_length=limits.TAGS,
        description="only 'speaker' is kept (the turn's speaker)",
    )
    document_id: Identifier | None = None
    entities: list[EntityInput] | None = None
    resolve_entities: bool | None = None
    tags: list[Tag] | None = Field(None, max_length=limits.TAGS)
    observation_scopes: str | list[list[str]] | None = None
    strategy: str | None = Field(
        None, description="Engram's extraction mode: auto, llm, rules or verbatim"
    )
    update_mode: str | None = None

    @field_validator("metadata")
    @classmethod
    def _speaker_is_a_name(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        speaker = (value or {}).get("speaker")
        if speaker is not None and len(speaker) > limits.NAME_CHARS:
            raise PydanticCustomError(
                "string_too_long",
                "speaker: is {length:,} characters, over the limit of {limit:,} for a name",
                {"length": len(speaker), "limit": limits.NAME_CHARS},
            )
        return value


class RetainRequest(Request):
    items: list[MemoryItem] = Field(min_length=1)
    async_: bool | None = Field(False, alias="async")
    document_tags: list[Tag] | None = Field(None, max_length=limits.TAGS)
    operation_id: Identifier | None = None


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
    status: Literal["pending", "processing", "completed", "failed"]
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
    entities: IncludeMaxTokens | None = None
    chunks: IncludeMaxTokens | None = None
    source_facts: IncludeMaxTokens | None = None


class RecallRequest(Request):
    query: Question
    types: list[Literal["world", "experience", "observation", "opinion"]] | None = None
    prefer_observations: bool | None = None
    budget: Budget = "mid"
    max_tokens: int = Field(4096, ge=1)
    trace: bool = False
    query_timestamp: datetime | None = None
    include: IncludeOptions | None = None
    tags: list[str] | None = None
    tags_match: str | None = None
    tag_groups: list[dict[str, Any]] | None = None
    min_scores: dict[str, float] | None = None
    temporal_window: dict[str, Any] | None = None


class RecallResult(Response):
    id: str
    text: str
    type: str | None = None
    entities: list[str] | None = None
    context: str | None = None
    occurred_start: str | None = None
    occurred_end: str | None = None
    mentioned_at: str | None = None
    document_id: str | None = None
    chunk_id: str | None = None
    tags: list[str] | None = None
    source_fact_ids: list[str] | None = None
    score: float | None = None


class RecallResponse(Response):
    results: list[RecallResult]
    trace: dict[str, Any] | None = None
    entities: dict[str, Any] | None = None


class ReflectIncludeOptions(Request):
    facts: dict[str, Any] | None = None
    tool_calls: dict[str, Any] | None = None


class ReflectRequest(Request):
    query: Question
    budget: Budget = "low"
    context: str | None = None
    max_tokens: int | None = None
    include: ReflectIncludeOptions | None = None
    response_schema: dict[str, Any] | None = None
    tags: list[str] | None = None
    tags_match: str | None = None
    tag_groups: list[dict[str, Any]] | None = None
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
    occurred_start: str | None = None


class ReflectBasedOn(Response):
    memories: list[ReflectFact] = []
    mental_models: list[dict[str, Any]] = []
    directives: list[dict[str, Any]] = []


class ReflectResponse(Response):
    text: str
    based_on: ReflectBasedOn | None = None
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
    state: str | None = None
    updated_at: str | None = None


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


class EntityObservationResponse(Response):
    text: str
    mentioned_at: str | None = None


class EntityDetailResponse(EntityListItem):
    observations: list[EntityObservationResponse]


class DocumentListItem(Response):
    id: str
    bank_id: str | None = None
    content_hash: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    text_length: int | None = None
    memory_unit_count: int | None = None
    document_metadata: dict[str, Any] | None = None


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
    document_metadata: dict[str, Any] | None = None


class DeleteDocumentResponse(Response):
    success: bool
    message: str
    document_id: str
    memory_units_deleted: int
