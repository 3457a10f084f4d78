"""Package faces whose names load on first use (PEP 562).

`engram --help`, a routed CLI call or a bank listing must not pay for DuckDB,
LanceDB, FastAPI or the embedding model just because a package re-exports
them. A package lists its names as {"Name": "module"} (or "module:attribute"
for a rename) and takes `__getattr__` and `__dir__` from `lazy_exports`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, table: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of `package` for `table`."""

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        namespace[name] = value  # the next lookup is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *table})

    return __getattr__, __dir__
