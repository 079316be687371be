"""The SQLite store's schema and its migrations (docs/store.md).

The version lives in `PRAGMA user_version`. Each migration takes the database from version n to
n + 1 inside one transaction, so a database is always at exactly one version. A database newer
than this code is refused before anything is written to it (not even the switch to WAL).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from ..protocol import SchemaTooNewError

BUSY_TIMEOUT_S = 10.0
"""Two kernels writing at once wait for each other this long, rather than failing with
"database is locked" (each write transaction lasts well under a millisecond)."""

MIGRATIONS: list[str] = [
    # 0 → 1: sessions (and snapshots, which are frozen sessions), the event log, the
    # transcript with its full-text index, turn outcomes, usage, the previous turn's span.
    """
    CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        kind TEXT NOT NULL DEFAULT 'session',       -- 'session' or 'snapshot'
        created REAL NOT NULL,
        last_used REAL NOT NULL,
        turns INTEGER NOT NULL DEFAULT 0,           -- completed turns: the next turn's index
        messages INTEGER NOT NULL DEFAULT 0,        -- the next message number
        open_turn INTEGER,                          -- the turn running now; NULL between turns
        first_live INTEGER NOT NULL DEFAULT 0,      -- messages numbered below were compacted away
        live_summary INTEGER,                       -- number of the summary heading the history
        last_prompt_tokens INTEGER NOT NULL DEFAULT 0,
        todos TEXT NOT NULL DEFAULT '[]',
        holder TEXT,                                -- who opened it last (pid, notebook, since)
        source TEXT,                                -- the session a snapshot copies, or vice versa
        UNIQUE (kind, name)
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL,
        turn INTEGER NOT NULL,
        time REAL NOT NULL,
        kind TEXT NOT NULL,                         -- 'unit' or 'summary' ('rewind': schema 3)
        messages INTEGER NOT NULL,                  -- how many messages `body` holds
        first_message INTEGER NOT NULL,             -- the number of the first of them
        covers_from INTEGER,                        -- summary: the first event it stands for
        covers_to INTEGER,                          -- summary: the last event it stands for
        covered INTEGER,                            -- summary: live messages it replaced
        variables TEXT,                             -- unit: user variables its tools touched
        body TEXT NOT NULL                          -- JSON array of messages (HISTORY_ADAPTER);
                                                    -- last, so reading the columns above never
                                                    -- walks its overflow pages
    );
    CREATE INDEX events_by_session ON events (session_id, id);
    CREATE TABLE transcript (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL,
        event_id INTEGER NOT NULL,
        message INTEGER NOT NULL,
        turn INTEGER NOT NULL,
        time REAL NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX transcript_by_session ON transcript (session_id, message);
    CREATE VIRTUAL TABLE transcript_fts USING fts5 (text, content='transcript', content_rowid='id');
    CREATE TABLE turns (
        session_id INTEGER NOT NULL,
        turn INTEGER NOT NULL,
        started REAL NOT NULL,
        ended REAL,
        stop_reason TEXT,
        error TEXT,
        PRIMARY KEY (session_id, turn)
    );
    CREATE TABLE usage (
        session_id INTEGER NOT NULL,
        model TEXT NOT NULL,                        -- '' is the session's total
        totals TEXT NOT NULL,                       -- UsageTotals as JSON
        PRIMARY KEY (session_id, model)
    );
    CREATE TABLE trace_links (
        session_id INTEGER PRIMARY KEY,
        trace_id TEXT NOT NULL,
        span_id TEXT NOT NULL,
        trace_flags INTEGER NOT NULL
    );
    """,
    # 1 → 2: the audit trail and the session budget's state, so a trip
    # survives a kernel restart.
    """
    CREATE TABLE audit (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL,
        turn INTEGER NOT NULL,
        time REAL NOT NULL,
        tool TEXT NOT NULL,
        record TEXT NOT NULL                        -- AuditRecord as JSON
    );
    CREATE INDEX audit_by_session ON audit (session_id, id);
    ALTER TABLE sessions ADD COLUMN budget TEXT NOT NULL DEFAULT '{}';
    """,
    # 2 → 3: per-turn checkpoints: what each turn changed (files, cells, code runs) and
    # which turns were undone, appended as they happen. A conversation rewind is an `events`
    # row of kind 'rewind' (the log stays append-only; replay honours it).
    """
    CREATE TABLE checkpoints (
        id INTEGER PRIMARY KEY,
        session_id INTEGER NOT NULL,
        turn INTEGER NOT NULL,
        time REAL NOT NULL,
        kind TEXT NOT NULL,                         -- 'file', 'cell', 'code' or 'undone'
        record TEXT NOT NULL                        -- the Change as JSON, or the undone part
    );
    CREATE INDEX checkpoints_by_session ON checkpoints (session_id, id);
    """,
    # 3 → 4: the store's identity (a random id the creating kernel writes and records in the
    # user's ~/.blitz/stores/, so a database that arrived by clone or copy is told apart), and
    # an index for search's rewind look-up (the rewind rows of a session, found at once).
    """
    CREATE TABLE meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE INDEX events_by_kind ON events (session_id, kind);
    """,
    # 4 → 5: the search index is brought up to date once a turn (and before every search,
    # delete and copy), not in every unit's transaction: `fts_indexed` is the transcript row id
    # up to which every session's row is indexed (rows.index_transcript); all of them so far.
    """
    INSERT OR REPLACE INTO meta (key, value)
        VALUES ('fts_indexed', (SELECT coalesce(max(id), 0) FROM transcript));
    """,
    # 5 → 6: what a session carries between turns besides its history (records.BetweenTurns:
    # the inbox and the watchdog's window), so a new kernel picks both up.
    """
    ALTER TABLE sessions ADD COLUMN between_turns TEXT NOT NULL DEFAULT '{}';
    """,
    # 6 → 7: the session's usage ledger as each turn ended (UsageLedger as JSON), so usage can
    # be told per day (the side panel, docs/panel.md); NULL for turns ended before.
    """
    ALTER TABLE turns ADD COLUMN usage TEXT;
    """,
    # 7 → 8: the rewind look-up's index holds the rewind rows alone (a partial index): the
    # event row of every unit no longer writes a page of an index that only rewinds are
    # looked up in.
    """
    DROP INDEX events_by_kind;
    CREATE INDEX events_rewinds ON events (session_id) WHERE kind = 'rewind';
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


def connect(path: Path, *, wal: bool = True) -> sqlite3.Connection:
    """Open (or create) the database at `path` and bring it to SCHEMA_VERSION.

    Autocommit mode: every write is an explicit `BEGIN IMMEDIATE … COMMIT`, taking the write
    lock up front so two writers queue on the busy timeout instead of deadlocking. `wal`:
    False on a network file system, where WAL's shared memory does not work across hosts: the
    rollback journal with full syncs instead (mounts.py)."""
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    try:
        version = connection.execute("PRAGMA user_version").fetchone()[0]  # reads only
        refuse_newer(path, version)
        if wal:
            _switch_journal(connection, "WAL")
            # WAL with synchronous=NORMAL survives a killed process (the WAL is in the OS cache);
            # only power loss can drop the last commits, never corrupt the database.
            connection.execute("PRAGMA synchronous=NORMAL")
        else:
            _switch_journal(connection, "DELETE")
            connection.execute("PRAGMA synchronous=FULL")
        migrate(connection, path)
    except BaseException:
        connection.close()
        raise
    return connection


def _switch_journal(connection: sqlite3.Connection, mode: str) -> None:
    """`PRAGMA journal_mode=…` needs a moment alone with the file, and SQLite answers
    "database is locked" at once rather than through the busy handler when another
    connection is converting or writing just then (two kernels opening a new database
    together): retry within the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            connection.execute(f"PRAGMA journal_mode={mode}")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def refuse_newer(path: Path, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise SchemaTooNewError(
            f"{path} has schema version {version}, newer than this blitz_kernel reads ({SCHEMA_VERSION}); "
            "upgrade blitz_kernel. The database was left untouched."
        )


def migrate(connection: sqlite3.Connection, path: Path) -> None:
    """Apply the missing migrations, each in its own transaction. The version is read again
    inside the transaction: another kernel may have migrated meanwhile."""
    while True:
        connection.execute("BEGIN IMMEDIATE")
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            refuse_newer(path, version)
            if version == SCHEMA_VERSION:
                connection.execute("COMMIT")
                return
            for statement in _statements(MIGRATIONS[version]):
                connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {version + 1}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise


def _statements(script: str) -> list[str]:
    """executescript would commit the open transaction; split the script instead."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]
