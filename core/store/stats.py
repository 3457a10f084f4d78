"""A bank's contents counted, in a few aggregate queries (never a listing)."""

from __future__ import annotations

import duckdb

from core.types import BankStats, Network


def bank_stats(con: duckdb.DuckDBPyConnection, pending_jobs: int = 0) -> BankStats:
    units = {str(n): 0 for n in Network}
    units.update(
        con.execute(
            "SELECT network, count(*) FROM units WHERE status = 'active' GROUP BY network"
        ).fetchall()
    )
    # Each link is stored in both directions: halved, it counts each link once.
    links = {
        kind: count // 2
        for kind, count in con.execute("SELECT kind, count(*) FROM links GROUP BY kind").fetchall()
    }
    by_network = {
        network: count // 2
        for network, count in con.execute(
            "SELECT u.network, count(*) FROM links l JOIN units u ON u.id = l.source"
            " GROUP BY u.network"
        ).fetchall()
    }
    documents = con.execute("SELECT count(*) FROM documents").fetchone()[0]
    entities = con.execute("SELECT count(*) FROM entities WHERE status = 'active'").fetchone()[0]
    return BankStats(units, links, by_network, documents, entities, pending_jobs)
