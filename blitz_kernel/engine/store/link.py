"""A workspace's link to its session store, or the one-line reason it has none (docs/store.md).

Sessions must go on when the store cannot be used — damaged, read-only, a full disk, a link
where a file should be, or written by a newer blitz_kernel — so the book holds this link rather
than the store itself: a read or write that fails drops the store for the rest of the process,
the sessions carry on in memory, and `problem` says so once. Only the store's own typed errors
are caught here (protocol.py): each backend translates its driver's errors at its edge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from .protocol import SessionLockManager, SessionStore, StoreError

T = TypeVar("T")
MEMORY_ONLY = "sessions are kept in memory only and will not survive a kernel restart"


class StoreLink:
    """The book's store and its locks, shared by its sessions, or the reason there is none."""

    def __init__(
        self,
        store: SessionStore | None,
        problem: str | None = None,
        *,
        locks: SessionLockManager | None = None,
        notices: list[str] | None = None,
    ) -> None:
        self.store = store
        self.problem = problem
        self.locks = locks
        self.notices = notices or []
        """One-time notices about the store (a foreign database moved aside)."""

    @classmethod
    def without_store(cls, exc: StoreError) -> StoreLink:
        link = cls(None)
        link.fail(exc)
        return link

    def write(self, action: Callable[[SessionStore], object]) -> bool:
        """Run `action(store)`; False (and the store dropped) when it failed."""
        if self.store is None:
            return False
        try:
            action(self.store)
        except StoreError as exc:
            self.fail(exc)
            return False
        return True

    def read(self, action: Callable[[SessionStore], T], fallback: T) -> T:
        """`action(store)`, or `fallback` when there is no store or it failed (then dropped)."""
        if self.store is None:
            return fallback
        try:
            return action(self.store)
        except StoreError as exc:
            self.fail(exc)
            return fallback

    def fail(self, exc: BaseException) -> None:
        detail = str(exc).rstrip(".")
        if not detail.startswith(("cannot", "the session store", ".blitz", "/")):
            detail = f"the session store failed: {detail}"
        self.problem = f"{detail}; {MEMORY_ONLY}"
        store, self.store = self.store, None
        if store is not None:
            store.close()
