"""The PostgreSQL store's schema and its migrations (docs/store.md).

The same tables as the SQLite store, with two additions: every session row carries its owner
and its workspace's identity (a user sees only their own sessions), and the transcript's search
index is a `tsvector` column with a GIN index. The version lives in the `blitz_schema` table,
one row per applied migration. Each migration runs in one transaction under an advisory lock,
so two kernels starting together migrate once; a schema newer than this code is refused
before anything is written.
"""

from __future__ import annotations

import psycopg

from ..protocol import SchemaTooNewError, StoreError

MIGRATION_LOCK = 0x626C69747A  # "blitz": the advisory lock migrations run under
SEARCH_CONFIG = "simple"
"""Words as written, no stemming: a prefix of a word matches, as in the SQLite store."""
INDEXED_CHARS = 200_000
"""A tsvector holds at most 1 MB; a longer message is indexed by its beginning."""

MIGRATIONS: list[str] = [
    # 0 → 1: everything the SQLite store has at its schema 4.
    f"""
    CREATE TABLE sessions (
        id BIGSERIAL PRIMARY KEY,
        owner TEXT NOT NULL,                        -- JUPYTERHUB_USER, else the OS user
        workspace TEXT NOT NULL,                    -- the workspace's identity (its path)
        name TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT 'session',       -- 'session' or 'snapshot'
        created DOUBLE PRECISION NOT NULL,
        last_used DOUBLE PRECISION NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0,
        messages INTEGER NOT NULL DEFAULT 0,
        open_turn INTEGER,
        first_live INTEGER NOT NULL DEFAULT 0,
        live_summary INTEGER,
        last_prompt_tokens BIGINT NOT NULL DEFAULT 0,
        todos TEXT NOT NULL DEFAULT '[]',
        holder TEXT,
        source TEXT,
        budget TEXT NOT NULL DEFAULT '{{}}',
        UNIQUE (owner, workspace, kind, name)
    );
    CREATE TABLE events (
        id BIGSERIAL PRIMARY KEY,
        session_id BIGINT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn INTEGER NOT NULL,
        time DOUBLE PRECISION NOT NULL,
        kind TEXT NOT NULL,                         -- 'unit', 'summary' or 'rewind'
        messages INTEGER NOT NULL,
        first_message INTEGER NOT NULL,
        covers_from BIGINT,
        covers_to BIGINT,
        covered INTEGER,
        variables TEXT,
        body TEXT NOT NULL
    );
    CREATE INDEX events_by_session ON events (session_id, id);
    CREATE INDEX events_by_kind ON events (session_id, kind);
    CREATE TABLE transcript (
        id BIGSERIAL PRIMARY KEY,
        session_id BIGINT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        event_id BIGINT NOT NULL,
        message INTEGER NOT NULL,
        turn INTEGER NOT NULL,
        time DOUBLE PRECISION NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL,
        words TSVECTOR GENERATED ALWAYS AS (to_tsvector('{SEARCH_CONFIG}', left(text, {INDEXED_CHARS}))) STORED
    );
    CREATE INDEX transcript_by_session ON transcript (session_id, message);
    CREATE INDEX transcript_words ON transcript USING GIN (words);
    CREATE TABLE turns (
        session_id BIGINT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn INTEGER NOT NULL,
        started DOUBLE PRECISION NOT NULL,
        ended DOUBLE PRECISION,
        stop_reason TEXT,
        error TEXT,
        PRIMARY KEY (session_id, turn)
    );
    CREATE TABLE usage (
        session_id BIGINT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        totals TEXT NOT NULL,
        PRIMARY KEY (session_id, model)
    );
    CREATE TABLE trace_links (
        session_id BIGINT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        trace_id TEXT NOT NULL,
        span_id TEXT NOT NULL,
        trace_flags INTEGER NOT NULL
    );
    CREATE TABLE audit (
        id BIGSERIAL PRIMARY KEY,
        session_id BIGINT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn INTEGER NOT NULL,
        time DOUBLE PRECISION NOT NULL,
        tool TEXT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE INDEX audit_by_session ON audit (session_id, id);
    CREATE TABLE checkpoints (
        id BIGSERIAL PRIMARY KEY,
        session_id BIGINT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn INTEGER NOT NULL,
        time DOUBLE PRECISION NOT NULL,
        kind TEXT NOT NULL,
        record TEXT NOT NULL
    );
    CREATE INDEX checkpoints_by_session ON checkpoints (session_id, id);
    CREATE TABLE holders (
        lock_key BIGINT PRIMARY KEY,                -- the session's advisory lock
        owner TEXT NOT NULL,
        workspace TEXT NOT NULL,
        name TEXT NOT NULL,
        record TEXT                                 -- who holds it (locks.Holder as JSON)
    );
    """,
    # 1 → 2: what a session carries between turns (records.BetweenTurns), as in SQLite's 6.
    """
    ALTER TABLE sessions ADD COLUMN between_turns TEXT NOT NULL DEFAULT '{}';
    """,
    # 2 → 3: the usage ledger as each turn ended (records.TurnUsage), as in SQLite's 7.
    """
    ALTER TABLE turns ADD COLUMN usage TEXT;
    """,
    # 3 → 4: the rewind look-up's index holds the rewind rows alone, as in SQLite's 8.
    """
    DROP INDEX events_by_kind;
    CREATE INDEX events_rewinds ON events (session_id) WHERE kind = 'rewind';
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(connection: psycopg.Connection) -> int:
    exists = connection.execute("SELECT to_regclass('blitz_schema')").fetchone()
    if exists is None or exists[0] is None:
        return 0
    row = connection.execute("SELECT max(version) FROM blitz_schema").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def refuse_newer(location: str, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"{location} has schema version {version}, newer than this blitz_kernel reads ({SCHEMA_VERSION}); "
            "upgrade blitz_kernel. The database was left untouched."
        )


def check_current(connection: psycopg.Connection, location: str) -> None:
    """For a reader that must change nothing: StoreError unless the schema is this version's."""
    version = schema_version(connection)
    refuse_newer(location, version)
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"{location} has schema version {version}; a kernel of this blitz_kernel sets it up "
            f"({SCHEMA_VERSION}) on its first turn, and the panel changes nothing"
        )


def migrate(connection: psycopg.Connection, location: str) -> None:
    """Bring the database to SCHEMA_VERSION: read-only first (a newer one is refused
    untouched), then each missing migration in its own transaction, the version read again
    under the migration lock (another kernel may have migrated meanwhile)."""
    refuse_newer(location, schema_version(connection))
    while True:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            version = schema_version(connection)
            refuse_newer(location, version)
            if version == SCHEMA_VERSION:
                return
            if version == 0:
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS blitz_schema (version INTEGER PRIMARY KEY, applied TIMESTAMPTZ "
                    "NOT NULL DEFAULT now())"
                )
            for statement in _statements(MIGRATIONS[version]):
                connection.execute(statement.encode())
            connection.execute("INSERT INTO blitz_schema (version) VALUES (%s)", (version + 1,))


def _statements(script: str) -> list[str]:
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]
