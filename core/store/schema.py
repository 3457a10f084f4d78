"""The DuckDB schema of a bank and its migrations.

`MIGRATIONS` is append-only: each entry moves the schema from version i to
i + 1 and runs inside the transaction that records the new version (a new
bank: every entry in one transaction), so a bank is never left half-migrated.
Add a new entry; never edit a shipped one.
"""

from __future__ import annotations

import duckdb

MIGRATIONS: list[list[str]] = [
    # 1: the foundation
    [
        """CREATE TABLE meta (
            key VARCHAR PRIMARY KEY,
            value JSON NOT NULL
        )""",
        """CREATE TABLE documents (
            id VARCHAR PRIMARY KEY,
            title VARCHAR NOT NULL,
            source_path VARCHAR,
            content_hash VARCHAR NOT NULL,
            format VARCHAR,
            created_at TIMESTAMP NOT NULL
        )""",
        """CREATE TABLE turns (
            document_id VARCHAR NOT NULL,
            id VARCHAR NOT NULL,
            idx INTEGER NOT NULL,
            speaker VARCHAR NOT NULL,
            text VARCHAR NOT NULL,
            timestamp TIMESTAMP,
            session VARCHAR
        )""",
        """CREATE TABLE units (
            id VARCHAR PRIMARY KEY,
            text VARCHAR NOT NULL,
            network VARCHAR NOT NULL,
            occurred_start TIMESTAMP,
            occurred_end TIMESTAMP,
            mentioned_at TIMESTAMP,
            confidence DOUBLE,
            status VARCHAR NOT NULL,
            source_ids VARCHAR[] NOT NULL,
            document_id VARCHAR,
            extraction_mode VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            embedding_model VARCHAR NOT NULL,
            vector FLOAT[] NOT NULL,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            access_count INTEGER NOT NULL
        )""",
        """CREATE TABLE entities (
            id VARCHAR PRIMARY KEY,
            name VARCHAR NOT NULL,
            type VARCHAR NOT NULL,
            aliases VARCHAR[] NOT NULL,
            status VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL
        )""",
        # No foreign keys: DuckDB cannot update a row that a foreign key points
        # at, and curation rewrites units in place. Integrity is checked by verify.
        """CREATE TABLE mentions (
            unit_id VARCHAR NOT NULL,
            entity_id VARCHAR NOT NULL,
            surface VARCHAR
        )""",
        """CREATE TABLE links (
            source VARCHAR NOT NULL,
            target VARCHAR NOT NULL,
            kind VARCHAR NOT NULL,
            weight DOUBLE NOT NULL,
            entity_id VARCHAR,
            relation VARCHAR
        )""",
        """CREATE TABLE opinion_events (
            id VARCHAR PRIMARY KEY,
            opinion_id VARCHAR NOT NULL,
            happened_at TIMESTAMP NOT NULL,
            relation VARCHAR NOT NULL,
            confidence_before DOUBLE,
            confidence_after DOUBLE NOT NULL,
            evidence_id VARCHAR,
            reason VARCHAR,
            old_text VARCHAR,
            new_text VARCHAR
        )""",
        """CREATE TABLE jobs (
            id VARCHAR PRIMARY KEY,
            kind VARCHAR NOT NULL,
            target VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            error VARCHAR
        )""",
        """CREATE TABLE audit (
            seq BIGINT PRIMARY KEY,
            recorded_at TIMESTAMP NOT NULL,
            actor VARCHAR NOT NULL,
            action VARCHAR NOT NULL,
            target VARCHAR,
            before_state JSON,
            after_state JSON,
            undone BOOLEAN NOT NULL
        )""",
        # Units whose index entries may be stale: written in the same transaction
        # as the change, emptied only after LanceDB and Tantivy caught up.
        """CREATE TABLE index_queue (
            unit_id VARCHAR PRIMARY KEY
        )""",
        "CREATE INDEX mentions_unit ON mentions(unit_id)",
        "CREATE INDEX mentions_entity ON mentions(entity_id)",
        "CREATE INDEX links_source ON links(source)",
        "CREATE INDEX links_target ON links(target)",
        "CREATE INDEX turns_doc ON turns(document_id)",
        "CREATE INDEX events_opinion ON opinion_events(opinion_id)",
    ],
    # 2: retain — entity resolution decisions, observations and their sources,
    # failed extraction chunks, and how each document was ingested
    [
        # One row per distinct surface form per document: which entity it was
        # resolved to, the best candidate it was compared with, and the score.
        """CREATE TABLE entity_decisions (
            id VARCHAR PRIMARY KEY,
            document_id VARCHAR,
            surface VARCHAR NOT NULL,
            entity_type VARCHAR,
            entity_id VARCHAR NOT NULL,
            candidate_id VARCHAR,
            decision VARCHAR NOT NULL,
            score DOUBLE,
            name_score DOUBLE,
            cooccurrence_score DOUBLE,
            time_score DOUBLE,
            threshold DOUBLE,
            decided_at TIMESTAMP NOT NULL
        )""",
        "CREATE INDEX decisions_entity ON entity_decisions(entity_id)",
        # The one observation unit of an entity (replaced in place on regeneration).
        """CREATE TABLE observations (
            entity_id VARCHAR PRIMARY KEY,
            unit_id VARCHAR NOT NULL,
            mode VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            updated_at TIMESTAMP NOT NULL
        )""",
        # The units an observation was synthesised from.
        """CREATE TABLE observation_sources (
            observation_id VARCHAR NOT NULL,
            unit_id VARCHAR NOT NULL
        )""",
        "CREATE INDEX observation_sources_obs ON observation_sources(observation_id)",
        "ALTER TABLE documents ADD COLUMN extraction_mode VARCHAR",
        "ALTER TABLE documents ADD COLUMN model VARCHAR",
        # Chunks whose extraction failed: nothing of them was written.
        """CREATE TABLE ingest_failures (
            document_id VARCHAR NOT NULL,
            turn_ids VARCHAR[] NOT NULL,
            reason VARCHAR NOT NULL,
            recorded_at TIMESTAMP NOT NULL
        )""",
    ],
    # 3: reflect — every reflection kept: its question, Θ, the evidence it saw (ids
    # only, so purging a unit purges its text here too), the answer, the opinions
    # it formed or updated (JSON, with their event ids), and what produced it.
    [
        """CREATE TABLE reflections (
            id VARCHAR PRIMARY KEY,
            query VARCHAR NOT NULL,
            disposition JSON NOT NULL,
            evidence_ids VARCHAR[] NOT NULL,
            answer VARCHAR NOT NULL,
            opinions JSON NOT NULL,
            model VARCHAR NOT NULL,
            mode VARCHAR NOT NULL,
            created_at TIMESTAMP NOT NULL,
            committed BOOLEAN NOT NULL,
            committed_at TIMESTAMP,
            budget_tokens INTEGER,
            system_prompt VARCHAR,
            opinion_error VARCHAR,
            notes VARCHAR[]
        )""",
        "CREATE INDEX reflections_created ON reflections(created_at)",
    ],
    # 4: when each unit was last recalled (by an agent or the studio; with
    # access_count, shown as "recalled N times · last recalled …")
    [
        "ALTER TABLE units ADD COLUMN last_accessed_at TIMESTAMP",
    ],
    # 5: tags and metadata (Hindsight's `tags` and `metadata`), kept on each turn
    # as it was retained and on each unit drawn from it (core/tags.py): recall
    # filters units by their tags before any channel runs.
    [
        "ALTER TABLE turns ADD COLUMN tags VARCHAR[] DEFAULT []",
        "ALTER TABLE turns ADD COLUMN metadata JSON",
        "ALTER TABLE units ADD COLUMN tags VARCHAR[] DEFAULT []",
        "ALTER TABLE units ADD COLUMN metadata JSON",
    ],
    # 6: how much each opinion step weighed: the evidence's strength (how plainly it
    # bears on the opinion) and independence (how much it adds to what the opinion
    # heard already); NULL for steps recorded before, which weighed 1.
    [
        "ALTER TABLE opinion_events ADD COLUMN strength DOUBLE",
        "ALTER TABLE opinion_events ADD COLUMN independence DOUBLE",
    ],
    # 7: the asynchronous operations queued on the bank (`"async": true` retains),
    # with the request each will run until it completed (core/store/oplog.py)
    [
        """CREATE TABLE operations (
            id VARCHAR PRIMARY KEY,
            kind VARCHAR NOT NULL,
            status VARCHAR NOT NULL,
            items_count INTEGER NOT NULL,
            payload JSON,
            result JSON,
            error VARCHAR,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            completed_at TIMESTAMP
        )""",
    ],
    # 8: who wrote each unit and document (the actor of the request that made it:
    # "studio", "cli", an API token's name; core/context.py). NULL: before this version.
    [
        "ALTER TABLE units ADD COLUMN created_by VARCHAR",
        "ALTER TABLE documents ADD COLUMN created_by VARCHAR",
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    # duckdb_tables(), not information_schema: the same answer, and the view
    # costs ~12 ms on a database just opened (every bank open asks this).
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'meta' AND schema_name = 'main'"
    ).fetchone()[0]
    if not exists:
        return 0
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Bring the schema up to date; returns the version it started from."""
    start = current_version(con)
    if start > SCHEMA_VERSION:
        from core.types import EngramError

        raise EngramError(
            f"this bank has schema version {start}, newer than this Engram Studio "
            f"({SCHEMA_VERSION}): upgrade Engram Studio to open it"
        )
    # A new bank gets the whole schema in one transaction: each commit costs
    # more than its statements (~30 of a new bank's ~75 ms, and a test suite
    # makes a thousand banks). An existing bank moves up one version per
    # transaction, as it always has.
    steps = (
        [range(0, SCHEMA_VERSION)] if start == 0 else [[v] for v in range(start, SCHEMA_VERSION)]
    )
    for versions in steps:
        con.execute("BEGIN")
        try:
            for version in versions:
                for statement in MIGRATIONS[version]:
                    con.execute(statement)
            con.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(versions[-1] + 1)]
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return start
