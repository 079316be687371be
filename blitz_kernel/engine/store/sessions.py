"""The workspace's sessions and snapshots, and search over what they said (`%blitz_session`).

Durable when the book has a store (docs/store.md): the first use of a session in this kernel takes its
lock (one kernel per session) and loads it, history, archive, turns, usage and the previous
turn's span; every committed unit is written through. A snapshot is a frozen copy of a
session's rows; loading one starts a new session from it, so the snapshot never changes.

Without a store (it could not be opened, or a test wants none) the same operations work in
memory, and `store_problem` says why sessions are not being saved. A store that fails later
(a damaged row, a full disk) is dropped the same way: every read and write goes through the
link, which catches the store's typed errors only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel

from ...core.usage import UsageTotals
from ...errors import BlitzError, SessionBusyError
from .checkpoints import session_folder
from .factory import open_store
from .link import StoreLink
from .locks import Holder, check_session_name
from .log import SessionLog
from .protocol import HIGHLIGHT, SessionLockManager, StoreError, StoreRefusedError
from .records import SessionInfo, TurnOutcome, role_and_text
from .session import Session

SEARCH_CONTEXT_CHARS = 80


class SessionError(BlitzError):
    """A session or snapshot name that does not exist, or already does."""


class SearchHit(BaseModel):
    """One message that matched a search."""

    session: str
    index: int
    """The message's number in its session's transcript (compacted messages included)."""
    role: str
    excerpt: str
    """The passage, matches between « and »."""
    turn: int | None = None
    time: float | None = None
    compacted: bool = False
    """Compaction replaced it with a summary: the model no longer sees it."""
    rewound: bool = False
    """An undo took its turn out of the history: the model no longer sees it."""


class SessionListing(BaseModel):
    """One line of `%blitz_session list`."""

    name: str
    turns: int
    last_used: float | None
    usage: UsageTotals
    held_by: Holder | None = None
    """Another kernel that holds the session now; None if free or held by this kernel."""


class SessionBook:
    """Sessions by name, plus snapshots."""

    def __init__(
        self, link: StoreLink | None = None, locks: SessionLockManager | None = None, root: Path | None = None
    ) -> None:
        self.link = link or StoreLink(None)
        self.locks = locks if locks is not None else self.link.locks
        self.root = root
        """The workspace, where the sessions' checkpoint copies live."""
        self._sessions: dict[str, Session] = {}
        self._snapshots: dict[str, Session] = {}

    @classmethod
    def for_workspace(cls, root: Path, *, url: str | None = None, home: Path | None = None) -> SessionBook:
        """The durable book of the store `url` names (None: `<root>/.blitz/blitz.db`); in
        memory, with `store_problem` set, when the store cannot be opened. `home`: whose
        `~/.blitz/stores/` records the stores this user created (identity.py)."""
        return cls(open_store(url, workspace=root, home=home), root=root)

    @property
    def location(self) -> str | None:
        """Where the sessions are saved, as the user reads it; None in memory."""
        return self.link.store.location if self.link.store is not None else None

    def take_notices(self) -> list[str]:
        """The store's one-time notices (a foreign database moved aside), each given once."""
        notices, self.link.notices = self.link.notices, []
        return notices

    @property
    def store_problem(self) -> str | None:
        """One line: why sessions are not being saved (None while they are, or when the book
        was made without a store on purpose)."""
        return self.link.problem

    def get(self, name: str) -> Session:
        """The session, loaded from the store or created empty on first use in this kernel (a
        `%%blitz -s NAME` needs no ceremony). SessionBusyError when another kernel holds it."""
        if name not in self._sessions:
            self._sessions[name] = self._open(check_session_name(name), resumed=True)
        return self._sessions[name]

    def _open(self, name: str, *, resumed: bool) -> Session:
        store = self.link.store
        if store is None or self.locks is None:
            return Session(name=name, unsaved_reason=self.link.problem)
        try:
            self.locks.acquire(name)
        except StoreRefusedError as exc:  # a lock file that is not one: this session in memory
            return Session(name=name, unsaved_reason=f"{exc}; this session is kept in memory only")
        try:
            stored = store.open_session(name, holder=Holder.current().model_dump_json())
        except StoreError as exc:
            self.link.fail(exc)
            self.locks.release(name)
            return Session(name=name, unsaved_reason=self.link.problem)
        return Session.from_store(stored, SessionLog(self.link, stored.id), resumed=resumed)

    def _stored(self) -> list[SessionInfo]:
        return self.link.read(lambda store: store.sessions(), [])

    def names(self) -> list[str]:
        return sorted({*self._sessions, *(info.name for info in self._stored())})

    def listing(self) -> list[SessionListing]:
        """Every session, stored or in memory, without opening (or locking) any of them."""
        rows: dict[str, SessionListing] = {}
        if self.link.store is not None:
            for info in self._stored():
                held = self.locks.holder(info.name) if self.locks is not None else None
                rows[info.name] = SessionListing(
                    name=info.name,
                    turns=info.turns,
                    last_used=info.last_used,
                    usage=info.usage,
                    held_by=held,
                )
        for name, session in self._sessions.items():
            last = rows[name].last_used if name in rows else None
            rows[name] = SessionListing(name=name, turns=session.turns, last_used=last, usage=session.ledger.total)
        return [rows[name] for name in sorted(rows)]

    def snapshot_names(self) -> list[str]:
        stored: list[str] = self.link.read(lambda store: store.snapshot_names(), [])
        return sorted({*self._snapshots, *stored})

    def _exists(self, name: str) -> bool:
        return name in self._sessions or self.link.read(lambda store: store.exists(name), False)

    def create(self, name: str) -> Session:
        if self._exists(check_session_name(name)):
            raise SessionError(f"session {name!r} already exists")
        return self.get(name)

    def delete(self, name: str) -> None:
        """Delete the session and everything stored of it; asks nothing, but refuses one that
        is busy here or held by another kernel."""
        check_session_name(name)
        session = self._sessions.get(name)
        if session is not None and (session.running is not None or session.compacting):
            raise SessionBusyError(f"session {name!r} is busy; delete it after its turn ends")
        if not self._exists(name):
            raise SessionError(f"no session {name!r} (sessions: {', '.join(self.names()) or 'none'})")
        if session is not None and session.log is not None:
            session.log.write_held()  # a unit still waiting for the loop's pauses goes before the rows do
        store = self.link.store
        if store is not None and self.locks is not None:
            self.locks.acquire(name)  # SessionBusyError, naming the holder, if another kernel has it
            try:
                store.delete(name)
            except StoreError as exc:
                raise SessionError(str(exc)) from None
            finally:
                self.locks.release(name)
        self._sessions.pop(name, None)
        if self.root is not None:  # its undo records went with its rows; the copies go too
            shutil.rmtree(session_folder(self.root, name), ignore_errors=True)

    def release(self, name: str) -> None:
        """Let another kernel have the session (its state stays on disk)."""
        session = self._sessions.pop(name, None)
        if session is not None and session.log is not None:
            session_id = session.log.session_id
            session.log.write(lambda store, _: store.release(session_id))
        if self.locks is not None:
            self.locks.release(name)

    def close(self) -> None:
        """Release every session and close the store (the process exiting does the same)."""
        for name in list(self._sessions):
            self.release(name)
        if self.link.store is not None:
            self.link.store.close()
            self.link.store = None
        if self.locks is not None:
            self.locks.release_all()

    def snapshot(self, session: str, label: str) -> None:
        """A named frozen copy of the session as it is now."""
        store = self.link.store
        check_session_name(label)
        if label in self.snapshot_names():
            raise SessionError(f"snapshot {label!r} already exists")
        if store is None:
            self._snapshots[label] = _copy(self._existing(session), name=label)
            return
        if not self._exists(session):
            raise SessionError(f"no session {session!r} (sessions: {', '.join(self.names()) or 'none'})")
        current = self._sessions.get(session)
        if current is not None and current.log is not None:
            ledger = current.ledger
            current.log.write(lambda s, session_id: s.save_usage(session_id, ledger))
        try:
            store.copy(session, "session", label, "snapshot")
        except StoreError as exc:
            raise SessionError(str(exc)) from None

    def load(self, label: str, name: str | None = None) -> Session:
        """A new session that starts from the snapshot (named `label-2`, `label-3`… by default)."""
        if label not in self.snapshot_names():
            raise SessionError(f"no snapshot {label!r} (snapshots: {', '.join(self.snapshot_names()) or 'none'})")
        name = check_session_name(name or self._free_name(label))
        if self._exists(name):
            raise SessionError(f"session {name!r} already exists")
        store = self.link.store
        if store is None or label in self._snapshots:
            self._sessions[name] = _copy(self._snapshots[label], name=name)
            return self._sessions[name]
        try:
            store.copy(label, "snapshot", name, "session")
        except StoreError as exc:
            raise SessionError(str(exc)) from None
        self._sessions[name] = self._open(name, resumed=False)
        return self._sessions[name]

    def search(self, text: str, session: str | None = None) -> list[SearchHit]:
        """Passages of prompts, answers and tool results, compacted parts included,
        best first when stored (FTS5), in order when in memory."""
        if session is not None and not self._exists(session):
            raise SessionError(f"no session {session!r} (sessions: {', '.join(self.names()) or 'none'})")
        stored = self.link.read(lambda store: store.search(text, session), None)
        if stored is not None:
            return [
                SearchHit(
                    session=hit.session,
                    index=hit.message,
                    role=hit.role,
                    excerpt=hit.excerpt,
                    turn=hit.turn,
                    time=hit.time,
                    compacted=hit.compacted,
                    rewound=hit.rewound,
                )
                for hit in stored
            ]
        return self._search_memory(text, session)

    def _search_memory(self, text: str, session: str | None) -> list[SearchHit]:
        needle = text.lower()
        hits: list[SearchHit] = []
        for name in [session] if session else sorted(self._sessions):
            state = self._sessions[name]
            kept = len(state.archive) + len(state.history)
            for index, message in enumerate([*state.archive, *state.history, *state.rewound]):
                role, body = role_and_text(message)
                position = body.lower().find(needle)
                if needle and position >= 0:
                    hits.append(
                        SearchHit(
                            session=name,
                            index=index,
                            role=role,
                            excerpt=_excerpt(body, position, len(text)),
                            compacted=index < len(state.archive),
                            rewound=index >= kept,
                        )
                    )
        return hits

    def outcomes(self, name: str) -> list[TurnOutcome]:
        """How each stored turn of the session ended (empty in memory)."""
        return self.link.read(lambda store: store.outcomes(name), [])

    def _existing(self, name: str) -> Session:
        if name not in self._sessions:
            raise SessionError(f"no session {name!r} (sessions: {', '.join(self.names()) or 'none'})")
        return self._sessions[name]

    def _free_name(self, label: str) -> str:
        suffix = 2
        while self._exists(f"{label}-{suffix}"):
            suffix += 1
        return f"{label}-{suffix}"


def _copy(session: Session, name: str) -> Session:
    return Session(
        name=name,
        history=[m.model_copy(deep=True) for m in session.history],
        archive=[m.model_copy(deep=True) for m in session.archive],
        turns=session.turns,
        todos=list(session.todos),  # frozen items
    )


def _excerpt(body: str, position: int, length: int) -> str:
    start = max(0, position - SEARCH_CONTEXT_CHARS)
    end = min(len(body), position + length + SEARCH_CONTEXT_CHARS)
    marked = (
        body[start:position]
        + HIGHLIGHT[0]
        + body[position : position + length]
        + HIGHLIGHT[1]
        + body[position + length : end]
    )
    text = " ".join(marked.split())
    return ("…" if start else "") + text + ("…" if end < len(body) else "")
