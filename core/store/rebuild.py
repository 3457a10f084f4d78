"""Re-deriving both indexes from DuckDB, from scratch.

Used where patching the indexes is not enough: a purge (no older LanceDB
version, deleted row or stale Tantivy segment may survive), an import (the
indexes start empty), and `engram repair --rebuild`. The new indexes are built
in fresh folders and swapped in, so a crash midway leaves the old ones, and
opening the bank repairs whatever disagrees.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import duckdb
import pyarrow as pa

from core.progress import CancelToken, Progress, check, report
from core.store.lexical import LexicalIndex
from core.store.vectors import VectorIndex

FILL_CHUNK = 5000
VECTOR_COLUMNS = ["id", "vector", "network", "status", "occurred_start", "occurred_end"]


def fill_indexes(
    con: duckdb.DuckDBPyConnection,
    vectors: VectorIndex,
    lexical: LexicalIndex,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
) -> int:
    """Index every unit of `con` into *empty* indexes, streamed in chunks; returns
    how many. Empty indexes need no delete-before-add, which on LanceDB scans
    every earlier chunk again (time and memory)."""
    total = con.execute("SELECT count(*) FROM units").fetchall()[0][0]
    batches = con.sql(
        "SELECT id, vector, network, status, occurred_start, occurred_end, text FROM units"
    ).to_arrow_reader(FILL_CHUNK)
    done = 0
    try:
        for batch in batches:
            check(cancel)
            if batch.num_rows == 0:
                continue
            vectors.append(pa.Table.from_batches([batch]).select(VECTOR_COLUMNS))
            lexical.add(
                zip(
                    batch.column("id").to_pylist(),
                    batch.column("network").to_pylist(),
                    batch.column("text").to_pylist(),
                    strict=True,
                )
            )
            done += batch.num_rows
            report(progress, done, total, "indexing")
    finally:
        batches.close()
    return done


def build_fresh(
    con: duckdb.DuckDBPyConnection, vectors_dir: Path, bm25_dir: Path, dim: int
) -> tuple[Path, Path]:
    """Build both indexes next to the live ones (`<dir>.rebuild`); returns their folders."""
    fresh_vectors = _fresh(vectors_dir.with_name(vectors_dir.name + ".rebuild"))
    fresh_bm25 = _fresh(bm25_dir.with_name(bm25_dir.name + ".rebuild"))
    vectors = VectorIndex(fresh_vectors, dim)
    lexical = LexicalIndex(fresh_bm25)
    fill_indexes(con, vectors, lexical)
    vectors.compact()  # one fragment per fill chunk, merged before the index trains
    vectors.maybe_index()  # a large bank comes back indexed
    with warnings.catch_warnings():
        # LanceDB warns that dropping history breaks concurrent readers: none exist here.
        warnings.simplefilter("ignore", UserWarning)
        vectors.compact(drop_history=True)
    lexical.close()
    return fresh_vectors, fresh_bm25


def swap(fresh: Path, live: Path) -> None:
    """Put `fresh` where `live` is. A crash in between leaves `live` missing or
    old; opening the bank then finds the counts off and repairs from DuckDB."""
    old = live.with_name(live.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if live.exists():
        os.rename(live, old)
    os.rename(fresh, live)
    shutil.rmtree(old, ignore_errors=True)


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    return path
