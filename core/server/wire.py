"""The wire encoding of `Bank` calls: the engine's values as tagged JSON.

Datetimes, paths, enums, tuples, sets, dicts with non-string keys and the
engine's "not given" marker (`UNSET`) survive the trip; a dataclass crosses
only if it is one of the value types the interface declares
(`core.interface.VALUE_TYPES`), and is rebuilt by its constructor, so its
validation runs on the receiving side. Anything else is refused by name:
a hand-written request cannot make the server import or build an arbitrary
type. Import-light: a routed command must not load DuckDB or the model.
"""

from __future__ import annotations

import dataclasses
import importlib
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Any

from core.interface import VALUE_TYPES
from core.types import UNSET

TAG = "$t"
_CONTAINERS = {"tuple": tuple, "set": set, "frozenset": frozenset}


def value_type(name: str) -> type:
    target = VALUE_TYPES.get(name)
    if target is None:
        raise ValueError(f"not a value type that crosses the wire: {name!r}")
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def encode(value: Any) -> Any:
    if value is UNSET:
        return {TAG: "unset"}
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


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if TAG not in value:  # a plain JSON object (a hand-written call)
        return {str(k): decode(v) for k, v in value.items()}
    tag = value[TAG]
    if tag == "unset":
        return UNSET
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
