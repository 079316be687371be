"""The sessions service: what the facade says about a session's history and spend — its usage,
budget, context fill and audit trail — and undoing its turns (docs/undo.md)."""

from __future__ import annotations

from pathlib import Path

from ...core.usage import UsageLedger
from ...tools.notebook import NotebookAccess
from ..safety.audit import AuditRecord
from ..store.sessions import SessionBook
from ..turn.budget import add_session_budget
from ..turn.context import ContextWindows
from ..undo.undo import UndoReport, check_undo_request, undo_turns
from .builder import TurnBuilder
from .configuration import Configuration


class SessionService:
    """Reads and undoes sessions of one workspace."""

    def __init__(
        self,
        root: Path,
        sessions: SessionBook,
        contexts: ContextWindows,
        configuration: Configuration,
        builder: TurnBuilder,
    ) -> None:
        self.root, self.sessions, self.contexts = root, sessions, contexts
        self.configuration, self.builder = configuration, builder

    def usage(self, session: str) -> UsageLedger:
        return self.sessions.get(session).ledger

    def add_budget(self, session: str, usd: float) -> float:
        """Add `usd` to the session's budget (lifting a trip); returns what is left."""
        policy = self.configuration.policy
        if policy is not None and policy.holds("limits.max_cost_usd_session"):  # the administrator's cap
            raise policy.locked_error("limits.max_cost_usd_session")
        limit = self.configuration.config.limits.max_cost_usd_session
        return add_session_budget(self.sessions.get(session), usd, limit)

    def context_of(self, session: str) -> str | None:
        """How full the session's context is ("ctx 42 % of 128K (litellm)"), from its last
        prompt; None before any model call. The window is the current model's."""
        used = self.sessions.get(session).ledger.last_prompt_tokens
        return self.contexts.fill(used, self.configuration.model, self.configuration.config)

    def audit(self, session: str) -> list[AuditRecord]:
        """Every tool call of the session, with its decision and who made it."""
        return list(self.sessions.get(session).audit)

    async def undo(
        self, session: str, turns: int, files: bool, conversation: bool, force: bool, through_turn: int | None
    ) -> UndoReport:
        """Undo the newest turns; refused while a turn or compaction runs; never creates a session."""
        check_undo_request(turns, files, conversation, through_turn)
        if session not in self.sessions.names():
            return UndoReport(session=session, nothing_to_undo=True)
        kernel = self.builder.kernel
        bridge = getattr(kernel, "notebook", None) if kernel is not None else None
        notebook = bridge if isinstance(bridge, NotebookAccess) else None
        state = self.sessions.get(session)
        return await undo_turns(self.root, state, notebook, turns, files, conversation, force, through_turn)

    async def truncate(self, session: str, turns: int) -> UndoReport:
        """Drop the newest `turns` turns from the conversation only (files, cells and variables
        stay as they are); recorded as an append-only rewind marker, like an undo's."""
        return await self.undo(session, turns, False, True, False, None)
