"""The PostgreSQL store's multi-statement writes, queued on the caller's transaction
(transaction.py), and its search, run on the connection."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from ....core.history import Message
from ....core.usage import UsageLedger
from ...safety.audit import AuditRecord
from ..protocol import HIGHLIGHT
from ..records import SpanLink, StoredHit, role_and_text
from ..sqlite import reads
from ..sqlite.reads import Live
from .schema import SEARCH_CONFIG
from .transaction import Transaction

HEADLINE = f"StartSel={HIGHLIGHT[0]}, StopSel={HIGHLIGHT[1]}, MaxWords=24, MinWords=12"


class Sql:
    """The connection as the shared readers (sqlite/reads.py) use it: `?` placeholders."""

    def __init__(self, connection: psycopg.Connection | Transaction) -> None:
        self.connection = connection

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.connection.execute(sql.replace("?", "%s").encode(), parameters)


def insert(db: Transaction, sql: str, parameters: Sequence[Any]) -> int:
    row = db.execute(sql + " RETURNING id", parameters).fetchone()
    assert row is not None
    return int(row[0])


def insert_audit(db: Transaction, session_id: int, records: Sequence[AuditRecord]) -> None:
    if records:
        db.executemany(
            "INSERT INTO audit (session_id, turn, time, tool, record) VALUES (%s, %s, %s, %s, %s)",
            [(session_id, r.turn, r.time.timestamp(), r.tool, r.model_dump_json()) for r in records],
        )


def insert_span(db: Transaction, session_id: int, link: SpanLink) -> None:
    db.execute(
        "INSERT INTO trace_links (session_id, trace_id, span_id, trace_flags) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (session_id) DO UPDATE SET trace_id = excluded.trace_id, span_id = excluded.span_id, "
        "trace_flags = excluded.trace_flags",
        (session_id, link.trace_id, link.span_id, link.trace_flags),
    )


def close_interrupted(db: Transaction, session_id: int, open_turn: int, turns: int, now: float) -> None:
    db.execute(
        "INSERT INTO turns (session_id, turn, started) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        (session_id, open_turn, now),
    )
    db.execute(
        "UPDATE turns SET ended = %s, stop_reason = 'interrupted', error = %s WHERE session_id = %s AND turn = %s",
        (now, "the kernel stopped during this turn; its committed messages were kept", session_id, open_turn),
    )
    db.execute(
        "UPDATE sessions SET open_turn = NULL, turns = %s WHERE id = %s", (max(turns, open_turn + 1), session_id)
    )


def transcribe(
    db: Transaction,
    session_id: int,
    event_id: int,
    first: int,
    turn: int,
    now: float,
    messages: Sequence[Message],
) -> None:
    rows = []
    for offset, message in enumerate(messages):
        role, text = role_and_text(message)
        rows.append((session_id, event_id, first + offset, turn, now, role, text.replace("\x00", "")))
    db.executemany(
        "INSERT INTO transcript (session_id, event_id, message, turn, time, role, text) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s)",
        rows,
    )


def save_usage(db: Transaction, session_id: int, ledger: UsageLedger, live: Live) -> None:
    """The ledger, per model and total; skipped when nothing changed since the last write."""
    dumped = ledger.model_dump_json()
    if dumped == live.usage_json:
        return
    totals_rows = [("", ledger.total), *ledger.by_model.items()]
    db.executemany(
        "INSERT INTO usage (session_id, model, totals) VALUES (%s, %s, %s) "
        "ON CONFLICT (session_id, model) DO UPDATE SET totals = excluded.totals",
        [(session_id, model, totals.model_dump_json()) for model, totals in totals_rows],
    )
    db.execute("UPDATE sessions SET last_prompt_tokens = %s WHERE id = %s", (ledger.last_prompt_tokens, session_id))
    live.usage_json = dumped


def copy_rows(db: Transaction, source_id: int, target: str, target_kind: str) -> None:
    """Every row of a session or snapshot under a new name (same owner and workspace). Event
    ids move by one offset, so a summary still names the rows it covers: the events table is
    locked against other writers for the copy, and its id sequence moved past the copies."""
    now = time.time()
    target_id = insert(
        db,
        "INSERT INTO sessions (owner, workspace, name, kind, created, last_used, turns, messages, first_live, "
        "live_summary, last_prompt_tokens, todos, budget, source) SELECT owner, workspace, %s, %s, %s, %s, turns, "
        "messages, first_live, live_summary, last_prompt_tokens, todos, budget, name FROM sessions WHERE id = %s",
        (target, target_kind, now, now, source_id),
    )
    db.execute("LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE")
    low, high = db.execute("SELECT min(id), max(id) FROM events WHERE session_id = %s", (source_id,)).fetchone() or (
        None,
        None,
    )
    if low is not None:
        top = db.execute("SELECT max(id) FROM events").fetchone()
        offset = int(top[0] if top else 0) + 1 - int(low)
        db.execute(
            "INSERT INTO events (id, session_id, turn, time, kind, messages, first_message, body, covers_from, "
            "covers_to, covered, variables) SELECT id + %s, %s, turn, time, kind, messages, first_message, body, "
            "covers_from + %s, covers_to + %s, covered, variables FROM events WHERE session_id = %s ORDER BY id",
            (offset, target_id, offset, offset, source_id),
        )
        db.execute("SELECT setval(pg_get_serial_sequence('events', 'id'), %s)", (int(high) + offset,))
        db.execute(
            "INSERT INTO transcript (session_id, event_id, message, turn, time, role, text) "
            "SELECT %s, event_id + %s, message, turn, time, role, text FROM transcript WHERE session_id = %s "
            "ORDER BY id",
            (target_id, offset, source_id),
        )
    db.execute(
        "INSERT INTO turns (session_id, turn, started, ended, stop_reason, error, usage) "
        "SELECT %s, turn, started, ended, stop_reason, error, usage FROM turns WHERE session_id = %s",
        (target_id, source_id),
    )
    db.execute(
        "INSERT INTO usage (session_id, model, totals) SELECT %s, model, totals FROM usage WHERE session_id = %s",
        (target_id, source_id),
    )
    db.execute(
        "INSERT INTO trace_links (session_id, trace_id, span_id, trace_flags) "
        "SELECT %s, trace_id, span_id, trace_flags FROM trace_links WHERE session_id = %s",
        (target_id, source_id),
    )


def ts_query(text: str) -> str | None:
    """The user's words as a tsquery: each word a prefix, all required, nothing else (a
    word is letters, digits and `_`, so no quote or operator can get in). None: no word."""
    words = re.findall(r"\w+", text.lower())
    if not words:
        return None
    return " & ".join(f"'{word}':*" for word in words)


def search(
    db: psycopg.Connection, owner: str, workspace: str, text: str, session: str | None, limit: int
) -> list[StoredHit]:
    """Ranked passages (ts_rank_cd: cover density, divided by length, so the densest first) with highlights
    (ts_headline), of this owner's sessions in this workspace; snapshots are not searched. As
    in the SQLite store, only the newest CANDIDATES matches are ranked: a word in nearly every
    message would otherwise have every one of them ranked on each keystroke."""
    query = ts_query(text)
    if query is None:
        return []
    rows = db.execute(
        f"""
        WITH q AS (SELECT to_tsquery('{SEARCH_CONFIG}', %s) AS q),
        recent AS (
            SELECT t.id FROM transcript t JOIN sessions s ON s.id = t.session_id, q
            WHERE t.words @@ q.q AND s.kind = 'session' AND s.owner = %s AND s.workspace = %s
              AND (%s::text IS NULL OR s.name = %s)
            ORDER BY t.id DESC LIMIT %s
        ),
        best AS (
            SELECT t.id, s.name, t.message, t.turn, t.role, t.time, t.text, s.first_live, s.live_summary,
                   t.session_id, t.event_id, ts_rank_cd(t.words, q.q, 2) AS rank
            FROM recent r JOIN transcript t ON t.id = r.id JOIN sessions s ON s.id = t.session_id, q
            ORDER BY rank DESC, t.id LIMIT %s
        )
        SELECT b.name, b.message, b.turn, b.role, b.time,
               ts_headline('{SEARCH_CONFIG}', b.text, q.q, %s),
               b.first_live, b.live_summary, b.session_id, b.event_id
        FROM best b, q ORDER BY b.rank DESC, b.id
        """.encode(),
        (query, owner, workspace, session, session, reads.CANDIDATES, limit, HEADLINE),
        prepare=False,  # planned for these words: a generic plan cannot tell a common word from a rare one
    ).fetchall()
    rewinds: dict[int, list[tuple[int, int]]] = {}
    for session_id in {row[8] for row in rows}:
        rewinds[session_id] = [
            (int(low), int(high))
            for low, high in db.execute(
                "SELECT covers_from, covers_to FROM events WHERE session_id = %s AND kind = 'rewind'", (session_id,)
            ).fetchall()
            if low is not None and high is not None
        ]
    return [
        StoredHit(
            session=name,
            message=message,
            turn=turn,
            role=role,
            time=when,
            excerpt=excerpt,
            compacted=message != live_summary if role == "summary" else message < first_live,
            rewound=any(low <= event_id <= high for low, high in rewinds.get(session_id, ())),
        )
        for name, message, turn, role, when, excerpt, first_live, live_summary, session_id, event_id in rows
    ]
