"""The PostgreSQL backend of the session store (protocol.SessionStore), for teams: one database
that every kernel of a Hub reaches, whichever host it runs on (docs/store.md).

The rows mean what the SQLite store's mean (the event log, the transcript, outcomes, usage,
audit, checkpoint records, trace links, snapshots); loading replays them with the same code
(sqlite/reads.py through a `?`-placeholder adapter), so both backends give back the same
session. Every session row carries its owner and its workspace's identity, and every query is
limited to both: a user sees only their own sessions of this workspace. Checkpoint *content*
(old file bodies) stays on the workspace's local disk; only the records are here.

One connection per store, autocommit, each write one explicit transaction whose statements go
out together (transaction.py); a thread lock serialises its use. A lost connection is
re-established and the unit retried (connection.py). The session locks are held on the same
connection (locks.py) and are taken again on the new one; a session another kernel took
meanwhile is not written again (StoreBusyError naming the holder): a kernel never writes to a
session it no longer holds. psycopg's errors become the store's typed errors at the edge
(edge.py).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Sequence

import psycopg

from ....core.history import Message, SummaryMessage
from ....core.store_url import shown_url
from ....core.todos import TodoItem
from ....core.usage import UsageLedger, UsageTotals
from ...safety.audit import AuditRecord
from .. import event_log
from ..protocol import SEARCH_LIMIT, StoreBusyError, StoreError
from ..records import BetweenTurns, SessionInfo, SpanLink, StoredHit, StoredSession, TurnOutcome
from ..sqlite import reads
from . import rows as writes
from .connection import Link, retried
from .edge import edge, translate
from .schema import check_current, migrate
from .transaction import Transaction
from .viewing import Viewing

_EMPTY_USAGE = UsageLedger().model_dump_json()


class PostgresStore(Viewing):
    """One owner's sessions of one workspace in a PostgreSQL database."""

    def __init__(self, url: str, *, owner: str, workspace: str, viewer: bool = False) -> None:
        """`viewer`: a reader that changes nothing (the side panel) never sets up or migrates
        the team's database: a schema other than this version's is refused untouched."""
        self.location = shown_url(url)
        self.owner = owner
        self.workspace = workspace
        self.link = Link(url, self.location)
        try:
            (check_current if viewer else migrate)(self.link.db, self.location)
        except StoreError:
            self.link.db.close()
            raise
        except psycopg.Error as exc:
            self.link.db.close()
            raise translate(exc, self.location, "set up") from exc
        self._lock = self.link.guard
        self._live: dict[int, reads.Live] = {}
        self._names: dict[int, str] = {}
        self.taken: dict[str, str] = {}
        """Sessions whose lock another kernel took while the connection was lost: why not saved."""

    @property
    def _db(self) -> psycopg.Connection:
        return self.link.db

    @property
    def connection(self) -> psycopg.Connection:
        """The kernel's connection now, shared with its session locks (locks.py)."""
        return self.link.db

    @property
    def guard(self) -> threading.RLock:
        """The thread lock that serialises every use of `connection`."""
        return self._lock

    def close(self) -> None:
        with self._lock, contextlib.suppress(psycopg.Error):
            self._db.close()

    def check_held(self, session_id: int) -> None:
        """Refuse to write a session whose lock went to another kernel (connection.py)."""
        taken = self.taken.get(self._names.get(session_id, ""))
        if taken is not None:
            raise StoreBusyError(taken)

    def _write(self) -> contextlib.AbstractContextManager[Transaction]:
        """One transaction: all of it is committed, or none of it (sent in two round trips)."""
        return self.link.transaction()

    def _id(self, name: str, kind: str = "session", db: Transaction | None = None) -> int | None:
        """The session's id; `db`: the transaction to read it in (else the connection)."""
        executor: Transaction | psycopg.Connection = db if db is not None else self._db
        row = executor.execute(
            "SELECT id FROM sessions WHERE owner = %s AND workspace = %s AND kind = %s AND name = %s",
            (self.owner, self.workspace, kind, name),
        ).fetchone()
        return int(row[0]) if row else None

    # -- sessions ---------------------------------------------------------------------------

    @edge("open a session in")
    @retried()
    def open_session(self, name: str, holder: str | None = None) -> StoredSession:
        now = time.time()
        with self._lock:
            # a fresh session is the common case: its row alone, one statement and one round
            # trip (a no-op for one that exists, by the UNIQUE key; one whose answer was lost
            # is found existing, and empty, when this is retried)
            created = self._db.execute(
                "INSERT INTO sessions (owner, workspace, name, kind, created, last_used, holder) "
                "VALUES (%s, %s, %s, 'session', %s, %s, %s) "
                "ON CONFLICT (owner, workspace, kind, name) DO NOTHING RETURNING id",
                (self.owner, self.workspace, name, now, now, holder),
            ).fetchone()
        if created is not None:
            fresh = int(created[0])
            self._live[fresh], self._names[fresh] = reads.Live(next_message=0, usage_json=_EMPTY_USAGE), name
            return reads.empty_session(fresh, name)
        with self._write() as db:
            row = db.execute(
                "SELECT id, open_turn, turns FROM sessions WHERE owner = %s AND workspace = %s "
                "AND kind = 'session' AND name = %s FOR UPDATE",
                (self.owner, self.workspace, name),
            ).fetchone()
            if row is None:  # deleted between the two statements (a delete takes the lock; a bare store does not)
                raise StoreError(f"session {name!r} was deleted while it was being opened; open it again")
            session_id, open_turn, turns = int(row[0]), row[1], int(row[2])
            if open_turn is not None:
                writes.close_interrupted(db, session_id, open_turn, turns, now)
            db.execute("UPDATE sessions SET holder = %s WHERE id = %s", (holder, session_id))
        with self._lock:
            sql = writes.Sql(self._db)
            loaded, self._live[session_id] = reads.load_session(sql, self.location, session_id, name)
            self._names[session_id] = name
            if open_turn is not None:
                loaded.interrupted = reads.outcome(sql, session_id, open_turn)
        return loaded

    @edge("read")
    @retried()
    def sessions(self) -> list[SessionInfo]:
        with self._lock:
            rows = self._db.execute(
                "SELECT s.name, s.created, s.last_used, s.turns, u.totals FROM sessions s "
                "LEFT JOIN usage u ON u.session_id = s.id AND u.model = '' "
                "WHERE s.owner = %s AND s.workspace = %s AND s.kind = 'session' ORDER BY s.name",
                (self.owner, self.workspace),
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

    @edge("read")
    @retried()
    def exists(self, name: str, kind: str = "session") -> bool:
        with self._lock:
            return self._id(name, kind) is not None

    @edge("write to")
    @retried()
    def delete(self, name: str, kind: str = "session") -> bool:
        """Remove the session and all its rows (the foreign keys cascade)."""
        with self._write() as db:
            session_id = self._id(name, kind, db)
            if session_id is None:
                return False
            db.execute("DELETE FROM sessions WHERE id = %s", (session_id,))
        self._live.pop(session_id, None)
        return True

    @edge("write to")
    @retried(session=True)
    def release(self, session_id: int) -> None:
        with self._write() as db:
            db.execute("UPDATE sessions SET holder = NULL WHERE id = %s", (session_id,))
        self._live.pop(session_id, None)

    # -- appends ----------------------------------------------------------------------------

    @edge("write to")
    @retried(session=True)
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
        """One committed unit, with its audit rows and the usage so far, in one transaction."""
        live = self._live[session_id]
        with self._write() as db:
            unit = self._unit_rows(db, live, session_id, messages, turn, variables)
            db.execute(
                "UPDATE sessions SET last_used = %s, messages = %s, open_turn = %s WHERE id = %s",
                (time.time(), unit.next_message, turn, session_id),
            )
            writes.insert_audit(db, session_id, audit)
            if ledger is not None:
                writes.save_usage(db, session_id, ledger, live)
        unit.apply(live, turn)
        return unit.event_id

    def _unit_rows(
        self,
        db: Transaction,
        live: reads.Live,
        session_id: int,
        messages: Sequence[Message],
        turn: int,
        variables: Sequence[str],
    ) -> event_log.WrittenUnit:
        return event_log.unit_event(
            writes.Sql(db),
            lambda sql, parameters: writes.insert(db, sql.replace("?", "%s"), parameters),
            lambda event, first, at_turn, now, unit: writes.transcribe(
                db, session_id, event, first, at_turn, now, unit
            ),
            live,
            (session_id, turn, time.time()),
            messages,
            variables,
        )

    @edge("write to")
    @retried(session=True)
    def append_summary(self, session_id: int, summary: SummaryMessage, covered: int, turn: int) -> int:
        live = self._live[session_id]
        with self._write() as db:
            written = event_log.summary_event(
                writes.Sql(db),
                lambda sql, parameters: writes.insert(db, sql.replace("?", "%s"), parameters),
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
    @retried(session=True)
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
        """The turn's outcome, its audit rows, its span link and its answer (`answer`, the last
        unit), in one transaction."""
        now = time.time()
        live = self._live[session_id]
        with self._write() as db:
            unit = self._unit_rows(db, live, session_id, answer, turn, answer_variables) if answer else None
            db.execute(
                "INSERT INTO turns (session_id, turn, started, ended, stop_reason, error, usage) VALUES (%s, %s, "
                "%s, %s, %s, %s, %s) ON CONFLICT (session_id, turn) DO UPDATE SET ended = excluded.ended, "
                "stop_reason = excluded.stop_reason, error = excluded.error, usage = excluded.usage",
                (session_id, turn, now, now, stop_reason, error, ledger.model_dump_json()),
            )
            db.execute(
                "UPDATE sessions SET turns = %s, open_turn = NULL, last_used = %s, todos = %s, messages = %s "
                "WHERE id = %s",
                (
                    turn + 1,
                    now,
                    json.dumps([item.model_dump(mode="json") for item in todos], ensure_ascii=False),
                    unit.next_message if unit is not None else live.next_message,
                    session_id,
                ),
            )
            writes.insert_audit(db, session_id, audit)
            if span is not None:
                writes.insert_span(db, session_id, span)
            writes.save_usage(db, session_id, ledger, live)
        if unit is not None:
            unit.apply(live, turn)

    @edge("write to")
    @retried(session=True)
    def save_usage(self, session_id: int, ledger: UsageLedger) -> None:
        live = self._live[session_id]
        with self._write() as db:
            writes.save_usage(db, session_id, ledger, live)

    @edge("write to")
    @retried(session=True)
    def append_audit(self, session_id: int, records: Sequence[AuditRecord]) -> None:
        with self._write() as db:
            writes.insert_audit(db, session_id, records)

    @edge("write to")
    @retried(session=True)
    def append_checkpoint(self, session_id: int, turn: int, kind: str, record: str) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO checkpoints (session_id, turn, time, kind, record) VALUES (%s, %s, %s, %s, %s)",
                (session_id, turn, time.time(), kind, record),
            )

    @edge("write to")
    @retried(session=True)
    def append_rewind(self, session_id: int, covered: int, turn: int) -> int:
        live = self._live[session_id]
        with self._write() as db:
            insert = lambda sql, parameters: writes.insert(db, sql.replace("?", "%s"), parameters)  # noqa: E731
            at = (session_id, turn, time.time())
            written = event_log.rewind_event(writes.Sql(db), insert, live.rows, live.next_message, at, covered)
        live.rows = written.rows
        return written.event_id

    @edge("write to")
    @retried(session=True)
    def save_budget(self, session_id: int, added_usd: float, tripped: bool) -> None:
        with self._write() as db:
            db.execute(
                "UPDATE sessions SET budget = %s WHERE id = %s",
                (json.dumps({"budget_added_usd": added_usd, "budget_tripped": tripped}), session_id),
            )

    @edge("write to")
    @retried(session=True)
    def save_between_turns(self, session_id: int, state: BetweenTurns) -> None:
        """The inbox and the watchdog's window (one JSON column, replaced each time)."""
        with self._write() as db:
            db.execute("UPDATE sessions SET between_turns = %s WHERE id = %s", (state.model_dump_json(), session_id))

    @edge("write to")
    @retried(session=True)
    def save_span(self, session_id: int, link: SpanLink) -> None:
        with self._write() as db:
            writes.insert_span(db, session_id, link)

    @edge("read")
    @retried()
    def outcomes(self, name: str) -> list[TurnOutcome]:
        with self._lock:
            session_id = self._id(name)
            if session_id is None:
                return []
            turns = self._db.execute("SELECT turn FROM turns WHERE session_id = %s ORDER BY turn", (session_id,))
            sql = writes.Sql(self._db)
            return [reads.outcome(sql, session_id, turn) for (turn,) in turns.fetchall()]

    # -- snapshots and search -----------------------------------------------------------------

    @edge("read")
    @retried()
    def snapshot_names(self) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT name FROM sessions WHERE owner = %s AND workspace = %s AND kind = 'snapshot' ORDER BY name",
                (self.owner, self.workspace),
            ).fetchall()
        return [name for (name,) in rows]

    @edge("write to")
    @retried()
    def copy(self, source: str, source_kind: str, target: str, target_kind: str) -> None:
        with self._write() as db:
            source_id = self._id(source, source_kind, db)
            if source_id is None:
                raise StoreError(f"no {source_kind} {source!r}")
            writes.copy_rows(db, source_id, target, target_kind)

    @edge("search")
    @retried()
    def search(self, text: str, session: str | None = None, limit: int = SEARCH_LIMIT) -> list[StoredHit]:
        with self._lock:
            return writes.search(self._db, self.owner, self.workspace, text, session, limit)
