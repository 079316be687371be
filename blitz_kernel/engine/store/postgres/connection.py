"""The PostgreSQL store's one connection, and what happens when it is lost (docs/store.md).

A connection dropped mid-session (the server restarted, a proxy timed out, an administrator's
`pg_terminate_backend`) is re-established with a short backoff, and the session locks it held
are taken again on the new one (locks.py) before anything is written. The unit that was being
written when the connection went is retried once the link is back, never written twice:

- each write transaction first asks for its transaction id (`pg_current_xact_id()`);
- when the connection fails, the new connection asks the server what became of that id
  (`pg_xact_status`): `committed` (the COMMIT reached the server but its answer was lost) means
  the unit is written and is not retried; anything else means the server rolled all of it back,
  so the whole unit is retried.

A server that stays away through the backoff is a StoreUnavailableError, as before: the store is
dropped and the sessions go on in memory, "not saved".
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar, cast

import psycopg

from ..protocol import StoreError
from .edge import translate
from .transaction import Transaction

CONNECT_TIMEOUT_S = 10
STATEMENT_TIMEOUT_MS = 30_000
"""A statement that runs longer (a server in trouble) fails as StoreBusyError."""
RECONNECT_PAUSES_S = (0.1, 0.4, 1.0, 2.5)
"""The pauses before each attempt to connect again: about 4 s in all, then the store is dropped."""
UNIT_TRIES = 3
"""Attempts at one unit (a write, or a read) across lost connections."""

F = TypeVar("F", bound=Callable[..., Any])


def connect(url: str, location: str) -> psycopg.Connection:
    """An autocommit connection with the statement timeout, or StoreError saying why not."""
    try:
        connection = psycopg.connect(
            url,
            autocommit=True,
            connect_timeout=CONNECT_TIMEOUT_S,
            options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            application_name="blitz_kernel",
        )
    except psycopg.Error as exc:
        raise translate(exc, location, "reach") from None
    return connection


class ConnectionLost(Exception):
    """The connection went and is back; the unit did not commit: run it again."""


class Link:
    """The store's connection, the thread lock that serialises its use, and reconnection."""

    def __init__(self, url: str, location: str) -> None:
        self.url, self.location = url, location
        self.db = connect(url, location)
        self.guard = threading.RLock()
        self.on_reconnect: list[Callable[[psycopg.Connection], None]] = []
        """Run on every new connection before it is used (the locks take their sessions again)."""
        self.reconnects = 0

    def lost(self) -> bool:
        return bool(self.db.closed or self.db.broken)

    def reconnect(self) -> None:
        """A new connection after a lost one, with backoff; StoreError when none comes."""
        with self.guard:
            with contextlib.suppress(psycopg.Error):
                self.db.close()
            failure: StoreError | None = None
            for pause in RECONNECT_PAUSES_S:
                time.sleep(pause)  # backoff between attempts, not a synchronisation
                try:
                    self.db = connect(self.url, self.location)
                except StoreError as exc:
                    failure = exc
                    continue
                self.reconnects += 1
                for callback in self.on_reconnect:
                    callback(self.db)
                return
            assert failure is not None
            raise failure

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One transaction: all of it is committed, or none of it. A lost connection raises
        ConnectionLost once it is back, unless the server says the transaction committed.

        Its statements are queued and sent together (transaction.py): two round trips for a
        unit. The transaction's id comes back with the first message, before the COMMIT is
        sent, so a COMMIT whose answer was lost can be asked about."""
        with self.guard:
            work = Transaction(self.db)
            try:
                yield work
                work.commit()
            except psycopg.OperationalError:
                if not self.lost():
                    work.abandon()
                    raise
                self.reconnect()
                if work.xid is not None and self._committed(work.xid):
                    return  # the COMMIT got through; only its answer was lost
                raise ConnectionLost from None
            except BaseException:
                work.abandon()
                raise

    def _committed(self, xid: str) -> bool:
        row = self.db.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()
        return row is not None and row[0] == "committed"

    def run(self, action: Callable[[], Any]) -> Any:
        """`action()`, again on a new connection when the old one was lost under it."""
        for attempt in range(UNIT_TRIES):
            generation = self.reconnects
            try:
                return action()
            except ConnectionLost:
                continue
            except psycopg.OperationalError:
                if attempt + 1 == UNIT_TRIES:
                    raise
                if self.reconnects != generation:
                    continue  # another thread connected again meanwhile
                if not self.lost():
                    raise
                self.reconnect()  # a read, or a statement outside a transaction: just again
        raise psycopg.OperationalError(f"the connection to {self.location} was lost {UNIT_TRIES} times in a row")


class HasLink:
    """What `retried` needs of the store."""

    link: Link

    def check_held(self, session_id: int) -> None: ...


def retried(*, session: bool = False) -> Callable[[F], F]:
    """A store method that survives a lost connection (Link.run). `session`: its first argument
    is a session id, whose lock must still be this kernel's before it writes."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def run(self: HasLink, *args: Any, **kwargs: Any) -> Any:
            def once() -> Any:
                if session:
                    self.check_held(args[0])
                return method(self, *args, **kwargs)

            return self.link.run(once)

        return cast(F, run)

    return wrap
