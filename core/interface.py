"""The `Bank` and `Engine` interface, declared once.

Every public operation of `Bank` (core/bank.py) is listed here with what it
is: a read or a write, whether it takes `progress=` and `cancel=` (long work),
whether it takes `llm=` (a language model, which crosses the wire as its
settings), how its arguments travel when they are not plain values (a file
read and sent, a file that comes back), and the value type it returns. From
this one table come

- the server's routed calls: a write runs under the bank's lock and its
  `Change` is announced, a read runs beside other work (core/server/routes_cli.py);
- the wire encoding's value types, rebuilt by their constructors on the other
  side (core/server/wire.py);
- `RemoteBank` and `RemoteEngine`, which satisfy the same interface over HTTP
  (core/server/client.py), long operations with progress and cancel;
- the tests that pin it: a public `Bank` method missing here fails
  tests/core/test_interface.py, and so does a declared flag its signature
  contradicts, or a returned type the wire cannot carry.

Import-light on purpose (no DuckDB, no model): a routed command reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

# How an operation's data travels, besides plain encoded arguments.
UPLOAD = "upload"  # a path is read here and its conversations are sent
DOWNLOAD = "download"  # the owner writes a file, which is streamed back to the path given
LOCAL = "local"  # never crosses the wire (lifecycle, numpy helpers)


@dataclass(frozen=True)
class Operation:
    name: str
    writes: bool
    returns: str  # a type expression over VALUE_TYPES (and builtins)
    progress: bool = False
    cancel: bool = False
    llm: bool = False
    transfer: str = ""  # "", UPLOAD, DOWNLOAD or LOCAL
    attribute: bool = False  # a property, not a method
    doc: str = ""

    @property
    def long(self) -> bool:
        """Reports progress or can be cancelled: streamed over the wire."""
        return self.progress or self.cancel

    @property
    def routed(self) -> bool:
        return self.transfer != LOCAL


def read(name: str, returns: str, **flags) -> Operation:
    return Operation(name, False, returns, **flags)


def write(name: str, returns: str, **flags) -> Operation:
    return Operation(name, True, returns, **flags)


LONG = {"progress": True, "cancel": True}

# Recall counts access (each returned unit's access_count), written in the
# background (core/store/access.py): bookkeeping, not a change anyone waits
# for, so it is a read.
BANK = {
    op.name: op
    for op in (
        # identity and profile
        read("id", "str", attribute=True, doc="immutable: what the bank is keyed by"),
        read("name", "str", attribute=True, doc="the bank's label (renamable)"),
        read("profile", "BankProfile"),
        read("profile_warnings", "list[str]"),
        read("config", "dict[str, Any]", attribute=True),
        read("config_overrides", "dict[str, Any]"),
        write("set_profile", "Change"),
        write("reset_config", "Change"),
        read("stats", "BankStats"),
        # units
        write("add_units", "Change", **LONG),
        read("vectors_for", "np.ndarray", transfer=LOCAL),
        read("unit", "Unit"),
        read("units", "list[Unit]"),
        read("count", "int"),
        read("units_by_id", "dict[str, Unit]"),
        read("count_tokens", "list[int]"),
        read("memories_timeseries", "list[tuple[datetime, dict[str, int]]]"),
        read("tag_counts", "tuple[list[tuple[str, int]], int]"),
        write("edit_unit", "Change"),
        write("delete_units", "Change"),
        write("add_memory", "Change"),
        write("hide_units", "Change"),
        write("unhide_units", "Change"),
        # retain
        write("ingest", "IngestReport", **LONG, llm=True, transfer=UPLOAD),
        write("append_turns", "IngestReport", **LONG, llm=True),
        write("process_jobs", "JobsReport", **LONG, llm=True),
        write("rebuild_observations", "JobsReport | None", **LONG),
        read("pending_jobs", "int"),
        read("documents", "list[StoredDocument]"),
        read("document_titles", "dict[str, str]"),
        read("unit_labels", "tuple[dict[str, str], dict[str, str], dict[str, list[str]]]"),
        read("document_hashes", "dict[str, str]"),
        read("document_preview", "DocumentPreview"),
        read("document_failures", "list[ChunkFailure]"),
        write("delete_document", "Change"),
        write("reingest_document", "IngestReport", **LONG, llm=True),
        read("turns", "list[Turn]"),
        read("provenance", "list[Turn]"),
        read("unit_context", "UnitContext"),
        read("sources", "dict[str, list[Turn]]"),
        read("observation_sources", "dict[str, list[str]]"),
        # entities, links, opinions
        read("entities", "list[Entity]"),
        read("entity_comentions", "list[tuple[str, str, int]]"),
        read("entity", "Entity"),
        read("entity_names", "dict[str, str]"),
        read("resolve_entity", "str"),
        read("entity_decisions", "list[EntityDecision]"),
        read("entity_specificity", "dict[str, float]"),
        read("links", "list[Link]"),
        read("subgraph", "Subgraph"),
        read("opinion_events", "list[OpinionEvent]"),
        read("observation", "Unit | None"),
        # recall
        read("recall", "RecallResult"),
        read("reference_time", "datetime"),
        read("time_span", "tuple[datetime | None, datetime | None]"),
        read("prepare_recall", "str"),
        # reflect and opinions
        write("reflect", "Reflection", llm=True),
        read("compare", "Comparison", llm=True),
        read("structured_output", "tuple[dict[str, Any] | None, str | None]", llm=True),
        write("commit_reflection", "Change"),
        read("reflections", "list[Reflection]"),
        read("reflection", "Reflection"),
        read("opinions", "list[Unit]"),
        read("opinion_history", "OpinionTrajectory"),
        read("opinion_confidence_at", "float | None"),
        read("opinions_changed", "list[OpinionChange]"),
        # curation
        write("rename_entity", "Change"),
        read("merge_hints", "list[MergeHint]"),
        write("merge_entities", "Change"),
        write("split_entity", "Change"),
        read("retract_preview", "RetractPreview"),
        write("retract_entity", "Change"),
        write("restore_entity", "Change"),
        write("purge_entity", "Change", progress=True),
        write("undo", "Change"),
        write("redo", "Change"),
        read("audit", "list[AuditEntry]"),
        # the activity journal: what was done, by whom (its own file: no bank write)
        read("activity", "list[ActivityEntry]"),
        read("activity_entry", "ActivityEntry"),
        read("activity_actors", "list[str]"),
        read("activity_usage", "tuple[int, int]"),
        read("recorded_recall", "RecallResult"),
        read("replay_recall", "RecallReplay"),
        write("prune_activity", "int"),
        # a listener is called on the recording thread; remotely: the activity stream
        read("watch_activity", "Callable[[], None]", transfer=LOCAL),
        # snapshots: an export records itself in the bank (`exports`), so it writes
        write("export_snapshot", "Manifest", **LONG, transfer=DOWNLOAD),
        read("exports", "list[ExportRecord]"),
        # the queue of asynchronous operations: the serving process's own, never routed
        read("operation_queue", "OperationQueue", attribute=True, transfer=LOCAL),
        # integrity
        read("verify", "VerifyReport"),
        write("repair", "VerifyReport"),
        # lifecycle: each side closes its own
        read("closed", "bool", attribute=True, transfer=LOCAL),
        read("close", "None", transfer=LOCAL),
        read("advertise", "None", transfer=LOCAL),
    )
}

# What a local `Bank` has beyond the interface: how it is built, not what it does.
BANK_INTERNALS = frozenset({"engine", "folder", "store", "handle"})

# The engine's operations on banks (its providers and settings stay local).
ENGINE = {
    op.name: op
    for op in (
        read("banks", "list[BankInfo]"),
        read("open_bank", "Bank"),
        write("create_bank", "Bank"),
        write("rename_bank", "Change"),
        write("delete_bank", "Change"),
        write("import_snapshot", "Bank", **LONG, transfer=UPLOAD),
        write("reembed_bank", "Change", **LONG),
    )
}

READS = frozenset(op.name for op in BANK.values() if op.routed and not op.writes)
WRITES = frozenset(op.name for op in BANK.values() if op.routed and op.writes)

# Names of unions the annotations use, as the types they stand for.
TYPE_ALIASES = {"TagScope": "TagFilter | TagGroup"}

# Every value type that crosses the wire: name -> "module:attribute", imported only
# when a value of that type arrives. tests/core/test_interface.py walks every
# declared operation's annotations and fails on a type missing here.
VALUE_TYPES = {
    name: f"{module}:{name}"
    for module, names in {
        "core.types": "Network UnitStatus LinkKind ExtractionMode Kind Disposition BankProfile "
        "Unit NewUnit Turn Document Entity Link Change VerifyReport BankStats BankInfo "
        "UnitContext Subgraph",
        "core.recall.result": "RecallItem RecallResult",
        "core.recall.trace": "RecallTrace ChannelResult QueryInterval Focus RerankScore "
        "RerankTrace SkippedFact PackingTrace ObservationsTrace",
        "core.recall.fusion": "Fused Contribution",
        "core.retain.report": "CheckedFact ChunkFailure DocumentResult IngestReport",
        "core.retain.observations": "JobsReport",
        "core.retain.documents": "StoredDocument",
        "core.retain.entities": "EntityDecision",
        "core.retain.opinions": "OpinionEvent Relation",
        "core.curate.audit": "AuditEntry",
        "core.journal.entry": "ActivityEntry",
        "core.recall.replay": "RecallReplay Move",
        "core.curate.documents": "DocumentPreview",
        "core.curate.retract": "RetractPreview PreviewFact",
        "core.curate.hints": "MergeHint",
        "core.curate.redaction": "Redaction",
        "core.reflect.values": "OpinionAction FormedOpinion Evidence LeftOut Reflection "
        "Comparison TrajectoryStep OpinionTrajectory OpinionChange",
        "core.snapshot.archive": "Manifest Member",
        "core.snapshot.export": "ExportRecord",
        "core.tags": "TagFilter TagGroup",
    }.items()
    for name in names.split()
}
