"""The store seam: what the engine asks of a session store and its locks, and the errors a
backend may raise (docs/store.md).

The engine talks to these protocols only. A backend (SQLite today, `sqlite.py`) implements
them and translates its own failures — driver errors, rows that do not parse, files that are
not what they should be — into the typed errors below at its edge, so nothing outside the
backend knows which database is underneath. A second backend is proven by the conformance
suite in `tests/unit/store/`, which runs unchanged against every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ...core.history import Message, SummaryMessage
from ...core.todos import TodoItem
from ...core.usage import UsageLedger
from ...errors import BlitzError
from ..safety.audit import AuditRecord
from .records import BetweenTurns, SessionInfo, SpanLink, StoredHit, StoredSession, TurnOutcome, TurnUsage

SEARCH_LIMIT = 20
HIGHLIGHT = ("«", "»")
"""Search excerpts mark the matches between these."""


# -- errors --------------------------------------------------------------------------------


class StoreError(BlitzError):
    """The session store cannot be used; the message says why in one line."""


class StoreUnavailableError(StoreError):
    """The store cannot be reached or written: a read-only folder, a full disk, an I/O error."""


class StoreBusyError(StoreUnavailableError):
    """Another process kept the store's write lock longer than the busy timeout."""


class StoreRefusedError(StoreError):
    """A path the store would use is not what it must be (a symbolic link, not a regular
    file, another user's file, a second name of another file): it is never opened."""


class StoreDamagedError(StoreError):
    """The store holds something unreadable: a corrupt page or a row that is not valid.
    `what` names the file or the row; the message says how to move it aside."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


class SchemaTooNewError(StoreError):
    """The store was written by a newer blitz_kernel; it is left untouched."""


# -- protocols ------------------------------------------------------------------------------


@runtime_checkable
class SessionStore(Protocol):
    """Everything the engine keeps of its sessions. Every method may raise StoreError (and
    nothing else of the backend's own); each write is all or nothing."""

    location: str
    """Where the store lives, as the user should read it (`.blitz/blitz.db`)."""

    def close(self) -> None: ...

    # sessions
    def open_session(self, name: str, holder: str | None = None) -> StoredSession:
        """Load the session, creating it empty if new; a turn left open by a dead process is
        closed as `interrupted` (the caller holds the session's lock)."""
        ...

    def sessions(self) -> list[SessionInfo]: ...
    def read_session(self, name: str) -> StoredSession | None:
        """The session as stored now, for a viewer (the side panel): nothing is written, no
        lock is taken, an interrupted turn stays as it is; None when there is none."""
        ...

    def turn_usage(self, name: str) -> list[TurnUsage]:
        """Each turn's end and the session's usage ledger then, oldest first (read-only)."""
        ...

    def exists(self, name: str, kind: str = "session") -> bool: ...
    def delete(self, name: str, kind: str = "session") -> bool: ...
    def release(self, session_id: int) -> None: ...

    # the event log: one call per committed unit, each one transaction
    def append(
        self,
        session_id: int,
        messages: Sequence[Message],
        turn: int,
        *,
        variables: Sequence[str] = (),
        ledger: UsageLedger | None = None,
        audit: Sequence[AuditRecord] = (),
    ) -> int: ...

    def append_summary(self, session_id: int, summary: SummaryMessage, covered: int, turn: int) -> int: ...
    def append_rewind(self, session_id: int, covered: int, turn: int) -> int: ...

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
        """The turn's outcome, with what is left of its audit rows and its span link, in one
        transaction; `answer`, when given, is the turn's last unit, appended first in the
        same transaction (as `append` would, its usage being the outcome's)."""
        ...

    # usage, budget, audit, checkpoints, trace link
    def save_usage(self, session_id: int, ledger: UsageLedger) -> None: ...
    def save_budget(self, session_id: int, added_usd: float, tripped: bool) -> None: ...
    def append_audit(self, session_id: int, records: Sequence[AuditRecord]) -> None: ...
    def append_checkpoint(self, session_id: int, turn: int, kind: str, record: str) -> None: ...
    def save_span(self, session_id: int, link: SpanLink) -> None: ...
    def save_between_turns(self, session_id: int, state: BetweenTurns) -> None:
        """The session's inbox and watchdog window, replacing what was kept before."""
        ...

    def outcomes(self, name: str) -> list[TurnOutcome]: ...

    # snapshots and search
    def snapshot_names(self) -> list[str]: ...
    def copy(self, source: str, source_kind: str, target: str, target_kind: str) -> None: ...
    def search(self, text: str, session: str | None = None, limit: int = SEARCH_LIMIT) -> list[StoredHit]:
        """Ranked passages of the sessions' transcripts, compacted and rewound parts included;
        every word must occur (as a word or a word's beginning); no query syntax leaks in."""
        ...


class HolderInfo(Protocol):
    """Who holds a session (locks.Holder)."""

    pid: int

    def describe(self) -> str: ...


@runtime_checkable
class SessionLockManager(Protocol):
    """One kernel per session: the locks this process holds on one store's sessions. A lock
    dies with its process. `acquire` raises SessionBusyError naming the holder, or
    StoreRefusedError when the lock cannot be taken safely (the session then stays in memory)."""

    def acquire(self, name: str) -> None: ...
    def release(self, name: str) -> None: ...
    def release_all(self) -> None: ...
    def holds(self, name: str) -> bool: ...
    def holder(self, name: str) -> HolderInfo | None: ...
    def check_free(self, name: str) -> None: ...
