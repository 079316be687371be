"""The durable session store: one SQLite database per workspace, `.blitz/blitz.db` (WS-02).

Each session is stored twice:
- the **event log**, what the model sees: one row per committed history unit (a prompt, an
  answer, a response with all its results, a summary), appended in one transaction each, so the
  history on disk is valid at every moment. Compaction appends a summary row naming the rows it
  covers; no row is ever deleted or rewritten. Loading replays the rows.
- the **transcript**, what search reads: every message's text in full, compacted parts
  included, indexed with FTS5.

Also per session: turn outcomes (with a "turn open" marker, so a turn that was running when its
process died is reported `interrupted`), the usage ledger per model, and the previous turn's span
context (ENG-91 links survive a restart). Snapshots are frozen copies of a session's rows.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...core.history import HISTORY_ADAPTER, Message, SummaryMessage
from ...core.usage import UsageLedger, UsageTotals
from ..safety.audit import AuditRecord
from .records import (
    SessionInfo,
    SpanLink,
    StoredHit,
    StoredSession,
    TurnOutcome,
    cut,
    cut_tail,
    fts_query,
    replay,
    role_and_text,
    turn_starts,
)
from .schema import SCHEMA_VERSION, SchemaTooNewError, StoreError, connect

__all__ = [
    "SCHEMA_VERSION",
    "SchemaTooNewError",
    "SessionInfo",
    "SpanLink",
    "Store",
    "StoreError",
    "StoredHit",
    "StoredSession",
    "TurnOutcome",
    "role_and_text",
]

DB_NAME = "blitz.db"
SEARCH_LIMIT = 20
SNIPPET_TOKENS = 24
HIGHLIGHT = ("«", "»")


@dataclass
class _Live:
    """Per-session bookkeeping for appends: the next message number and the event rows whose
    messages are in the live history now ([event id, first message number, count])."""

    next_message: int
    rows: list[list[int]] = field(default_factory=list)
    usage_json: str = ""


class Store:
    """One workspace's database. Thread-safe; a process opens one per workspace."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = connect(path)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the session store {path}: {exc}") from exc
        self._lock = threading.RLock()
        self._live: dict[int, _Live] = {}

    @classmethod
    def for_workspace(cls, root: Path) -> Store:
        return cls(root / ".blitz" / DB_NAME)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction: all of it reaches the disk, or none of it."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"cannot write to the session store {self.path}: {exc}") from exc
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise StoreError(f"cannot write to the session store {self.path}: {exc}") from exc
                raise

    # -- sessions ---------------------------------------------------------------------------

    def open_session(self, name: str, holder: str | None = None) -> StoredSession:
        """Load the session, creating it empty if new. A turn left open by a dead process is
        closed as `interrupted` (the caller holds the session's lock, so nobody runs it)."""
        now = time.time()
        interrupted = None
        with self._write() as db:
            db.execute(
                "INSERT OR IGNORE INTO sessions (name, kind, created, last_used) VALUES (?, 'session', ?, ?)",
                (name, now, now),
            )
            session_id, open_turn, turns = db.execute(
                "SELECT id, open_turn, turns FROM sessions WHERE kind = 'session' AND name = ?", (name,)
            ).fetchone()
            if open_turn is not None:
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
                interrupted = self._outcome(db, session_id, open_turn)
            db.execute("UPDATE sessions SET holder = ? WHERE id = ?", (holder, session_id))
        loaded = self._load(session_id, name)
        loaded.interrupted = interrupted
        return loaded

    def _load(self, session_id: int, name: str) -> StoredSession:
        with self._lock:
            db = self._db
            rows = db.execute(
                "SELECT id, kind, messages, first_message, covered, variables, body FROM events WHERE session_id = ? ORDER BY id",
                (session_id,),
            ).fetchall()
            turns, todos, next_message, last_prompt = db.execute(
                "SELECT turns, todos, messages, last_prompt_tokens FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            usage = db.execute("SELECT model, totals FROM usage WHERE session_id = ?", (session_id,)).fetchall()
            span = db.execute(
                "SELECT trace_id, span_id, trace_flags FROM trace_links WHERE session_id = ?", (session_id,)
            ).fetchone()
            audit = db.execute("SELECT record FROM audit WHERE session_id = ? ORDER BY id", (session_id,)).fetchall()
            (budget,) = db.execute("SELECT budget FROM sessions WHERE id = ?", (session_id,)).fetchone()
            checkpoints = db.execute(
                "SELECT turn, record FROM checkpoints WHERE session_id = ? ORDER BY id", (session_id,)
            ).fetchall()
            committed, starts = turn_starts(
                db.execute(
                    "SELECT turn, kind, messages, covered FROM events WHERE session_id = ? ORDER BY id", (session_id,)
                ).fetchall()
            )
        # One parse for the whole log: each body is a JSON array, so their insides join into one.
        joined = "[" + ",".join(body[1:-1] for *_, body in rows if len(body) > 2) + "]"
        messages = HISTORY_ADAPTER.validate_json(joined)
        history, archive, live = replay(rows, messages)
        ledger = UsageLedger(last_prompt_tokens=last_prompt)
        for model, totals in usage:
            if model:
                ledger.by_model[model] = UsageTotals.model_validate_json(totals)
            else:
                ledger.total = UsageTotals.model_validate_json(totals)
        self._live[session_id] = _Live(next_message=next_message, rows=live, usage_json=_usage_json(ledger))
        return StoredSession(
            id=session_id,
            name=name,
            history=history,
            archive=archive,
            turns=turns,
            ledger=ledger,
            todos=_json_list(todos),
            last_span=SpanLink(trace_id=span[0], span_id=span[1], trace_flags=span[2]) if span else None,
            variables=sorted({name for *_, names, _body in rows if names for name in names.split()}),
            audit=[AuditRecord.model_validate_json(record) for (record,) in audit],
            checkpoints=[(turn, record) for turn, record in checkpoints],
            committed=committed,
            turn_starts=starts,
            **_budget_fields(budget),
        )

    def sessions(self) -> list[SessionInfo]:
        with self._lock:
            rows = self._db.execute(
                "SELECT s.name, s.created, s.last_used, s.turns, u.totals FROM sessions s "
                "LEFT JOIN usage u ON u.session_id = s.id AND u.model = '' WHERE s.kind = 'session' ORDER BY s.name"
            ).fetchall()
        return [
            SessionInfo(
                name=name,
                created=created,
                last_used=last_used,
                turns=turns,
                usage=UsageTotals.model_validate_json(totals) if totals else UsageTotals(),
            )
            for name, created, last_used, turns, totals in rows
        ]

    def exists(self, name: str, kind: str = "session") -> bool:
        with self._lock:
            return self._id(name, kind) is not None

    def _id(self, name: str, kind: str = "session") -> int | None:
        row = self._db.execute("SELECT id FROM sessions WHERE kind = ? AND name = ?", (kind, name)).fetchone()
        return row[0] if row else None

    def delete(self, name: str, kind: str = "session") -> bool:
        """Remove the session and all its rows; False when there was none."""
        with self._write() as db:
            session_id = self._id(name, kind)
            if session_id is None:
                return False
            if kind == "session":
                db.execute(
                    "INSERT INTO transcript_fts (transcript_fts, rowid, text) "
                    "SELECT 'delete', id, text FROM transcript WHERE session_id = ?",
                    (session_id,),
                )
            for table in ("transcript", "events", "turns", "usage", "trace_links", "checkpoints"):
                db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))  # noqa: S608 - fixed names
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        self._live.pop(session_id, None)
        return True

    def release(self, session_id: int) -> None:
        """The kernel let the session go: forget its bookkeeping and clear its holder."""
        with self._write() as db:
            db.execute("UPDATE sessions SET holder = NULL WHERE id = ?", (session_id,))
        self._live.pop(session_id, None)

    # -- appends ----------------------------------------------------------------------------

    def append(
        self,
        session_id: int,
        messages: Sequence[Message],
        turn: int,
        *,
        variables: Sequence[str] = (),
        ledger: UsageLedger | None = None,
    ) -> int:
        """One committed unit, in one transaction; marks the turn open. Returns the row id."""
        live = self._live[session_id]
        now = time.time()
        body = HISTORY_ADAPTER.dump_json(list(messages)).decode()
        first = live.next_message
        with self._write() as db:
            event_id = _insert(
                db,
                "INSERT INTO events (session_id, turn, time, kind, messages, first_message, body, variables) "
                "VALUES (?, ?, ?, 'unit', ?, ?, ?, ?)",
                (session_id, turn, now, len(messages), first, body, " ".join(variables) or None),
            )
            self._transcribe(db, session_id, event_id, first, turn, now, messages)
            db.execute(
                "INSERT OR IGNORE INTO turns (session_id, turn, started) VALUES (?, ?, ?)", (session_id, turn, now)
            )
            db.execute(
                "UPDATE sessions SET last_used = ?, messages = ?, open_turn = ? WHERE id = ?",
                (now, first + len(messages), turn, session_id),
            )
            if ledger is not None:
                self._save_usage(db, session_id, ledger, live)
        live.next_message = first + len(messages)
        live.rows.append([event_id, first, len(messages)])
        return event_id

    def append_summary(self, session_id: int, summary: SummaryMessage, covered: int, turn: int) -> int:
        """Compaction replaced the first `covered` live messages with `summary`: a row naming
        the rows it stands for. Nothing is deleted; the transcript keeps every message."""
        live = self._live[session_id]
        now = time.time()
        rows, covered_ids = cut(live.rows, covered)
        number = live.next_message
        first_live = rows[0][1] if rows else number + 1
        with self._write() as db:
            event_id = _insert(
                db,
                "INSERT INTO events (session_id, turn, time, kind, messages, first_message, body, covers_from, "
                "covers_to, covered) VALUES (?, ?, ?, 'summary', 1, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    turn,
                    now,
                    number,
                    HISTORY_ADAPTER.dump_json([summary]).decode(),
                    covered_ids[0] if covered_ids else None,
                    covered_ids[-1] if covered_ids else None,
                    covered,
                ),
            )
            self._transcribe(db, session_id, event_id, number, turn, now, [summary])
            db.execute(
                "UPDATE sessions SET last_used = ?, messages = ?, first_live = ?, live_summary = ? WHERE id = ?",
                (now, number + 1, first_live, number, session_id),
            )
        live.next_message = number + 1
        live.rows = [[event_id, number, 1], *rows]
        return event_id

    @staticmethod
    def _transcribe(
        db: sqlite3.Connection,
        session_id: int,
        event_id: int,
        first: int,
        turn: int,
        now: float,
        messages: Sequence[Message],
    ) -> None:
        for offset, message in enumerate(messages):
            role, text = role_and_text(message)
            row_id = _insert(
                db,
                "INSERT INTO transcript (session_id, event_id, message, turn, time, role, text) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (session_id, event_id, first + offset, turn, now, role, text),
            )
            db.execute("INSERT INTO transcript_fts (rowid, text) VALUES (?, ?)", (row_id, text))

    def end_turn(
        self,
        session_id: int,
        turn: int,
        stop_reason: str,
        error: str | None,
        *,
        ledger: UsageLedger,
        todos: list[dict[str, str]],
    ) -> None:
        """The turn's outcome; the turn is no longer open."""
        now = time.time()
        live = self._live[session_id]
        with self._write() as db:
            db.execute(
                "INSERT INTO turns (session_id, turn, started, ended, stop_reason, error) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id, turn) DO UPDATE SET ended = excluded.ended, "
                "stop_reason = excluded.stop_reason, error = excluded.error",
                (session_id, turn, now, now, stop_reason, error),
            )
            db.execute(
                "UPDATE sessions SET turns = ?, open_turn = NULL, last_used = ?, todos = ? WHERE id = ?",
                (turn + 1, now, _json_dump(todos), session_id),
            )
            self._save_usage(db, session_id, ledger, live)

    def save_usage(self, session_id: int, ledger: UsageLedger) -> None:
        live = self._live[session_id]
        with self._write() as db:
            self._save_usage(db, session_id, ledger, live)

    @staticmethod
    def _save_usage(db: sqlite3.Connection, session_id: int, ledger: UsageLedger, live: _Live) -> None:
        """The ledger, per model and total; skipped when nothing changed since the last write."""
        dumped = _usage_json(ledger)
        if dumped == live.usage_json:
            return
        rows = [("", ledger.total), *ledger.by_model.items()]
        db.executemany(
            "INSERT OR REPLACE INTO usage (session_id, model, totals) VALUES (?, ?, ?)",
            [(session_id, model, totals.model_dump_json()) for model, totals in rows],
        )
        db.execute("UPDATE sessions SET last_prompt_tokens = ? WHERE id = ?", (ledger.last_prompt_tokens, session_id))
        live.usage_json = dumped

    def append_audit(self, session_id: int, record: AuditRecord) -> None:
        """WS-07: one tool call's audit record."""
        with self._write() as db:
            db.execute(
                "INSERT INTO audit (session_id, turn, time, tool, record) VALUES (?, ?, ?, ?, ?)",
                (session_id, record.turn, record.time.timestamp(), record.tool, record.model_dump_json()),
            )

    def append_checkpoint(self, session_id: int, turn: int, kind: str, record: str) -> None:
        """WS-03: one change a turn made (or an `undone` marker), as it happens."""
        with self._write() as db:
            db.execute(
                "INSERT INTO checkpoints (session_id, turn, time, kind, record) VALUES (?, ?, ?, ?, ?)",
                (session_id, turn, time.time(), kind, record),
            )

    def append_rewind(self, session_id: int, covered: int, turn: int) -> int:
        """An undo took the last `covered` live messages out of the history: a row saying so
        (replay honours it). Nothing is deleted; the transcript keeps them, marked rewound by
        the range of rows this one names."""
        live = self._live[session_id]
        rows, removed = cut_tail(live.rows, covered)
        now = time.time()
        with self._write() as db:
            event_id = _insert(
                db,
                "INSERT INTO events (session_id, turn, time, kind, messages, first_message, body, covers_from, "
                "covers_to, covered) VALUES (?, ?, ?, 'rewind', 0, ?, '[]', ?, ?, ?)",
                (
                    session_id,
                    turn,
                    now,
                    live.next_message,
                    min(removed, default=None),
                    max(removed, default=None),
                    covered,
                ),
            )
            db.execute("UPDATE sessions SET last_used = ? WHERE id = ?", (now, session_id))
        live.rows = rows
        return event_id

    def save_budget(self, session_id: int, added_usd: float, tripped: bool) -> None:
        """GR-05: the session budget's state, so a trip outlives the kernel."""
        with self._write() as db:
            db.execute(
                "UPDATE sessions SET budget = ? WHERE id = ?",
                (json.dumps({"budget_added_usd": added_usd, "budget_tripped": tripped}), session_id),
            )

    def save_span(self, session_id: int, link: SpanLink) -> None:
        with self._write() as db:
            db.execute(
                "INSERT OR REPLACE INTO trace_links (session_id, trace_id, span_id, trace_flags) VALUES (?, ?, ?, ?)",
                (session_id, link.trace_id, link.span_id, link.trace_flags),
            )

    def outcomes(self, name: str) -> list[TurnOutcome]:
        with self._lock:
            session_id = self._id(name)
            if session_id is None:
                return []
            rows = self._db.execute(
                "SELECT turn FROM turns WHERE session_id = ? ORDER BY turn", (session_id,)
            ).fetchall()
            return [self._outcome(self._db, session_id, turn) for (turn,) in rows]

    @staticmethod
    def _outcome(db: sqlite3.Connection, session_id: int, turn: int) -> TurnOutcome:
        started, ended, stop, error = db.execute(
            "SELECT started, ended, stop_reason, error FROM turns WHERE session_id = ? AND turn = ?", (session_id, turn)
        ).fetchone()
        return TurnOutcome(turn=turn, started=started, ended=ended, stop_reason=stop, error=error)

    # -- snapshots ----------------------------------------------------------------------------

    def snapshot_names(self) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT name FROM sessions WHERE kind = 'snapshot' ORDER BY name").fetchall()
        return [name for (name,) in rows]

    def copy(self, source: str, source_kind: str, target: str, target_kind: str) -> None:
        """A snapshot of a session, or a new session from a snapshot: every row copied, in one
        transaction. Event ids move by one offset, so a summary still names the rows it covers."""
        with self._write() as db:
            source_id = self._id(source, source_kind)
            if source_id is None:
                raise StoreError(f"no {source_kind} {source!r}")
            now = time.time()
            target_id = _insert(
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
            if target_kind == "session":  # snapshots are not searched: no index for them
                db.execute(
                    "INSERT INTO transcript_fts (rowid, text) SELECT id, text FROM transcript WHERE session_id = ?",
                    (target_id,),
                )
            for table, columns in (
                ("turns", "turn, started, ended, stop_reason, error"),
                ("usage", "model, totals"),
                ("trace_links", "trace_id, span_id, trace_flags"),
            ):
                db.execute(
                    f"INSERT INTO {table} (session_id, {columns}) SELECT ?, {columns} FROM {table} WHERE session_id = ?",  # noqa: S608
                    (target_id, source_id),
                )

    # -- search -----------------------------------------------------------------------------

    def search(self, text: str, session: str | None = None, limit: int = SEARCH_LIMIT) -> list[StoredHit]:
        """Ranked passages (FTS5 bm25) of the sessions' transcripts, compacted parts included.
        Every word of `text` must occur (as a word or a word's beginning)."""
        query = fts_query(text)
        if query is None:
            return []
        where, parameters = "transcript_fts MATCH ? AND s.kind = 'session'", [query]
        if session is not None:
            where += " AND s.name = ?"
            parameters.append(session)
        with self._lock:
            rows = self._db.execute(
                "SELECT s.name, t.message, t.turn, t.role, t.time, "
                f"snippet(transcript_fts, 0, '{HIGHLIGHT[0]}', '{HIGHLIGHT[1]}', '…', {SNIPPET_TOKENS}), "
                "s.first_live, s.live_summary, EXISTS (SELECT 1 FROM events r WHERE r.session_id = t.session_id "
                "AND r.kind = 'rewind' AND t.event_id BETWEEN r.covers_from AND r.covers_to) FROM transcript_fts JOIN transcript t ON t.id = transcript_fts.rowid "
                f"JOIN sessions s ON s.id = t.session_id WHERE {where} ORDER BY rank LIMIT ?",  # noqa: S608
                (*parameters, limit),
            ).fetchall()
        return [
            StoredHit(
                session=name,
                message=message,
                turn=turn,
                role=role,
                time=when,
                excerpt=excerpt,
                compacted=message != live_summary if role == "summary" else message < first_live,
                rewound=bool(rewound),
            )
            for name, message, turn, role, when, excerpt, first_live, live_summary, rewound in rows
        ]


def _budget_fields(text: str) -> dict[str, Any]:
    stored = json.loads(text or "{}")
    return {
        "budget_added_usd": float(stored.get("budget_added_usd", 0.0)),
        "budget_tripped": bool(stored.get("budget_tripped", False)),
    }


def _insert(db: sqlite3.Connection, sql: str, parameters: tuple[Any, ...]) -> int:
    row_id = db.execute(sql, parameters).lastrowid
    assert row_id is not None
    return row_id


def _usage_json(ledger: UsageLedger) -> str:
    return ledger.model_dump_json()


def _json_dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _json_list(text: str) -> list[dict[str, str]]:
    value = json.loads(text or "[]")
    return value if isinstance(value, list) else []
