"""The link tables the engine's in-memory link graph reads, for its tests."""

from __future__ import annotations

import duckdb


def link_tables() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the three tables core.recall.linkgraph.LinkGraph
    reads (links, units, mentions), with the bank's columns, empty."""
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE links (source VARCHAR, target VARCHAR, kind VARCHAR, weight DOUBLE,"
        " entity_id VARCHAR, relation VARCHAR)"
    )
    con.execute("CREATE TABLE units (id VARCHAR)")
    con.execute("CREATE TABLE mentions (unit_id VARCHAR, entity_id VARCHAR, surface VARCHAR)")
    return con
