"""Talking to the process that owns a bank: the CLI's side of routing.

`OwnerClient.call(bank, method, *args, **kwargs)` runs one `Bank` method in the
owner (`POST /engram/v1/banks/{bank}/call/{method}`, core/server/routes_cli.py)
and returns the value the method returned there, rebuilt as the same type, so
the CLI prints it with the code it uses for a bank it opened itself.

Values cross the wire in a small tagged JSON (`encode`/`decode`): datetimes,
enums, sets and dicts with enum keys survive, and only the value types listed
in `VALUE_TYPES` are rebuilt, by their constructors (so validation runs).
Import-light on purpose: a routed command must not load DuckDB or the model.
"""

from __future__ import annotations

import dataclasses
import importlib
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

from core.types import EngramError

# name -> "module:attribute"; imported only when a value of that type arrives.
VALUE_TYPES = {
    name: f"{module}:{name}"
    for module, names in {
        "core.types": "Network UnitStatus LinkKind ExtractionMode Kind Disposition BankProfile "
        "Unit NewUnit Turn Document Entity Link Change VerifyReport",
        "core.recall.result": "RecallItem RecallResult",
        "core.recall.trace": "RecallTrace ChannelResult QueryInterval Focus RerankScore "
        "RerankTrace SkippedFact PackingTrace ObservationsTrace",
        "core.recall.fusion": "Fused Contribution",
        "core.retain.report": "CheckedFact ChunkFailure DocumentResult IngestReport",
        "core.retain.observations": "JobsReport",
        "core.curate.audit": "AuditEntry",
        "core.curate.retract": "RetractPreview",
        "core.reflect.values": "OpinionAction FormedOpinion Evidence LeftOut Reflection "
        "Comparison TrajectoryStep OpinionTrajectory OpinionChange",
    }.items()
    for name in names.split()
}
TAG = "$t"

# The Bank methods a routed CLI command may run in the owner. Writes run under
# the bank's lock and their Change is broadcast to the owner's views.
READ_METHODS = frozenset(
    """units count recall pending_jobs profile retract_preview audit reflections opinions
    opinion_history opinions_changed compare verify resolve_entity profile_warnings""".split()
)
WRITE_METHODS = frozenset(
    """ingest process_jobs edit_unit delete_units rename_entity merge_entities split_entity
    retract_entity restore_entity purge_entity undo redo reflect commit_reflection
    repair set_profile""".split()
)


class RemoteError(EngramError):
    """The owner refused or failed a routed call; the message is the owner's."""


def value_type(name: str) -> type:
    target = VALUE_TYPES.get(name)
    if target is None:
        raise ValueError(f"not a value type that crosses the wire: {name!r}")
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def encode(value: Any) -> Any:
    if isinstance(value, Enum):  # before str: a StrEnum is a str too
        return {TAG: type(value).__name__, "v": value.value}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, datetime):
        return {TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, Path):
        return {TAG: "path", "v": str(value)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if VALUE_TYPES.get(name, "").split(":")[0] != type(value).__module__:
            raise TypeError(f"{type(value).__qualname__} does not cross the wire")
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {TAG: name, "f": fields}
    if isinstance(value, dict):
        return {TAG: "map", "v": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, set | frozenset):
        return {TAG: type(value).__name__, "v": [encode(v) for v in value]}
    if isinstance(value, tuple):
        return {TAG: "tuple", "v": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if hasattr(value, "item"):  # a numpy scalar
        return value.item()
    raise TypeError(f"{type(value).__qualname__} does not cross the wire")


_CONTAINERS = {"tuple": tuple, "set": set, "frozenset": frozenset}


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if TAG not in value:  # a plain JSON object (a hand-written call)
        return {str(k): decode(v) for k, v in value.items()}
    tag = value[TAG]
    if tag == "map":
        return {decode(k): decode(v) for k, v in value["v"]}
    if tag in _CONTAINERS:
        return _CONTAINERS[tag](decode(v) for v in value["v"])
    if tag == "datetime":
        return datetime.fromisoformat(value["v"])
    if tag == "path":
        return Path(value["v"])
    cls = value_type(str(tag))
    if isinstance(cls, type) and issubclass(cls, Enum):
        return cls(value["v"])
    fields = {k: decode(v) for k, v in value["f"].items()}
    declared = {f.name: f for f in dataclasses.fields(cls)}
    if set(fields) - set(declared):
        raise ValueError(f"unknown fields for {tag}: {sorted(set(fields) - set(declared))}")
    made = cls(**{k: v for k, v in fields.items() if declared[k].init})
    for k, v in fields.items():
        if not declared[k].init:
            object.__setattr__(made, k, v)
    return made


class OwnerClient:
    """HTTP to a bank's owner with its bearer token (httpx, one connection reused)."""

    def __init__(self, url: str, token: str, *, timeout: float | None = 600.0) -> None:
        import httpx

        self.url = url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(timeout, connect=5.0),
        )

    def call(self, bank: str, method: str, *args: Any, **kwargs: Any) -> Any:
        import httpx

        body = {"args": encode(list(args)), "kwargs": encode(kwargs)}
        try:
            response = self._http.post(f"/engram/v1/banks/{_quote(bank)}/call/{method}", json=body)
        except httpx.HTTPError as error:
            raise RemoteError(
                f"the owner of bank {bank!r} at {self.url} did not answer: {error}"
            ) from None
        if response.status_code >= 400:
            raise RemoteError(_detail(response))
        return decode(response.json()["value"])

    def close(self) -> None:
        self._http.close()


def _quote(segment: str) -> str:
    from urllib.parse import quote

    return quote(segment, safe="")


def _detail(response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        detail = None
    if isinstance(detail, list):  # FastAPI's 422: name the fields
        detail = "; ".join(
            f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" for d in detail
        )
    return str(detail or f"HTTP {response.status_code} from the bank's owner")
