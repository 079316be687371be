"""A workspace's link to its session store, or the one-line reason it has none (WS-02).

Sessions must go on when the database cannot be used — corrupt, read-only, a full disk, or
written by a newer blitz_kernel — so the book holds this link rather than the store itself: a
write that fails drops the store for the rest of the process, the sessions carry on in memory,
and `problem` says so once.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from .schema import SchemaTooNewError, StoreError
from .sqlite import Store


class StoreLink:
    """The book's store, shared by its sessions, or the reason there is none. A write that
    fails (disk full, the file gone bad) drops the store for the rest of the process: sessions
    go on in memory, and `problem` says, once, that they are no longer saved."""

    def __init__(self, store: Store | None, problem: str | None = None) -> None:
        self.store = store
        self.problem = problem

    def write(self, action: Any) -> bool:
        """Run `action(store)`; False (and the store dropped) when it failed."""
        if self.store is None:
            return False
        try:
            action(self.store)
        except (StoreError, sqlite3.Error, OSError) as exc:
            self.fail(exc)
            return False
        return True

    def fail(self, exc: BaseException) -> None:
        detail = str(exc)
        self.problem = (
            detail if detail.startswith("cannot") else f"the session store failed: {detail}"
        ) + "; sessions are kept in memory only and will not survive a kernel restart"
        store, self.store = self.store, None
        if store is not None:
            with contextlib.suppress(sqlite3.Error):
                store.close()


def open_store(root: Path) -> StoreLink:
    """The workspace's store, or a link that explains in one line why there is none (corrupt
    file, read-only directory, full disk, a newer schema)."""
    try:
        return StoreLink(Store.for_workspace(root))
    except SchemaTooNewError as exc:
        link = StoreLink(None)
        link.problem = f"{exc} Sessions are kept in memory only."
        return link
    except (StoreError, sqlite3.Error, OSError) as exc:
        link = StoreLink(None)
        link.fail(exc if isinstance(exc, StoreError) else StoreError(f"cannot open the session store: {exc}"))
        return link
