"""The SQLite backend of the session store (protocol.SessionStore): one database file, by
default `<workspace>/.blitz/blitz.db` (docs/store.md).

Each session is stored twice:
- the **event log**, what the model sees: one row per committed history unit (a prompt, an
  answer, a response with all its results, a summary), appended in one transaction each, so the
  history on disk is valid at every moment. The unit's audit rows and the usage so far go in
  the same transaction; the turn's outcome and its span link in one more. Compaction appends a
  summary row naming the rows it covers; no row is ever deleted or rewritten. Loading replays
  the rows (reads.py).
- the **transcript**, what search reads: every message's text in full, compacted parts
  included, indexed with FTS5. A unit's transcript rows are written with it; they join the
  index at the turn's end (one FTS5 segment a turn, not one a unit) or before a search.

Also per session: turn outcomes (with a "turn open" marker, so a turn that was running when its
process died is reported `interrupted`), the usage ledger per model, and the previous turn's span
context (the link between turns survives a restart). Snapshots are frozen copies of a session's
rows. Every public method translates SQLite's errors into the store's own (edge.py).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ....core.history import Message, SummaryMessage
from ....core.todos import TodoItem
from ....core.usage import UsageLedger
from ...safety.audit import AuditRecord
from .. import event_log
from ..protocol import SEARCH_LIMIT, StoreError
from ..records import BetweenTurns, SessionInfo, SpanLink, StoredHit, StoredSession, TurnOutcome
from . import reads
from . import rows as writes
from .checkpointer import BACKSTOP_PAGES, Checkpointer
from .edge import edge, translate
from .schema import BUSY_TIMEOUT_S, connect
from .viewing import Viewing

DB_NAME = "blitz.db"
_EMPTY_USAGE = UsageLedger().model_dump_json()


class Store(Viewing):
    """One SQLite database. Thread-safe; a process opens one per store. `Store(path)` opens
    the file as it is (tests, benches); a kernel opens its store through `factory.open_store`,
    which checks the file and its identity first (opening.py)."""

    def __init__(
        self, path: Path, *, connection: sqlite3.Connection | None = None, location: str | None = None
    ) -> None:
        self.path = path
        self.location = location or str(path)
        if connection is None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                connection = connect(path)
            except StoreError:
                raise
            except (sqlite3.Error, OSError) as exc:
                raise translate(exc, self.location, "open") from exc
        self._db = connection
        self._lock = threading.RLock()
        self._live: dict[int, reads.Live] = {}
        self._checkpoints: Checkpointer | None = None
        """WAL mode: checkpoints on a thread of their own (checkpointer.py)."""
        with contextlib.suppress(sqlite3.Error):
            if connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                connection.execute(f"PRAGMA wal_autocheckpoint = {BACKSTOP_PAGES}")
                self._checkpoints = Checkpointer(path, BUSY_TIMEOUT_S)

    @classmethod
    def for_workspace(cls, root: Path) -> Store:
        return cls(root / ".blitz" / DB_NAME, location=f".blitz/{DB_NAME}")

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction: all of it reaches the disk, or none of it."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
                if self._checkpoints is not None:
                    self._checkpoints.committed()
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise

    # -- sessions ---------------------------------------------------------------------------

    @edge("open a session in")
    def open_session(self, name: str, holder: str | None = None) -> StoredSession:
        """Load the session, creating it empty if new (a fresh session is one small
        transaction and no reads). A turn left open by a dead process is closed as
        `interrupted` (the caller holds the session's lock, so nobody runs it)."""
        now = time.time()
        interrupted = None
        with self._write() as db:
            # a fresh session is the common case: try its row first (UNIQUE (kind, name) makes
            # the insert a no-op for one that exists), and read only when it was there
            created = db.execute(
                "INSERT OR IGNORE INTO sessions (name, kind, created, last_used, holder) VALUES (?, 'session', ?, ?, ?)",
                (name, now, now, holder),
            )
            if created.rowcount == 1 and created.lastrowid is not None:
                fresh = created.lastrowid
                self._live[fresh] = reads.Live(next_message=0, usage_json=_EMPTY_USAGE)
                return reads.empty_session(fresh, name)
            session_id, open_turn, turns = db.execute(
                "SELECT id, open_turn, turns FROM sessions WHERE kind = 'session' AND name = ?", (name,)
            ).fetchone()
            if open_turn is not None:
                interrupted = writes.close_interrupted(db, session_id, open_turn, turns, now)
            db.execute("UPDATE sessions SET holder = ? WHERE id = ?", (holder, session_id))
        with self._lock:
            loaded, self._live[session_id] = reads.load_session(self._db, self.location, session_id, name)
        loaded.interrupted = interrupted
        return loaded

    @edge("read")
    def sessions(self) -> list[SessionInfo]:
        with self._lock:
            return reads.list_sessions(self._db)

    @edge("read")
    def holder_record(self, name: str) -> str | None:
        """Who opened the session last, as its kernel wrote it: what a busy session's message
        names (the lock itself says only that it is held, docs/store.md)."""
        with self._lock:
            row = self._db.execute(
                "SELECT holder FROM sessions WHERE kind = 'session' AND name = ?", (name,)
            ).fetchone()
        return row[0] if row else None

    @edge("read")
    def exists(self, name: str, kind: str = "session") -> bool:
        with self._lock:
            return self._id(name, kind) is not None

    def _id(self, name: str, kind: str = "session") -> int | None:
        row = self._db.execute("SELECT id FROM sessions WHERE kind = ? AND name = ?", (kind, name)).fetchone()
        return row[0] if row else None

    @edge("write to")
    def delete(self, name: str, kind: str = "session") -> bool:
        """Remove the session and all its rows; False when there was none."""
        with self._write() as db:
            session_id = self._id(name, kind)
            if session_id is None:
                return False
            writes.delete_rows(db, session_id, kind)
        self._live.pop(session_id, None)
        return True

    @edge("write to")
    def release(self, session_id: int) -> None:
        """The kernel let the session go: forget its bookkeeping and clear its holder."""
        with self._write() as db:
            db.execute("UPDATE sessions SET holder = NULL WHERE id = ?", (session_id,))
        self._live.pop(session_id, None)

    # -- appends ----------------------------------------------------------------------------

    @edge("write to")
    def append(
        self,
        session_id: int,
        messages: Sequence[Message],
        turn: int,
        *,
        variables: Sequence[str] = (),
        ledger: UsageLedger | None = None,
        audit: Sequence[AuditRecord] = (),
    ) -> int:
        """One committed unit, with the audit rows of its calls and the usage so far, in one
        transaction; marks the turn open. Returns the row id."""
        live = self._live[session_id]
        with self._write() as db:
            now, unit = time.time(), self._unit_rows(db, live, session_id, messages, turn, variables)
            if ledger is None:
                db.execute(
                    "UPDATE sessions SET last_used = ?, messages = ?, open_turn = ? WHERE id = ?",
                    (now, unit.next_message, turn, session_id),
                )
            else:
                db.execute(
                    "UPDATE sessions SET last_used = ?, messages = ?, open_turn = ?, last_prompt_tokens = ? WHERE id = ?",
                    (now, unit.next_message, turn, ledger.last_prompt_tokens, session_id),
                )
                writes.save_usage(db, session_id, ledger, live, prompt_tokens=False)
            writes.insert_audit(db, session_id, audit)
        unit.apply(live, turn)
        return unit.event_id

    def _unit_rows(
        self,
        db: sqlite3.Connection,
        live: reads.Live,
        session_id: int,
        messages: Sequence[Message],
        turn: int,
        variables: Sequence[str],
    ) -> event_log.WrittenUnit:
        return event_log.unit_event(
            db,
            lambda sql, parameters: writes.insert(db, sql, tuple(parameters)),
            lambda event, first, at_turn, now, unit: writes.transcribe(
                db, session_id, event, first, at_turn, now, unit
            ),
            live,
            (session_id, turn, time.time()),
            messages,
            variables,
        )

    @edge("write to")
    def append_summary(self, session_id: int, summary: SummaryMessage, covered: int, turn: int) -> int:
        live = self._live[session_id]
        with self._write() as db:
            written = event_log.summary_event(
                db,
                lambda sql, parameters: writes.insert(db, sql, tuple(parameters)),
                lambda event, first, at_turn, now, messages: writes.transcribe(
                    db, session_id, event, first, at_turn, now, messages
                ),
                live.rows,
                live.next_message,
                (session_id, turn, time.time()),
                summary,
                covered,
            )
        live.next_message, live.rows = written.next_message, written.rows
        return written.event_id

    @edge("write to")
    def end_turn(
        self,
        session_id: int,
        turn: int,
        stop_reason: str,
        error: str | None,
        *,
        ledger: UsageLedger,
        todos: list[TodoItem],
        audit: Sequence[AuditRecord] = (),
        span: SpanLink | None = None,
        answer: Sequence[Message] = (),
        answer_variables: Sequence[str] = (),
    ) -> None:
        """The turn's outcome, its audit rows not yet written, its span link and its answer
        (`answer`, the last unit), in one transaction; the turn is no longer open."""
        now = time.time()
        live = self._live[session_id]
        with self._write() as db:
            unit = self._unit_rows(db, live, session_id, answer, turn, answer_variables) if answer else None
            db.execute(
                "INSERT INTO turns (session_id, turn, started, ended, stop_reason, error, usage) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, turn) DO UPDATE SET ended = excluded.ended, "
                "stop_reason = excluded.stop_reason, error = excluded.error, usage = excluded.usage",
                (session_id, turn, now, now, stop_reason, error, ledger.model_dump_json()),
            )
            db.execute(
                "UPDATE sessions SET turns = ?, open_turn = NULL, last_used = ?, todos = ?, messages = ? WHERE id = ?",
                (
                    turn + 1,
                    now,
                    _json_dump([item.model_dump(mode="json") for item in todos]),
                    unit.next_message if unit is not None else live.next_message,
                    session_id,
                ),
            )
            writes.insert_audit(db, session_id, audit)
            if span is not None:
                writes.insert_span(db, session_id, span)
            writes.save_usage(db, session_id, ledger, live)
            writes.index_transcript(db, at_least=writes.INDEX_BATCH_ROWS)
        if unit is not None:
            unit.apply(live, turn)
        live.open_turn = None

    @edge("write to")
    def save_usage(self, session_id: int, ledger: UsageLedger) -> None:
        live = self._live[session_id]
        with self._write() as db:
            writes.save_usage(db, session_id, ledger, live)

    @edge("write to")
    def append_audit(self, session_id: int, records: Sequence[AuditRecord]) -> None:
        """Tool calls' audit records (outside a unit: a unit carries its own)."""
        with self._write() as db:
            writes.insert_audit(db, session_id, records)

    @edge("write to")
    def append_checkpoint(self, session_id: int, turn: int, kind: str, record: str) -> None:
        """One change a turn made (or an `undone` marker), as it happens (docs/undo.md)."""
        with self._write() as db:
            db.execute(
                "INSERT INTO checkpoints (session_id, turn, time, kind, record) VALUES (?, ?, ?, ?, ?)",
                (session_id, turn, time.time(), kind, record),
            )

    @edge("write to")
    def append_rewind(self, session_id: int, covered: int, turn: int) -> int:
        live = self._live[session_id]
        with self._write() as db:
            insert = lambda sql, parameters: writes.insert(db, sql, tuple(parameters))  # noqa: E731
            written = event_log.rewind_event(
                db, insert, live.rows, live.next_message, (session_id, turn, time.time()), covered
            )
        live.rows = written.rows
        return written.event_id

    @edge("write to")
    def save_budget(self, session_id: int, added_usd: float, tripped: bool) -> None:
        """The session budget's state, so a trip outlives the kernel."""
        with self._write() as db:
            db.execute(
                "UPDATE sessions SET budget = ? WHERE id = ?",
                (json.dumps({"budget_added_usd": added_usd, "budget_tripped": tripped}), session_id),
            )

    @edge("write to")
    def save_between_turns(self, session_id: int, state: BetweenTurns) -> None:
        """The inbox and the watchdog's window (one JSON column, replaced each time)."""
        with self._write() as db:
            db.execute("UPDATE sessions SET between_turns = ? WHERE id = ?", (state.model_dump_json(), session_id))

    @edge("write to")
    def save_span(self, session_id: int, link: SpanLink) -> None:
        with self._write() as db:
            writes.insert_span(db, session_id, link)

    @edge("read")
    def outcomes(self, name: str) -> list[TurnOutcome]:
        with self._lock:
            session_id = self._id(name)
            if session_id is None:
                return []
            rows = self._db.execute(
                "SELECT turn FROM turns WHERE session_id = ? ORDER BY turn", (session_id,)
            ).fetchall()
            return [reads.outcome(self._db, session_id, turn) for (turn,) in rows]

    # -- snapshots ----------------------------------------------------------------------------

    @edge("read")
    def snapshot_names(self) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT name FROM sessions WHERE kind = 'snapshot' ORDER BY name").fetchall()
        return [name for (name,) in rows]

    @edge("write to")
    def copy(self, source: str, source_kind: str, target: str, target_kind: str) -> None:
        """A snapshot of a session, or a new session from a snapshot: every row copied, in one
        transaction. Event ids move by one offset, so a summary still names the rows it covers."""
        with self._write() as db:
            source_id = self._id(source, source_kind)
            if source_id is None:
                raise StoreError(f"no {source_kind} {source!r}")
            writes.copy_rows(db, source_id, target, target_kind)

    # -- search -----------------------------------------------------------------------------

    @edge("search")
    def search(self, text: str, session: str | None = None, limit: int = SEARCH_LIMIT) -> list[StoredHit]:
        """Ranked passages (FTS5 bm25) of the sessions' transcripts, compacted parts included.
        Every word of `text` must occur (as a word or a word's beginning)."""
        with self._lock:
            if not writes.index_is_current(self._db):  # rows of a turn still running, or cut short
                with self._write() as db:
                    writes.index_transcript(db)
            return reads.search(self._db, text, session, limit)

    # -- identity (opening.py) ----------------------------------------------------------------

    @edge("read")
    def store_id(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        return row[0] if row else None

    @edge("write to")
    def set_store_id(self, store_id: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('store_id', ?)", (store_id,))


def _usage_json(ledger: UsageLedger) -> str:
    return ledger.model_dump_json()


def _json_dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
