"""One kernel per session across hosts: a PostgreSQL advisory lock per session (docs/store.md).

`pg_advisory_lock` is held by a server connection, not by a file: the locks are taken on the
kernel's own store connection, and the server releases every lock of a connection that goes
away — a kernel killed on any host, its pod rescheduled, its network gone — so a crash never
leaves a session locked. When the store connects again after a lost connection
(connection.py), each lock is taken again on the new connection before anything is written; a
session another kernel opened in between is left to it, and this kernel's writes to it are
refused with the busy message naming that kernel (never two writers on one session). The key is a hash of (owner, workspace, session
name). Who holds a session (host, pid, notebook, since) is written to the `holders` table when
the lock is taken, so a refused kernel can say where the session is open, with the same
SessionBusyError message as the file locks give.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from typing import Any, LiteralString

import psycopg
from pydantic import ValidationError

from ....errors import SessionBusyError
from ..locks import ACQUIRE_TRIES, RETRY_PAUSE_S, Holder, busy_message, check_session_name
from ..protocol import StoreError
from .edge import translate
from .store import PostgresStore


def lock_key(owner: str, workspace: str, name: str) -> int:
    """The session's advisory lock key: a signed 64-bit hash, the same on every host."""
    digest = hashlib.sha256(f"{owner}\0{workspace}\0{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class PostgresLocks:
    """The session locks this process holds in one database (protocol.SessionLockManager)."""

    def __init__(self, store: PostgresStore) -> None:
        self.location = store.location
        self.owner = store.owner
        self.workspace = store.workspace
        self._store = store
        self._guard = store.guard
        self._held: set[str] = set()
        store.link.on_reconnect.append(self._take_again)

    def _one(self, sql: LiteralString, parameters: tuple[object, ...]) -> tuple[Any, ...] | None:
        """One statement on the shared connection, under the store's thread lock (on a new
        connection, with the locks taken again, when the old one was lost)."""
        with self._guard:
            return self._store.link.run(lambda: self._store.connection.execute(sql, parameters).fetchone())

    def _take_again(self, db: psycopg.Connection) -> None:
        """On a new connection: each held session's lock again, or the session is given up."""
        for name in sorted(self._held):
            key = self._key(name)
            row = db.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if row is not None and row[0]:
                db.execute(
                    "UPDATE holders SET record = %s WHERE lock_key = %s",
                    (Holder.current().model_dump_json(), key),
                )
                continue
            self._held.discard(name)
            holder = db.execute("SELECT record FROM holders WHERE lock_key = %s", (key,)).fetchone()
            record = _holder(holder[0] if holder else None)
            self._store.taken[name] = (
                f"the connection to the store was lost, and meanwhile {busy_message(name, record)}; "
                "this kernel no longer saves that session"
            )

    def _key(self, name: str) -> int:
        return lock_key(self.owner, self.workspace, check_session_name(name))

    def _try(self, key: int, tries: int) -> bool:
        for attempt in range(tries):
            row = self._one("SELECT pg_try_advisory_lock(%s)", (key,))
            if row is not None and row[0]:
                return True
            if attempt + 1 < tries:
                time.sleep(RETRY_PAUSE_S)
        return False

    def holds(self, name: str) -> bool:
        return name in self._held

    def acquire(self, name: str) -> None:
        """Take the session's lock, or raise SessionBusyError naming the holder."""
        key = self._key(name)
        if name in self._held:
            return
        record = Holder.current().model_dump_json()
        try:
            for attempt in range(ACQUIRE_TRIES):
                # the lock and, when it is taken, the holder record: one round trip
                if self._one(
                    "WITH got AS (SELECT pg_try_advisory_lock(%s) AS ok) "
                    "INSERT INTO holders (lock_key, owner, workspace, name, record) "
                    "SELECT %s, %s, %s, %s, %s FROM got WHERE got.ok "
                    "ON CONFLICT (lock_key) DO UPDATE SET record = excluded.record RETURNING lock_key",
                    (key, key, self.owner, self.workspace, name, record),
                ):
                    self._held.add(name)  # from here a new connection takes it again
                    return
                if attempt + 1 < ACQUIRE_TRIES:
                    time.sleep(RETRY_PAUSE_S)
            raise SessionBusyError(busy_message(name, self._read_holder(key)))
        except psycopg.Error as exc:
            self._held.discard(name)
            raise translate(exc, self.location, "lock a session in") from exc
        except StoreError:
            self._held.discard(name)
            raise

    def release(self, name: str) -> None:
        if name not in self._held:
            return
        self._held.discard(name)
        key = self._key(name)
        with contextlib.suppress(psycopg.Error, StoreError):
            self._one("UPDATE holders SET record = NULL WHERE lock_key = %s RETURNING lock_key", (key,))
            self._one("SELECT pg_advisory_unlock(%s)", (key,))

    def release_all(self) -> None:
        for name in list(self._held):
            self.release(name)

    def holder(self, name: str) -> Holder | None:
        """Who holds the session, if another kernel does (a quick, non-blocking probe)."""
        if name in self._held:
            return None
        key = self._key(name)
        try:
            if self._try(key, tries=1):
                self._one("SELECT pg_advisory_unlock(%s)", (key,))
                return None
            return self._read_holder(key) or Holder(pid=0, since=0)
        except (psycopg.Error, StoreError):
            return None

    def check_free(self, name: str) -> None:
        holder = self.holder(name)
        if holder is not None:
            raise SessionBusyError(busy_message(name, holder if holder.pid else None))

    def _read_holder(self, key: int) -> Holder | None:
        row = self._one("SELECT record FROM holders WHERE lock_key = %s", (key,))
        return _holder(row[0] if row else None)


def _holder(record: str | None) -> Holder | None:
    if record is None:
        return None
    try:
        return Holder.model_validate_json(record)
    except ValidationError:
        return None
