"""Diffing two snapshots, or a snapshot and a live bank.

Both sides become Parquet files (a snapshot's members after the same checks
an import makes; a live bank's tables exported in batches, without vectors)
and an in-memory DuckDB joins them, so neither side is ever held in Python.
"""

from __future__ import annotations

import difflib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import duckdb
import pyarrow.parquet as pq

from core.snapshot.archive import SnapshotReader
from core.store.filters import sql_string

if TYPE_CHECKING:
    from core.store.bank_store import BankStore


class LiveBank(Protocol):
    """A live side of a diff: a `Bank`, or the handle its operations get."""

    name: str
    store: BankStore


# The unit columns a diff compares (vectors follow the text).
UNIT_FIELDS = ("text", "network", "status", "confidence", "occurred_start", "occurred_end")
TABLES = {
    "units": "id, " + ", ".join(UNIT_FIELDS),
    "entities": "id, name, type, aliases, status",
}
TEXT_LIMIT = 200


@dataclass(frozen=True)
class UnitRef:
    id: str
    network: str
    text: str


@dataclass(frozen=True)
class UnitChange:
    id: str
    network: str
    fields: tuple[str, ...]  # which of UNIT_FIELDS changed
    before: Mapping[str, Any]
    after: Mapping[str, Any]

    @property
    def text_changed(self) -> bool:
        return "text" in self.fields

    def text_diff(self) -> str:
        """A word-level diff of the text: [-removed-] {+added+}."""
        a, b = str(self.before.get("text", "")).split(), str(self.after.get("text", "")).split()
        out = []
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b).get_opcodes():
            if op == "equal":
                out += a[i1:i2]
            if op in ("delete", "replace"):
                out.append("[-" + " ".join(a[i1:i2]) + "-]")
            if op in ("insert", "replace"):
                out.append("{+" + " ".join(b[j1:j2]) + "+}")
        return " ".join(out)


@dataclass(frozen=True)
class EntityRef:
    id: str
    name: str
    type: str


@dataclass(frozen=True)
class EntityMerge:
    source: EntityRef  # gone from B; its name is an alias of target there
    target: EntityRef


@dataclass(frozen=True)
class EntityRename:
    id: str
    before: str
    after: str


@dataclass(frozen=True)
class ConfidenceChange:
    id: str
    text: str
    before: float | None
    after: float | None


@dataclass(frozen=True)
class SnapshotDiff:
    a: str
    b: str
    units_added: tuple[UnitRef, ...] = ()
    units_removed: tuple[UnitRef, ...] = ()
    units_changed: tuple[UnitChange, ...] = ()
    entities_added: tuple[EntityRef, ...] = ()
    entities_removed: tuple[EntityRef, ...] = ()  # gone, not merged (deleted or purged)
    entities_merged: tuple[EntityMerge, ...] = ()
    entities_retracted: tuple[EntityRef, ...] = ()
    entities_restored: tuple[EntityRef, ...] = ()
    entities_renamed: tuple[EntityRename, ...] = ()
    opinions_changed: tuple[ConfidenceChange, ...] = ()
    counts: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # table -> (a, b)

    @property
    def empty(self) -> bool:
        return not (
            self.units_added
            or self.units_removed
            or self.units_changed
            or self.entities_added
            or self.entities_removed
            or self.entities_merged
            or self.entities_retracted
            or self.entities_restored
            or self.entities_renamed
            or self.opinions_changed
        )

    def text(self, limit: int = 50) -> str:
        """The diff for a person (`engram diff`); at most `limit` lines per section."""
        lines = [f"--- {self.a}", f"+++ {self.b}"]
        if self.empty:
            lines.append("no differences in units, entities or opinions")
            return "\n".join(lines)
        lines.append(
            f"units: {len(self.units_added)} added, {len(self.units_removed)} removed,"
            f" {len(self.units_changed)} changed"
        )
        for u in self.units_added[:limit]:
            lines.append(f"  + [{u.network}] {u.id}  {_short(u.text)}")
        for u in self.units_removed[:limit]:
            lines.append(f"  - [{u.network}] {u.id}  {_short(u.text)}")
        for c in self.units_changed[:limit]:
            others = [f for f in c.fields if f != "text"]
            detail = ", ".join(
                f"{f} {_fmt(c.before.get(f))} -> {_fmt(c.after.get(f))}" for f in others
            )
            lines.append(f"  ~ [{c.network}] {c.id}  {detail}".rstrip())
            if c.text_changed:
                lines.append(f"      {_short(c.text_diff(), 3 * TEXT_LIMIT)}")
        _more(lines, limit, self.units_added, self.units_removed, self.units_changed)
        lines.append(
            f"entities: {len(self.entities_added)} added, {len(self.entities_removed)} removed,"
            f" {len(self.entities_merged)} merged, {len(self.entities_retracted)} retracted,"
            f" {len(self.entities_restored)} restored, {len(self.entities_renamed)} renamed"
        )
        for e in self.entities_added[:limit]:
            lines.append(f"  + {e.name} ({e.type}) {e.id}")
        for e in self.entities_removed[:limit]:
            lines.append(f"  - {e.name} ({e.type}) {e.id}")
        for m in self.entities_merged[:limit]:
            lines.append(f"  merged {m.source.name} ({m.source.id}) into {m.target.name}")
        for e in self.entities_retracted[:limit]:
            lines.append(f"  retracted {e.name} ({e.id})")
        for e in self.entities_restored[:limit]:
            lines.append(f"  restored {e.name} ({e.id})")
        for r in self.entities_renamed[:limit]:
            lines.append(f"  renamed {r.before} -> {r.after} ({r.id})")
        lines.append(f"opinions: {len(self.opinions_changed)} confidence change(s)")
        for o in self.opinions_changed[:limit]:
            lines.append(f"  ~ {_fmt(o.before)} -> {_fmt(o.after)}  {_short(o.text)}")
        return "\n".join(lines)


def _short(text: str, limit: int = TEXT_LIMIT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="minutes")
    return str(value)


def _more(lines: list[str], limit: int, *groups) -> None:
    hidden = sum(max(0, len(g) - limit) for g in groups)
    if hidden:
        lines.append(f"  … and {hidden} more")


# -- computing ---------------------------------------------------------------------


def _side(source, folder: Path) -> tuple[str, dict[str, Path]]:
    """(label, table -> Parquet file) for a snapshot path or a live bank."""
    if not isinstance(source, str | Path):  # a live bank: its name and store
        files = {}
        folder.mkdir(parents=True, exist_ok=True)
        con = source.store.reader()
        for table, columns in TABLES.items():
            file = folder / f"{table}.parquet"
            reader = con.sql(f"SELECT {columns} FROM {table}").to_arrow_reader(8192)
            try:
                with pq.ParquetWriter(file, reader.schema) as writer:
                    for batch in reader:
                        writer.write_batch(batch)
            finally:
                reader.close()
            files[table] = file
        return f"bank {source.name!r} (live)", files
    with SnapshotReader(source) as snapshot:
        return str(source), snapshot.extract(folder)


def diff_snapshots(a: str | Path | LiveBank, b: str | Path | LiveBank) -> SnapshotDiff:
    """What changed from `a` to `b`; each is a `.engram` path or a live bank."""
    with tempfile.TemporaryDirectory(prefix="engram-diff-") as tmp:
        label_a, files_a = _side(a, Path(tmp) / "a")
        label_b, files_b = _side(b, Path(tmp) / "b")
        con = duckdb.connect()
        try:
            for prefix, files in (("a", files_a), ("b", files_b)):
                for table, columns in TABLES.items():
                    con.execute(
                        f"CREATE VIEW {prefix}_{table} AS SELECT {columns}"
                        f" FROM read_parquet({sql_string(str(files[table]))})"
                    )
            return _compute(con, label_a, label_b)
        finally:
            con.close()


def _compute(con: duckdb.DuckDBPyConnection, label_a: str, label_b: str) -> SnapshotDiff:
    def refs(sql: str) -> tuple[UnitRef, ...]:
        return tuple(UnitRef(*r) for r in con.execute(sql).fetchall())

    added = refs(
        "SELECT b.id, b.network, b.text FROM b_units b ANTI JOIN a_units a ON a.id = b.id"
        " ORDER BY b.id"
    )
    removed = refs(
        "SELECT a.id, a.network, a.text FROM a_units a ANTI JOIN b_units b ON a.id = b.id"
        " ORDER BY a.id"
    )
    differs = " OR ".join(f"a.{f} IS DISTINCT FROM b.{f}" for f in UNIT_FIELDS)
    changed = []
    opinions = []
    cols = ", ".join(f"a.{f}, b.{f}" for f in UNIT_FIELDS)
    for row in con.execute(
        f"SELECT a.id, b.network, {cols} FROM a_units a JOIN b_units b ON a.id = b.id"
        f" WHERE {differs} ORDER BY a.id"
    ).fetchall():
        unit_id, network, values = row[0], row[1], row[2:]
        before = {f: values[2 * i] for i, f in enumerate(UNIT_FIELDS)}
        after = {f: values[2 * i + 1] for i, f in enumerate(UNIT_FIELDS)}
        fields = tuple(f for f in UNIT_FIELDS if before[f] != after[f])
        changed.append(UnitChange(unit_id, network, fields, before, after))
        if "confidence" in fields and "opinion" in (before["network"], after["network"]):
            opinions.append(
                ConfidenceChange(unit_id, after["text"], before["confidence"], after["confidence"])
            )
    a_entities = {r[0]: r for r in con.execute("SELECT * FROM a_entities").fetchall()}
    b_entities = {r[0]: r for r in con.execute("SELECT * FROM b_entities").fetchall()}

    def ref(row) -> EntityRef:
        return EntityRef(row[0], row[1], row[2])

    by_alias: dict[str, list[tuple]] = {}
    for row in b_entities.values():
        for alias in row[3] or ():
            by_alias.setdefault(alias.casefold(), []).append(row)
    merged, gone = [], []
    for entity_id in sorted(a_entities.keys() - b_entities.keys()):
        row = a_entities[entity_id]
        targets = [t for t in by_alias.get(row[1].casefold(), []) if t[0] != entity_id]
        # Prefer a target that existed before: a merge joins two known entities.
        targets.sort(key=lambda t: (t[0] not in a_entities, t[0]))
        if targets:
            merged.append(EntityMerge(ref(row), ref(targets[0])))
        else:
            gone.append(ref(row))
    both = sorted(a_entities.keys() & b_entities.keys())
    return SnapshotDiff(
        a=label_a,
        b=label_b,
        units_added=added,
        units_removed=removed,
        units_changed=tuple(changed),
        entities_added=tuple(
            ref(b_entities[i]) for i in sorted(b_entities.keys() - a_entities.keys())
        ),
        entities_removed=tuple(gone),
        entities_merged=tuple(merged),
        entities_retracted=tuple(
            ref(b_entities[i])
            for i in both
            if a_entities[i][4] == "active" and b_entities[i][4] == "retracted"
        ),
        entities_restored=tuple(
            ref(b_entities[i])
            for i in both
            if a_entities[i][4] == "retracted" and b_entities[i][4] == "active"
        ),
        entities_renamed=tuple(
            EntityRename(i, a_entities[i][1], b_entities[i][1])
            for i in both
            if a_entities[i][1] != b_entities[i][1]
        ),
        opinions_changed=tuple(opinions),
        counts={
            t: tuple(
                con.execute(f"SELECT count(*) FROM {side}_{t}").fetchall()[0][0] for side in "ab"
            )
            for t in TABLES
        },
    )
