"""One-time notices at a turn's start: what the user should know once per kernel, not on
every turn — settings an untrusted workspace holds back, agent files that were skipped
because they could not be read, and project-memory files skipped (each named once)."""

from __future__ import annotations

from collections.abc import Iterable

from ...config.trust import TrustState
from ..events import ErrorEvent
from ..turn.agents import AgentRegistry


class NoticeBoard:
    """Remembers which notices this kernel has shown."""

    def __init__(self, trust_due: bool) -> None:
        self._trust_due = trust_due
        self._shown: set[str] = set()

    def take(
        self, trust: TrustState, agents: AgentRegistry, skipped_files: Iterable[str] = ()
    ) -> tuple[ErrorEvent, ...]:
        """The notices for the next turn the user started, each at most once; `skipped_files`
        names other files the turn did not read (project memory)."""
        notices: list[str] = []
        if self._trust_due and trust.due:
            self._trust_due = False
            notices.append(trust.notice())
        for problem in (*agents.skipped.values(), *skipped_files):
            if problem not in self._shown:
                self._shown.add(problem)
                notices.append(problem)
        return tuple(ErrorEvent(kind="notice", message=notice) for notice in notices)
