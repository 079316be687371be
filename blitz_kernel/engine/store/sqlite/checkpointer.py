"""WAL checkpoints off the turn's path.

In WAL mode every commit appends the pages it changed to the `-wal` file; a checkpoint copies
them back into the database and syncs it. SQLite's default runs that checkpoint inside
whichever commit pushes the WAL past 1,000 pages: one unit's commit in a few dozen then takes
tens of milliseconds (the copy and an fsync) instead of a fraction of one, and it was most of
what the store cost a turn. So the store's connection checkpoints only as a backstop
(`BACKSTOP_PAGES`), and a thread of the store's own, with a connection of its own, runs a
PASSIVE checkpoint (it never blocks a writer or a reader) every `EVERY_COMMITS` commits.
Only committed pages are copied, so a kernel killed at any moment loses nothing it committed.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

EVERY_COMMITS = 100
"""Commits between two background checkpoints (a turn is a few)."""
BACKSTOP_PAGES = 20_000
"""The connection's own automatic checkpoint (about 80 MB of WAL): only reached when the
background checkpoints cannot keep up (a reader that never lets go)."""


class Checkpointer:
    """One database's background checkpoints; `committed()` after each commit."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self._path = path
        self._file = _identity(path)
        """The database the store opened: the thread's own connection must reach that file."""
        self._timeout_s = timeout_s
        self._commits = 0
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None

    def committed(self) -> None:
        self._commits += 1
        if self._commits % EVERY_COMMITS == 0 and not self._closed:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="blitz-store-checkpoint", daemon=True)
                self._thread.start()
            self._wake.set()

    def close(self) -> None:
        """Stop the thread (a checkpoint under way finishes first)."""
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=self._timeout_s)

    def _run(self) -> None:
        try:
            connection = sqlite3.connect(self._path, timeout=self._timeout_s, isolation_level=None)
        except sqlite3.Error:
            return  # the backstop checkpoints instead
        if self._file is None or _identity(self._path) != self._file:  # replaced since: not ours
            connection.close()
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._closed:
                    return
                with contextlib.suppress(sqlite3.Error):  # busy or gone: the next one, or the backstop
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            connection.close()


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return info.st_dev, info.st_ino
