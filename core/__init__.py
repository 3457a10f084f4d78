"""Engram Studio's engine: the public face.

The studio and the CLI use only what is exported here. Nothing under `core`
imports Qt (an import-linter contract checks it).
"""

from core.bank import UNSET, Bank
from core.engine import BankInfo, Engine
from core.progress import CancelToken, Progress
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
    Turn,
    Unit,
    UnitStatus,
    VerifyReport,
)

__all__ = [
    "UNSET",
    "Bank",
    "BankExistsError",
    "BankInfo",
    "BankLockedError",
    "BankNotFoundError",
    "BankProfile",
    "CancelToken",
    "CancelledError",
    "Change",
    "Disposition",
    "Document",
    "EmbeddingMismatchError",
    "Engine",
    "EngramError",
    "Entity",
    "ExtractionMode",
    "InvalidInputError",
    "Kind",
    "Link",
    "LinkKind",
    "Network",
    "NewUnit",
    "Progress",
    "Turn",
    "Unit",
    "UnitFilter",
    "UnitStatus",
    "VerifyReport",
]
