"""The SQLite store's multi-statement writes, run inside the caller's transaction."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from ....core.history import Message
from ....core.usage import UsageLedger
from ...safety.audit import AuditRecord
from ..records import SpanLink, TurnOutcome, role_and_text
from . import reads


def insert(db: sqlite3.Connection, sql: str, parameters: tuple[Any, ...]) -> int:
    row_id = db.execute(sql, parameters).lastrowid
    assert row_id is not None
    return row_id


def insert_audit(db: sqlite3.Connection, session_id: int, records: Sequence[AuditRecord]) -> None:
    if records:
        db.executemany(
            "INSERT INTO audit (session_id, turn, time, tool, record) VALUES (?, ?, ?, ?, ?)",
            [(session_id, r.turn, r.time.timestamp(), r.tool, r.model_dump_json()) for r in records],
        )


def insert_span(db: sqlite3.Connection, session_id: int, link: SpanLink) -> None:
    db.execute(
        "INSERT OR REPLACE INTO trace_links (session_id, trace_id, span_id, trace_flags) VALUES (?, ?, ?, ?)",
        (session_id, link.trace_id, link.span_id, link.trace_flags),
    )


def close_interrupted(db: sqlite3.Connection, session_id: int, open_turn: int, turns: int, now: float) -> TurnOutcome:
    """The turn a dead process left open, closed as `interrupted`; its outcome."""
    db.execute(
        "INSERT OR IGNORE INTO turns (session_id, turn, started) VALUES (?, ?, ?)",
        (session_id, open_turn, now),
    )
    db.execute(
        "UPDATE turns SET ended = ?, stop_reason = 'interrupted', error = ? WHERE session_id = ? AND turn = ?",
        (
            now,
            "the kernel stopped during this turn; its committed messages were kept",
            session_id,
            open_turn,
        ),
    )
    db.execute(
        "UPDATE sessions SET open_turn = NULL, turns = ? WHERE id = ?",
        (max(turns, open_turn + 1), session_id),
    )
    return reads.outcome(db, session_id, open_turn)


def copy_rows(db: sqlite3.Connection, source_id: int, target: str, target_kind: str) -> None:
    """Every row of a session or snapshot copied under a new name (inside the caller's
    transaction). Event ids move by one offset, so a summary still names the rows it covers."""
    now = time.time()
    target_id = insert(
        db,
        "INSERT INTO sessions (name, kind, created, last_used, turns, messages, first_live, live_summary, "
        "last_prompt_tokens, todos, source) SELECT ?, ?, ?, ?, turns, messages, first_live, live_summary, "
        "last_prompt_tokens, todos, name FROM sessions WHERE id = ?",
        (target, target_kind, now, now, source_id),
    )
    low = db.execute("SELECT min(id) FROM events WHERE session_id = ?", (source_id,)).fetchone()[0]
    top = db.execute("SELECT max(id) FROM events").fetchone()[0] or 0
    offset = top + 1 - (low or 0)
    db.execute(
        "INSERT INTO events (id, session_id, turn, time, kind, messages, first_message, body, covers_from, "
        "covers_to, covered, variables) SELECT id + ?, ?, turn, time, kind, messages, first_message, body, "
        "covers_from + ?, covers_to + ?, covered, variables FROM events WHERE session_id = ? ORDER BY id",
        (offset, target_id, offset, offset, source_id),
    )
    db.execute(
        "INSERT INTO transcript (session_id, event_id, message, turn, time, role, text) "
        "SELECT ?, event_id + ?, message, turn, time, role, text FROM transcript WHERE session_id = ? ORDER BY id",
        (target_id, offset, source_id),
    )
    # A session's copied rows are indexed by the next index_transcript; a snapshot's never are.
    for table, columns in (
        ("turns", "turn, started, ended, stop_reason, error, usage"),
        ("usage", "model, totals"),
        ("trace_links", "trace_id, span_id, trace_flags"),
    ):
        db.execute(
            f"INSERT INTO {table} (session_id, {columns}) SELECT ?, {columns} FROM {table} WHERE session_id = ?",  # noqa: S608
            (target_id, source_id),
        )


def transcribe(
    db: sqlite3.Connection,
    session_id: int,
    event_id: int,
    first: int,
    turn: int,
    now: float,
    messages: Sequence[Message],
) -> None:
    db.executemany(
        "INSERT INTO transcript (session_id, event_id, message, turn, time, role, text) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (session_id, event_id, first + offset, turn, now, *role_and_text(message))
            for offset, message in enumerate(messages)
        ],
    )


INDEX_BATCH_ROWS = 256
"""A turn's end adds the transcript rows to the search index once this many wait (a search
first adds whatever waits, so it always sees every row)."""


def index_transcript(db: sqlite3.Connection, *, at_least: int = 1) -> None:
    """Add the sessions' transcript rows written since the last call to the search index, in
    one statement (inside the caller's write transaction), when `at_least` rows wait. FTS5
    writes a segment per transaction that touches it and merges its segments as they pile
    up, rewriting the long lists of the common words each time: adding a few hundred rows at
    once instead of one turn's few costs a fraction of it (and stays flat in a long session).
    Snapshots' rows are skipped (never searched); `fts_indexed` moves past them all the same."""
    mark = db.execute("SELECT value FROM meta WHERE key = 'fts_indexed'").fetchone()
    top = db.execute("SELECT coalesce(max(id), 0) FROM transcript").fetchone()[0]
    done = int(mark[0]) if mark else 0
    if top != done and (top < done or top - done >= at_least):
        if top > done:
            db.execute(
                "INSERT INTO transcript_fts (rowid, text) SELECT t.id, t.text FROM transcript t "
                "JOIN sessions s ON s.id = t.session_id AND s.kind = 'session' WHERE t.id > ? ORDER BY t.id",
                (done,),
            )
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('fts_indexed', ?)", (str(top),))


def index_is_current(db: sqlite3.Connection) -> bool:
    """True when index_transcript has nothing to do (a read, no write lock)."""
    mark = db.execute("SELECT value FROM meta WHERE key = 'fts_indexed'").fetchone()
    top = db.execute("SELECT coalesce(max(id), 0) FROM transcript").fetchone()[0]
    return (int(mark[0]) if mark else 0) == top


def save_usage(
    db: sqlite3.Connection, session_id: int, ledger: UsageLedger, live: reads.Live, *, prompt_tokens: bool = True
) -> None:
    """The ledger, per model and total; skipped when nothing changed since the last write.
    `prompt_tokens` False: the caller's own update of the session row sets
    `last_prompt_tokens`."""
    dumped = ledger.model_dump_json()
    if dumped == live.usage_json:
        return
    totals_rows = [("", ledger.total), *ledger.by_model.items()]
    db.executemany(
        "INSERT INTO usage (session_id, model, totals) VALUES (?, ?, ?) "
        "ON CONFLICT (session_id, model) DO UPDATE SET totals = excluded.totals",
        [(session_id, model, totals.model_dump_json()) for model, totals in totals_rows],
    )
    if prompt_tokens:
        db.execute("UPDATE sessions SET last_prompt_tokens = ? WHERE id = ?", (ledger.last_prompt_tokens, session_id))
    live.usage_json = dumped


def delete_rows(db: sqlite3.Connection, session_id: int, kind: str) -> None:
    """Every row of the session, its search index entries first (the index brought up to date
    before, so every row of it is there to remove; the mark set to what is left after)."""
    index_transcript(db)
    if kind == "session":
        db.execute(
            "INSERT INTO transcript_fts (transcript_fts, rowid, text) "
            "SELECT 'delete', id, text FROM transcript WHERE session_id = ?",
            (session_id,),
        )
    for table in ("transcript", "events", "turns", "usage", "trace_links", "checkpoints"):
        db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))  # noqa: S608 - fixed names
    db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    index_transcript(db)  # the top rows may have gone: new ones must not hide below the mark
