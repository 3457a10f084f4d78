"""Engram Studio's engine: the public face.

The studio and the CLI use only what is exported here. Nothing under `core`
imports Qt (an import-linter contract checks it).
"""

from core.bank import UNSET, Bank
from core.config import DEFAULTS as CONFIG_DEFAULTS
from core.curate import AuditEntry, DocumentPreview, PreviewFact, RetractPreview
from core.engine import BankInfo, Engine
from core.progress import CancelToken, Progress
from core.providers.llm import LanguageModel, LanguageModelError, LlmSettings
from core.recall.activation import adjacency, spread
from core.recall.result import RecallItem, RecallResult
from core.reflect import (
    Comparison,
    FormedOpinion,
    OpinionChange,
    OpinionTrajectory,
    Reflection,
    ReflectionError,
    system_prompt,
)
from core.retain.importers import FORMATS as INGEST_FORMATS
from core.retain.importers import load_documents
from core.retain.pipeline import MODES as INGEST_MODES
from core.retain.report import IngestReport
from core.settings import EngineSettings
from core.snapshot import Manifest, SnapshotDiff, SnapshotError, diff_snapshots
from core.store.units import UnitFilter
from core.types import (
    BankExistsError,
    BankLockedError,
    BankNotFoundError,
    BankProfile,
    CancelledError,
    Change,
    Disposition,
    Document,
    EmbeddingMismatchError,
    EngramError,
    Entity,
    ExtractionMode,
    InvalidInputError,
    Kind,
    Link,
    LinkKind,
    Network,
    NewUnit,
    StorageError,
    Turn,
    Unit,
    UnitStatus,
    VerifyReport,
)

__all__ = [
    "AuditEntry",
    "Bank",
    "BankExistsError",
    "BankInfo",
    "BankLockedError",
    "BankNotFoundError",
    "BankProfile",
    "CONFIG_DEFAULTS",
    "CancelToken",
    "CancelledError",
    "StorageError",
    "Change",
    "Comparison",
    "Disposition",
    "Document",
    "DocumentPreview",
    "EmbeddingMismatchError",
    "Engine",
    "EngineSettings",
    "EngramError",
    "Entity",
    "ExtractionMode",
    "FormedOpinion",
    "INGEST_FORMATS",
    "INGEST_MODES",
    "IngestReport",
    "InvalidInputError",
    "Kind",
    "LanguageModel",
    "LanguageModelError",
    "Link",
    "LinkKind",
    "LlmSettings",
    "Manifest",
    "Network",
    "NewUnit",
    "OpinionChange",
    "OpinionTrajectory",
    "PreviewFact",
    "Progress",
    "RecallItem",
    "RecallResult",
    "Reflection",
    "ReflectionError",
    "RetractPreview",
    "ServedBanks",
    "ServerHandle",
    "SnapshotDiff",
    "SnapshotError",
    "Turn",
    "UNSET",
    "Unit",
    "UnitFilter",
    "UnitStatus",
    "VerifyReport",
    "adjacency",
    "api_token",
    "diff_snapshots",
    "find_owner",
    "load_documents",
    "spread",
    "start_server",
    "system_prompt",
    "token_file",
]

# The server's names load on first use, so `import core` stays free of FastAPI.
_LAZY = {
    "ServedBanks": "core.server",
    "ServerHandle": "core.server",
    "api_token": "core.server",
    "find_owner": "core.server.owner",
    "start_server": "core.server",
    "token_file": "core.server.token",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'core' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
