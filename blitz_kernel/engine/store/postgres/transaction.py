"""One write transaction of the PostgreSQL store, sent in as few messages as it can be
(docs/store.md).

psycopg's pipeline mode sends each statement as its own message and wakes for each answer: a
unit's dozen statements cost about 0.8 ms on a two-core machine, where one message holding them
all costs 0.3. Here statements are bound on the client (psycopg's `ClientCursor.mogrify`, which
quotes by the server's own rules, so no value can end a literal) and queued; they go out as one
simple-query message when a result is read or the transaction ends. The first message begins
the transaction and asks for its id; once that id is known, the COMMIT rides with the last
message. A unit is two round trips whether or not it reads an id on the way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg
from psycopg import pq

_BEGIN = ("BEGIN", "SELECT pg_current_xact_id()::text")
_OPEN = (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)


class Pending:
    """A queued statement's result: reading it sends what is queued, if it is not yet sent."""

    __slots__ = ("_transaction", "rows")

    def __init__(self, transaction: Transaction) -> None:
        self._transaction = transaction
        self.rows: list[tuple[Any, ...]] | None = None

    def fetchall(self) -> list[tuple[Any, ...]]:
        if self.rows is None:
            self._transaction.send()
        assert self.rows is not None
        return self.rows

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchall()
        return rows[0] if rows else None


class Transaction:
    """The statements of one transaction on `db` (an autocommit connection), queued until a
    result is read or `commit` is called; `xid` is the server's id for it once it has begun."""

    def __init__(self, db: psycopg.Connection) -> None:
        self.db = db
        self._binder = psycopg.ClientCursor(db)
        self._queued: list[str] = []
        self._results: list[Pending] = []
        self.xid: str | None = None

    def execute(self, sql: str | bytes, parameters: Sequence[Any] = (), /) -> Pending:
        """Queue one statement (`%s` placeholders); its rows come with the next message."""
        text = sql.decode() if isinstance(sql, bytes) else sql
        self._queued.append(self._binder.mogrify(text, parameters) if parameters else text)
        pending = Pending(self)
        self._results.append(pending)
        return pending

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        for parameters in rows:
            self.execute(sql, parameters)

    def send(self, *, commit: bool = False) -> None:
        """Everything queued, as one message (the COMMIT with it when `commit` and the
        transaction's id is already known); each statement's rows to its Pending."""
        begin = self.xid is None
        commit_now = commit and not begin
        if not self._queued and not commit_now:
            return
        statements = [*(_BEGIN if begin else ()), *self._queued, *(("COMMIT",) if commit_now else ())]
        results, self._queued, self._results = self._results, [], []
        cursor = self.db.cursor()
        cursor.execute(";\n".join(statements).encode(), prepare=False)
        if begin:
            cursor.nextset()  # BEGIN's
            row = cursor.fetchone()
            self.xid = str(row[0]) if row else None
            cursor.nextset()
        for pending in results:
            pending.rows = cursor.fetchall() if cursor.description is not None else []
            cursor.nextset()

    def commit(self) -> None:
        """Send what is queued and commit: one message when the transaction's id is known,
        else the statements (which learn it) and then the COMMIT."""
        if self.xid is None:
            self.send()
        if self.xid is not None:
            self.send(commit=True)

    def abandon(self) -> None:
        """Roll back whatever reached the server, on a connection that is still there."""
        if not (self.db.closed or self.db.broken) and self.db.info.transaction_status in _OPEN:
            with contextlib.suppress(psycopg.Error):
                self.db.execute(b"ROLLBACK", prepare=False)
