"""Reading a session without opening it (protocol.SessionStore.read_session), for viewers
such as the Blitz side panel (docs/panel.md): no row written, no lock taken, nothing kept for
appends; limited to the store's owner and workspace like every other query."""

from __future__ import annotations

import threading

import psycopg

from ..records import StoredSession, TurnUsage
from ..sqlite import reads
from . import rows
from .connection import Link, retried
from .edge import edge


class Viewing:
    """The read-only session read of the Postgres store (mixed into `PostgresStore`)."""

    link: Link
    owner: str
    workspace: str
    location: str
    _lock: threading.RLock

    @edge("read")
    @retried()
    def read_session(self, name: str) -> StoredSession | None:
        """The session as it is stored now; None when this owner has none of that name here."""
        with self._lock:
            session_id = self._session_id(name)
            if session_id is None:
                return None
            loaded, _ = reads.load_session(rows.Sql(self.link.db), self.location, session_id, name)
        return loaded

    @edge("read")
    @retried()
    def turn_usage(self, name: str) -> list[TurnUsage]:
        """Each turn's end and the ledger then; [] for a session this owner does not have."""
        with self._lock:
            session_id = self._session_id(name)
            if session_id is None:
                return []
            return reads.turn_usage(rows.Sql(self.link.db), self.location, session_id, name)

    def _session_id(self, name: str) -> int | None:
        db: psycopg.Connection = self.link.db
        row = db.execute(
            "SELECT id FROM sessions WHERE owner = %s AND workspace = %s AND kind = 'session' AND name = %s",
            (self.owner, self.workspace, name),
        ).fetchone()
        return None if row is None else int(row[0])
