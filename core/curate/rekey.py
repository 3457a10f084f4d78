"""A purge reaches ids too (issue 27, item 15).

An id a caller chose keeps what the caller put in it: a turn `"zorblax-7"` or a
document `"zorblax-notes"` (Hindsight's clients name their own) would keep the
purged name in `turns.id` and `documents.id`, and in every export after. Ids
are references, so redaction leaves them alone (core/curate/redaction.py);
instead each id naming the entity is given a fresh one, everywhere it is
referenced, inside the purge's transaction.

Turn ids are referenced by units' `source_ids` and failed chunks' `turn_ids`;
document ids by every `document_id` column. One old id gets one new id across
the bank, so what pointed at the same turn still does.
"""

from __future__ import annotations

import uuid

import duckdb

from core.curate.redaction import NameMatcher

# (table, column) holding turn ids: a list of them, or (turns.id) one.
TURN_LISTS = (("units", "source_ids"), ("ingest_failures", "turn_ids"))


def rekey_named_ids(con: duckdb.DuckDBPyConnection, matcher: NameMatcher) -> dict[str, int]:
    """Give a fresh id to each turn and document whose id names the entity;
    how many of each."""
    if not matcher:
        return {"turns": 0, "documents": 0}
    turns = _named(con, "SELECT DISTINCT id FROM turns", matcher)
    for old in turns:
        new = f"turn-{uuid.uuid4().hex[:12]}"
        con.execute("UPDATE turns SET id = ? WHERE id = ?", [new, old])
        for table, column in TURN_LISTS:
            con.execute(
                f"UPDATE {table} SET {column} = list_transform({column},"
                f" lambda t: CASE WHEN t = $old THEN $new ELSE t END)"
                f" WHERE list_contains({column}, $old)",
                {"old": old, "new": new},
            )
    documents = _named(con, "SELECT id FROM documents", matcher)
    for old in documents:
        new = f"doc-{uuid.uuid4().hex[:12]}"
        con.execute("UPDATE documents SET id = ? WHERE id = ?", [new, old])
        for table in _tables_with(con, "document_id"):
            con.execute(f"UPDATE {table} SET document_id = ? WHERE document_id = ?", [new, old])
    return {"turns": len(turns), "documents": len(documents)}


def _named(con: duckdb.DuckDBPyConnection, sql: str, matcher: NameMatcher) -> list[str]:
    return sorted(i for (i,) in con.execute(sql).fetchall() if i and matcher.search(i))


def _tables_with(con: duckdb.DuckDBPyConnection, column: str) -> list[str]:
    """Every table with this column (tables added later included)."""
    return [
        t
        for (t,) in con.execute(
            "SELECT c.table_name FROM duckdb_columns() c JOIN duckdb_tables() t"
            " ON t.database_name = c.database_name AND t.schema_name = c.schema_name"
            " AND t.table_name = c.table_name WHERE c.database_name = current_database()"
            " AND c.schema_name = 'main' AND c.column_name = ? ORDER BY 1",
            [column],
        ).fetchall()
    ]
