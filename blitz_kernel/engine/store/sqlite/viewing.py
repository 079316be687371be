"""Reading a session without opening it (protocol.SessionStore.read_session): what a viewer
such as the Blitz side panel needs (docs/panel.md). Unlike `open_session` it creates nothing,
closes no interrupted turn and keeps no bookkeeping for appends, so it is safe while a kernel
holds the session."""

from __future__ import annotations

import sqlite3
import threading

from ..records import StoredSession, TurnUsage
from . import reads
from .edge import edge


class Viewing:
    """The read-only session read of the SQLite store (mixed into `Store`)."""

    _db: sqlite3.Connection
    _lock: threading.RLock
    location: str

    @edge("read")
    def read_session(self, name: str) -> StoredSession | None:
        """The session as it is stored now; None when there is none of that name."""
        with self._lock:
            row = self._db.execute("SELECT id FROM sessions WHERE kind = 'session' AND name = ?", (name,)).fetchone()
            if row is None:
                return None
            loaded, _ = reads.load_session(self._db, self.location, row[0], name)
        return loaded

    @edge("read")
    def turn_usage(self, name: str) -> list[TurnUsage]:
        """Each turn's end and the ledger then; [] for a session that does not exist."""
        with self._lock:
            row = self._db.execute("SELECT id FROM sessions WHERE kind = 'session' AND name = ?", (name,)).fetchone()
            return [] if row is None else reads.turn_usage(self._db, self.location, row[0], name)
