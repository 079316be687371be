"""One-time notices at a turn's start: what the user should know once per kernel, not on
every turn — settings an untrusted workspace holds back, agent files that were skipped
because they could not be read, and project-memory files skipped (each named once)."""

from __future__ import annotations

from collections.abc import Iterable

from ...config.trust import TrustState
from ..events import NoticeEvent
from ..turn.agents import AgentRegistry


class NoticeBoard:
    """Remembers which notices this kernel has shown."""

    def __init__(self, trust_due: bool) -> None:
        self._trust_due = trust_due
        self._shown: set[str] = set()

    def take(
        self, trust: TrustState, agents: AgentRegistry, store: Iterable[str] = (), skipped_files: Iterable[str] = ()
    ) -> tuple[NoticeEvent, ...]:
        """The notices for the next turn the user started, each at most once. `store`: the
        session store's own (a foreign database moved aside); `skipped_files`: other files the
        turn did not read (project memory)."""
        notices: list[NoticeEvent] = [NoticeEvent(kind="store", message=problem) for problem in store]
        if self._trust_due and trust.due:
            self._trust_due = False
            notices.append(NoticeEvent(kind="untrusted_workspace", message=trust.notice()))
        for problem in (*agents.skipped.values(), *skipped_files):
            if problem not in self._shown:
                self._shown.add(problem)
                notices.append(NoticeEvent(kind="agent_file", message=problem))
        return tuple(notices)
