"""Engram Studio's engine: the public face.

The studio and the CLI use only what is exported here. Nothing under `core`
imports Qt (an import-linter contract checks it).

Names load on first use (PEP 562): `engram --help` or a bank listing must not
pay for DuckDB, LanceDB or the embedding model. To export a name, add one line
to the table: "Name": "module", or "Name": "module:attribute" for a rename.
(The server's names are here too: `import core` stays free of FastAPI.)
"""

from __future__ import annotations

from core.lazy import lazy_exports

_EXPORTS = {
    "activation_params": "core.recall.settings",
    "adjacency": "core.recall.activation",
    "api_token": "core.server",
    "AuditEntry": "core.curate",
    "Bank": "core.bank",
    "BankExistsError": "core.types",
    "BankInfo": "core.types",
    "BankLockedError": "core.types",
    "BankNotFoundError": "core.types",
    "BankRenamedError": "core.types",
    "BankProfile": "core.types",
    "CancelledError": "core.types",
    "CancelToken": "core.progress",
    "Change": "core.types",
    "CHANNEL_TITLES": "core.vocabulary",
    "CHANNELS": "core.vocabulary",
    "Comparison": "core.reflect",
    "CONFIG_DEFAULTS": "core.config:DEFAULTS",
    "CONFIG_SPEC": "core.config:SPEC",
    "config_spec_table": "core.config:spec_table",
    "diff_snapshots": "core.snapshot",
    "Disposition": "core.types",
    "Document": "core.types",
    "document_hash": "core.retain.documents:content_hash",
    "DocumentPreview": "core.curate",
    "EmbeddingMismatchError": "core.types",
    "Engine": "core.engine",
    "ENGINE_SPEC": "core.config",
    "EngineSettings": "core.settings",
    "EngramError": "core.types",
    "Entity": "core.types",
    "ExtractionMode": "core.types",
    "find_owner": "core.server.owner",
    "FormedOpinion": "core.reflect",
    "INGEST_FORMATS": "core.retain.importers:FORMATS",
    "INGEST_MODES": "core.types",
    "IngestReport": "core.retain.report",
    "InvalidInputError": "core.types",
    "Kind": "core.types",
    "LEVELS": "core.vocabulary",
    "FACT_NETWORKS": "core.types",
    "LINK_KINDS": "core.vocabulary",
    "LanguageModel": "core.providers.llm",
    "LanguageModelError": "core.providers.llm",
    "Link": "core.types",
    "LinkKind": "core.types",
    "LlmSettings": "core.providers.llm",
    "open_model": "core.providers.llm",
    "load_documents": "core.retain.importers",
    "Manifest": "core.snapshot",
    "Network": "core.types",
    "NETWORKS": "core.vocabulary",
    "NewUnit": "core.types",
    "OpinionChange": "core.reflect",
    "OpinionTrajectory": "core.reflect",
    "PreviewFact": "core.curate",
    "parse_timeout": "core.settings",
    "Progress": "core.progress",
    "read_snapshot_manifest": "core.snapshot.archive",
    "RecallItem": "core.recall.result",
    "RecallResult": "core.recall.result",
    "RecallTrace": "core.recall.trace",
    "Reflection": "core.reflect",
    "ReflectionError": "core.reflect",
    "replay_activation": "core.recall.trace",
    "RemoteBank": "core.server.client",
    "RemoteEngine": "core.server.client",
    "RemoteError": "core.server.client",
    "ChangeEvent": "core.server.client",
    "OwnersModel": "core.server.client",
    "RetractPreview": "core.curate",
    "ServedBanks": "core.server",
    "ServerHandle": "core.server",
    "parse_setting": "core.config",
    "setting_value": "core.config",
    "SettingError": "core.config",
    "SnapshotDiff": "core.snapshot",
    "SnapshotError": "core.snapshot",
    "spread": "core.recall.activation",
    "start_server": "core.server",
    "StorageError": "core.types",
    "stopped_by_disk": "core.store.failures",
    "system_prompt": "core.reflect",
    "token_file": "core.server.token",
    "Turn": "core.types",
    "Unit": "core.types",
    "UnitFilter": "core.store.units",
    "UNIT_ORDERS": "core.store.order:ORDER_COLUMNS",
    "UnitStatus": "core.types",
    "UNSET": "core.types",
    "VerifyReport": "core.types",
}

__all__ = list(_EXPORTS)


__getattr__, __dir__ = lazy_exports("core", _EXPORTS, globals())
