"""Value types shared by every layer.

Everything here is plain data: frozen dataclasses and string enums, safe to
hand across threads and to the studio. Nothing in this module talks to a store.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


# "Not given", as opposed to None ("clear it"): Bank.edit_unit's default.
UNSET: Any = _Unset()

# How `ingest` may extract: the pipeline's modes (core/retain/pipeline.py).
INGEST_MODES = ("auto", "llm", "rules", "verbatim")

# The longest text one memory unit holds: what extraction cuts a fact to, and
# what a hand edit or a hand-added unit may be.
MAX_UNIT_CHARS = 20_000


def new_id() -> str:
    """A short random id; 64 bits is plenty for one bank and keeps keys compact."""
    return uuid.uuid4().hex[:16]


class Network(StrEnum):
    WORLD = "world"
    EXPERIENCE = "experience"
    OPINION = "opinion"
    OBSERVATION = "observation"


# What retain extracts; observations are synthesised later from these three.
FACT_NETWORKS: tuple[Network, ...] = (Network.WORLD, Network.EXPERIENCE, Network.OPINION)


class UnitStatus(StrEnum):
    ACTIVE = "active"
    # Hidden from recall, reflect and default views by a soft retract; restorable.
    RETRACTED = "retracted"
    # One fact hidden by hand (`Bank.hide_unit`); unhide brings it back.
    HIDDEN = "hidden"
    # Derived from something curation hid or changed (an observation quoting a
    # retracted fact, an opinion formed from one): hidden until it is rebuilt or
    # its evidence comes back. Recall only ever sees active units.
    STALE = "stale"


class LinkKind(StrEnum):
    ENTITY = "entity"
    TEMPORAL = "temporal"
    SEMANTIC = "semantic"
    CAUSAL = "causal"


class ExtractionMode(StrEnum):
    LLM = "llm"
    RULES = "rules"
    VERBATIM = "verbatim"
    MANUAL = "manual"


@dataclass(frozen=True)
class Disposition:
    """Θ: how the agent reasons. Traits are 1..5, bias strength β in [0, 1]."""

    skepticism: int = 3
    literalism: int = 3
    empathy: int = 3
    bias: float = 0.2

    def __post_init__(self) -> None:
        for trait in ("skepticism", "literalism", "empathy"):
            value = getattr(self, trait)
            if not isinstance(value, int) or not 1 <= value <= 5:
                raise ValueError(f"{trait} must be an integer from 1 to 5, got {value!r}")
        if not 0.0 <= float(self.bias) <= 1.0:
            raise ValueError(f"bias must be in [0, 1], got {self.bias!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "skepticism": self.skepticism,
            "literalism": self.literalism,
            "empathy": self.empathy,
            "bias": self.bias,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Disposition:
        return cls(
            skepticism=int(data.get("skepticism", 3)),
            literalism=int(data.get("literalism", 3)),
            empathy=int(data.get("empathy", 3)),
            bias=float(data.get("bias", 0.2)),
        )


@dataclass(frozen=True)
class BankProfile:
    name: str
    background: str = ""
    agent_name: str = ""
    disposition: Disposition = field(default_factory=Disposition)
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Unit:
    """One self-contained narrative fact, as stored."""

    id: str
    text: str
    network: Network
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    confidence: float | None = None
    status: UnitStatus = UnitStatus.ACTIVE
    source_ids: tuple[str, ...] = ()
    entity_ids: tuple[str, ...] = ()
    extraction_mode: ExtractionMode = ExtractionMode.MANUAL
    model: str = ""
    embedding_model: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    access_count: int = 0  # recalls by agents and the studio (not inspection runs)
    last_accessed_at: datetime | None = None
    document_id: str | None = None  # the document it was extracted from (None: by hand)
    tags: tuple[str, ...] = ()  # its source turns' tags (core/tags.py)
    # Left out of the hash (a dict has none), so values holding it stay hashable.
    metadata: Mapping[str, str] = field(default_factory=dict, hash=False)
    created_by: str = ""  # the actor whose request wrote it ("" before schema 8)


@dataclass(frozen=True)
class NewUnit:
    """A unit to be added. `vector` may be given (precomputed); otherwise it is embedded.

    `entities` are canonical entity ids already resolved by the caller (retain
    resolves names; curation passes ids)."""

    text: str
    network: Network = Network.WORLD
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    confidence: float | None = None
    source_ids: tuple[str, ...] = ()
    entity_ids: tuple[str, ...] = ()
    extraction_mode: ExtractionMode = ExtractionMode.MANUAL
    model: str = ""
    vector: tuple[float, ...] | None = None
    id: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict, hash=False)

    def with_id(self) -> NewUnit:
        return self if self.id else replace(self, id=new_id())


@dataclass(frozen=True)
class Turn:
    """One utterance of a conversation; `id` is stable (given, or derived from content)."""

    id: str
    speaker: str
    text: str
    timestamp: datetime | None = None
    session: str = ""
    index: int = 0
    tags: tuple[str, ...] = ()  # Hindsight's item tags and metadata (core/tags.py)
    metadata: Mapping[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Document:
    """A conversation to retain, as an importer produced it."""

    id: str
    title: str
    turns: tuple[Turn, ...]
    source_path: str = ""
    content_hash: str = ""
    format: str = ""
    speakers: tuple[str, ...] = ()  # in the order the source names them


@dataclass(frozen=True)
class Entity:
    id: str
    name: str
    type: str = "other"
    aliases: tuple[str, ...] = ()
    status: UnitStatus = UnitStatus.ACTIVE
    mention_count: int = 0
    first_seen: datetime | None = None
    last_seen: datetime | None = None


@dataclass(frozen=True)
class Link:
    source: str
    target: str
    kind: LinkKind
    weight: float
    entity_id: str | None = None
    relation: str | None = None  # causal: causes | caused_by | enables | prevents


@dataclass(frozen=True)
class UnitContext:
    """A fact and the conversation around it, read in one call (`Bank.unit_context`):
    what the studio's fact detail shows, however many documents the bank holds."""

    unit: Unit
    sources: tuple[Turn, ...] = ()  # every turn it came from, in its source order
    document_id: str | None = None  # the conversation they are in ("" title: not found)
    title: str = ""
    turns: tuple[Turn, ...] = ()  # the source turns with the turns either side of them
    before: bool = False  # the conversation goes on before / after the turns given
    after: bool = False


@dataclass(frozen=True)
class Subgraph:
    """Units near some seeds and every link among them, read in one call
    (`Bank.subgraph`) from the engine's in-memory link graph: a graph view."""

    units: tuple[Unit, ...] = ()  # the active ones reached: seeds first, then as reached
    # The links leaving the units reached, to any unit given (so among those reached
    # each both ways, as links are stored): source, target, kind and weight, an
    # entity link's times its entity's specificity (as recall spreads it).
    links: tuple[tuple[str, str, str, float], ...] = ()
    context: tuple[str, ...] = ()  # the ids added as one-link context, strongest first


class Kind(StrEnum):
    """What a change record can name."""

    BANK = "bank"
    PROFILE = "profile"
    UNIT = "unit"
    ENTITY = "entity"
    LINK = "link"
    OPINION = "opinion"
    DOCUMENT = "document"
    REFLECTION = "reflection"
    JOB = "job"


_EMPTY: Mapping[Kind, frozenset[str]] = {}


@dataclass(frozen=True)
class Change:
    """What a mutating call changed, so each view refreshes only what it shows.

    Ids are grouped by kind in three maps. Changes combine with `|`.
    """

    added: Mapping[Kind, frozenset[str]] = field(default_factory=dict)
    updated: Mapping[Kind, frozenset[str]] = field(default_factory=dict)
    removed: Mapping[Kind, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        *,
        added: Mapping[Kind, Iterable[str]] = _EMPTY,
        updated: Mapping[Kind, Iterable[str]] = _EMPTY,
        removed: Mapping[Kind, Iterable[str]] = _EMPTY,
    ) -> Change:
        def freeze(m: Mapping[Kind, Iterable[str]]) -> dict[Kind, frozenset[str]]:
            return {k: frozenset(v) for k, v in m.items() if v}

        return cls(freeze(added), freeze(updated), freeze(removed))

    def __or__(self, other: Change) -> Change:
        def merge(a, b):
            out = dict(a)
            for k, v in b.items():
                out[k] = out.get(k, frozenset()) | v
            return out

        return Change(
            merge(self.added, other.added),
            merge(self.updated, other.updated),
            merge(self.removed, other.removed),
        )

    def ids(self, kind: Kind) -> frozenset[str]:
        """Every id of this kind the change touched, whichever way."""
        return (
            self.added.get(kind, frozenset())
            | self.updated.get(kind, frozenset())
            | self.removed.get(kind, frozenset())
        )

    def touches(self, kind: Kind) -> bool:
        return bool(self.ids(kind))

    @property
    def empty(self) -> bool:
        return not (self.added or self.updated or self.removed)


@dataclass(frozen=True)
class VerifyReport:
    """How the three stores agree. `ok` when nothing is missing or dangling."""

    units: int
    vectors: int
    lexical: int
    missing_vectors: tuple[str, ...] = ()
    missing_lexical: tuple[str, ...] = ()
    extra_vectors: tuple[str, ...] = ()
    extra_lexical: tuple[str, ...] = ()
    pending: int = 0
    dangling: Mapping[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (
            self.missing_vectors
            or self.missing_lexical
            or self.extra_vectors
            or self.extra_lexical
            or self.pending
            or any(self.dangling.values())
        )


@dataclass(frozen=True)
class BankInfo:
    """A bank as a listing shows it, without opening it. `folder` is where it is
    on this machine (None for a bank another machine serves)."""

    name: str
    folder: Path | None
    created_at: str
    id: str = ""  # immutable (the name is a label); what servers, locks and routes key by


@dataclass(frozen=True)
class BankStats:
    """What a bank holds, counted (each link once, though it is stored both ways)."""

    units: Mapping[str, int] = field(default_factory=dict)  # active units by network
    links: Mapping[str, int] = field(default_factory=dict)  # by kind
    links_by_network: Mapping[str, int] = field(default_factory=dict)  # by source's network
    documents: int = 0
    entities: int = 0  # active ones
    pending_jobs: int = 0

    @property
    def total_units(self) -> int:
        return sum(self.units.values())

    @property
    def total_links(self) -> int:
        return sum(self.links.values())


class EngramError(Exception):
    """Base for every error the engine raises on purpose, with a message for a person."""


class BankLockedError(EngramError):
    def __init__(self, bank: str, pid: int, host: str = "", *, owner: dict | None = None) -> None:
        self.pid = pid
        # The owner's lock record: pid, host and, when it serves the bank, url and token_file.
        self.owner = owner or {}
        where = f" on {host}" if host else ""
        # An owner caught between taking the lock and writing its PID has none yet.
        who = f" (PID {pid}{where})" if pid > 0 else where
        served = f", which serves it at {self.owner['url']}" if self.owner.get("url") else ""
        super().__init__(f"bank {bank!r} is open in another process{who}{served}")


class BankNotFoundError(EngramError):
    pass


class BankRenamedError(BankNotFoundError):
    """A bank was asked for by a name it had before a rename, past the grace."""


class BankExistsError(EngramError):
    pass


class EmbeddingMismatchError(EngramError):
    """A bank recorded with another embedding model than the engine's: `recorded` and
    `current` name each (model and dimension), for a caller that offers re-embedding."""

    def __init__(self, message: str, recorded: str = "", current: str = "") -> None:
        super().__init__(message)
        self.recorded, self.current = recorded, current


class InvalidInputError(EngramError):
    pass


class CancelledError(EngramError):
    pass


class PurgedInSnapshotError(EngramError):
    """Importing this snapshot in place of the bank would bring back entities the
    bank purged (core/store/purged.py): asked first, `restore_purged=True` goes on."""


class StorageError(EngramError):
    """The disk refused a write (full, read-only, failing): the message says what
    was saved and what was not."""
