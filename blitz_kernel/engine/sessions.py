"""The workspace's sessions and snapshots, and search over what they said (`%blitz_session`).

Kept in memory for now (durable storage is WS-02's SQLite store, not built yet): a kernel
restart starts afresh. A snapshot is a named deep copy; loading one starts a new session from
it, so the snapshot itself never changes (WS-02).
"""

from __future__ import annotations

from pydantic import BaseModel

from ..core.history import AssistantMessage, Message, SummaryMessage, ToolResultMessage, UserMessage
from ..errors import BlitzError, SessionBusyError
from .session import Session

SEARCH_CONTEXT_CHARS = 80


class SessionError(BlitzError):
    """A session or snapshot name that does not exist, or already does."""


class SearchHit(BaseModel):
    """One message that matched a search."""

    session: str
    index: int
    """Position in the session's transcript (archive first, then history)."""
    role: str
    excerpt: str


class SessionBook:
    """Sessions by name, plus snapshots."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._snapshots: dict[str, Session] = {}

    def get(self, name: str) -> Session:
        """The session, created empty on first use (a `%%blitz -s NAME` needs no ceremony)."""
        if name not in self._sessions:
            self._sessions[name] = Session(name=name)
        return self._sessions[name]

    def names(self) -> list[str]:
        return sorted(self._sessions)

    def snapshot_names(self) -> list[str]:
        return sorted(self._snapshots)

    def create(self, name: str) -> Session:
        if name in self._sessions:
            raise SessionError(f"session {name!r} already exists")
        return self.get(name)

    def delete(self, name: str) -> None:
        session = self._existing(name)
        if session.running is not None or session.compacting:
            raise SessionBusyError(f"session {name!r} is busy; delete it after its turn ends")
        del self._sessions[name]

    def snapshot(self, session: str, label: str) -> Session:
        """A named deep copy of the session as it is now."""
        if label in self._snapshots:
            raise SessionError(f"snapshot {label!r} already exists")
        self._snapshots[label] = _copy(self._existing(session), name=label)
        return self._snapshots[label]

    def load(self, label: str, name: str | None = None) -> Session:
        """A new session that starts from the snapshot (named `label-2`, `label-3`… by default)."""
        if label not in self._snapshots:
            raise SessionError(f"no snapshot {label!r} (snapshots: {', '.join(self.snapshot_names()) or 'none'})")
        name = name or self._free_name(label)
        if name in self._sessions:
            raise SessionError(f"session {name!r} already exists")
        self._sessions[name] = _copy(self._snapshots[label], name=name)
        return self._sessions[name]

    def search(self, text: str, session: str | None = None) -> list[SearchHit]:
        """Case-insensitive search over prompts, answers and tool results, compacted parts
        included (ENG-64 keeps them in the archive for this)."""
        needle = text.lower()
        hits: list[SearchHit] = []
        for name in [session] if session else self.names():
            state = self._existing(name)
            for index, message in enumerate([*state.archive, *state.history]):
                role, body = _role_and_text(message)
                position = body.lower().find(needle)
                if position >= 0:
                    hits.append(SearchHit(session=name, index=index, role=role, excerpt=_excerpt(body, position, len(text))))
        return hits

    def _existing(self, name: str) -> Session:
        if name not in self._sessions:
            raise SessionError(f"no session {name!r} (sessions: {', '.join(self.names()) or 'none'})")
        return self._sessions[name]

    def _free_name(self, label: str) -> str:
        suffix = 2
        while f"{label}-{suffix}" in self._sessions:
            suffix += 1
        return f"{label}-{suffix}"


def _copy(session: Session, name: str) -> Session:
    return Session(
        name=name,
        history=[m.model_copy(deep=True) for m in session.history],
        archive=[m.model_copy(deep=True) for m in session.archive],
        turns=session.turns,
        todos=[dict(item) for item in session.todos],
    )


def _role_and_text(message: Message) -> tuple[str, str]:
    if isinstance(message, UserMessage):
        return "user", message.text
    if isinstance(message, AssistantMessage):
        calls = " ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        return "assistant", " ".join(part for part in (message.text, calls) if part)
    if isinstance(message, ToolResultMessage):
        return f"result of {message.name}", message.output or message.error or ""
    assert isinstance(message, SummaryMessage)
    return "summary", message.text


def _excerpt(body: str, position: int, length: int) -> str:
    start = max(0, position - SEARCH_CONTEXT_CHARS)
    end = min(len(body), position + length + SEARCH_CONTEXT_CHARS)
    text = " ".join(body[start:end].split())
    return ("…" if start else "") + text + ("…" if end < len(body) else "")
