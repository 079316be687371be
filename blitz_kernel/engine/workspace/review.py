"""The review service: a turn's change list, and keeping or reverting its changes one by one
(docs/undo.md). The logic is the undo room's (undo/review.py); this service finds the session
and the notebook front end, never creates a session by asking, and redacts the list (diffs show
file contents, and the list goes to cell outputs and the widget: docs/safety.md)."""

from __future__ import annotations

from pathlib import Path

from ...errors import BlitzError
from ...tools.notebook import NotebookAccess
from ..store.sessions import SessionBook
from ..undo.changes import TurnChanges
from ..undo.review import RevertReport, keep_changes, list_changes, revert_changes
from .builder import TurnBuilder


class ReviewService:
    """Reviews the turns of one workspace's sessions."""

    def __init__(self, root: Path, sessions: SessionBook, builder: TurnBuilder) -> None:
        self.root, self.sessions, self.builder = root, sessions, builder

    def changes(self, turn: int | None = None, *, session: str = "default", by: str | None = None) -> TurnChanges:
        """`Workspace.changes`: the change list of `turn` (counted from 1; None: the newest turn
        that changed something); `by` (who looks) records the review in the audit trail."""
        if session not in self.sessions.names():
            return TurnChanges(session=session, turn=None)
        return self._redacted(list_changes(self.root, self.sessions.get(session), _index(turn), by))

    async def revert(
        self, change_ids: list[str], force: bool = False, *, session: str = "default", by: str = "api"
    ) -> RevertReport:
        """`Workspace.revert`: put back the changes `change_ids` name, leaving the others
        (conflicts skipped unless `force`); BlitzError for an unknown id, before anything is
        touched."""
        if session not in self.sessions.names():
            raise BlitzError(f"session {session!r} has no turns to revert")
        return await revert_changes(self.root, self.sessions.get(session), self._bridge(), change_ids, force, by)

    def keep(
        self,
        change_ids: list[str] | None = None,
        *,
        session: str = "default",
        turn: int | None = None,
        by: str = "api",
    ) -> TurnChanges:
        """Keep the changes `change_ids` name (None: every open change of `turn`, counted from
        1, or of the newest turn that changed something: the review is closed)."""
        if session not in self.sessions.names():
            return TurnChanges(session=session, turn=None)
        return self._redacted(keep_changes(self.root, self.sessions.get(session), change_ids, _index(turn), by))

    def _redacted(self, listed: TurnChanges) -> TurnChanges:
        redactor = self.builder.configuration.redactor
        return redactor.redact_value(listed) if redactor else listed

    def _bridge(self) -> NotebookAccess | None:
        kernel = self.builder.kernel
        bridge = getattr(kernel, "notebook", None) if kernel is not None else None
        return bridge if isinstance(bridge, NotebookAccess) else None


def _index(turn: int | None) -> int | None:
    if turn is None:
        return None
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise BlitzError(f"turn is counted from 1, got {turn!r}")
    return turn - 1
