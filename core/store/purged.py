"""What a bank purged, remembered without its name (issue 27, item 14).

Importing a snapshot made before a purge in place of the bank brought the
purged entity back without a word. The bank keeps a salted SHA-256 of every
name the purged entity had (never the name: the purge removed it for good),
and an import that would replace the bank with a snapshot holding one of
those names is refused until its user confirms it.

Kept in meta under `KEY` as a list of {"salt", "hashes"} (one per bank the
records came from: an import in place carries the replaced bank's records
into the new one, so a second old snapshot is caught too).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from core.store.bank_store import DB_NAME

KEY = "purged_names"


def _digest(salt: str, name: str) -> str:
    return hashlib.sha256(f"{salt}\0{name.strip().casefold()}".encode()).hexdigest()


def remember(records: Any, names: Iterable[str]) -> list[dict[str, Any]]:
    """`records` (meta's value) with `names` added to the first record."""
    kept = valid(records)
    first = kept[0] if kept else {"salt": secrets.token_hex(16), "hashes": []}
    hashes = set(first["hashes"]) | {_digest(first["salt"], n) for n in names if n.strip()}
    return [{"salt": first["salt"], "hashes": sorted(hashes)}, *kept[1:]]


def merged(*records: Any) -> list[dict[str, Any]]:
    """Every record of each, once."""
    out: list[dict[str, Any]] = []
    for record in (r for rs in records for r in valid(rs)):
        same = next((r for r in out if r["salt"] == record["salt"]), None)
        if same is None:
            out.append({"salt": record["salt"], "hashes": sorted(record["hashes"])})
        else:
            same["hashes"] = sorted(set(same["hashes"]) | set(record["hashes"]))
    return out


def purged_among(records: Any, names: Iterable[str]) -> list[str]:
    """Those of `names` the records say were purged."""
    kept = valid(records)
    return sorted(
        {n for n in names if n.strip() and any(_digest(r["salt"], n) in r["hashes"] for r in kept)}
    )


def valid(records: Any) -> list[dict[str, Any]]:
    if not isinstance(records, list):
        return []
    return [
        {"salt": r["salt"], "hashes": [h for h in r.get("hashes", []) if isinstance(h, str)]}
        for r in records
        if isinstance(r, dict) and isinstance(r.get("salt"), str)
    ]


def entity_names(con: duckdb.DuckDBPyConnection, table: str = "entities") -> list[str]:
    """Every entity's name and aliases in `table` (a table, or a parquet file read)."""
    names: list[str] = []
    for name, aliases in con.execute(f"SELECT name, aliases FROM {table}").fetchall():
        names += [name, *(aliases or [])]
    return [n for n in names if isinstance(n, str)]


def read_records(folder) -> list:
    """The records of the bank in `folder`, read from its database while no one
    has it open ([] when there is none)."""
    path = Path(folder) / DB_NAME
    if not path.exists():
        return []
    con = duckdb.connect(str(path), read_only=True)
    try:
        row = con.execute("SELECT value FROM meta WHERE key = ?", [KEY]).fetchone()
    except duckdb.Error:
        return []
    finally:
        con.close()
    return valid(json.loads(row[0])) if row else []
