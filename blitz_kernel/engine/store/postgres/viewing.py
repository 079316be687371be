"""Reading a session without opening it (protocol.SessionStore.read_session), for viewers
such as the Blitz side panel (docs/panel.md): no row written, no lock taken, nothing kept for
appends; limited to the store's owner and workspace like every other query."""

from __future__ import annotations

import threading

import psycopg

from ..records import StoredSession
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
            db: psycopg.Connection = self.link.db
            row = db.execute(
                "SELECT id FROM sessions WHERE owner = %s AND workspace = %s AND kind = 'session' AND name = %s",
                (self.owner, self.workspace, name),
            ).fetchone()
            if row is None:
                return None
            loaded, _ = reads.load_session(rows.Sql(db), self.location, int(row[0]), name)
        return loaded
