"""The plan a turn may propose, and the mode it runs in now: `enter_plan_mode` switches a turn to
plan mode from its next call, `exit_plan_mode` submits a plan for review. Kept apart from the
loop because it is the one part of a turn's state that tools change while it runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ...core.terms import PlanStatus
from ..events import Event, PlanEvent
from .modes import MODE_INSTRUCTIONS, PlanReviewer, TurnMode, plan_feedback


class PlanFlow:
    """The turn's mode and instructions as they stand, and the plan it proposed."""

    def __init__(
        self, mode: TurnMode, system: str, reviewer: PlanReviewer | None, emit: Callable[[Event], Awaitable[None]]
    ) -> None:
        self.mode = mode
        self._base_system = system
        self.system = system
        """The instructions the next request carries (the mode's text added in plan mode)."""
        self._reviewer = reviewer
        self._emit = emit
        self.proposed: str | None = None
        self.status: PlanStatus | None = None
        self.end_with: str | None = None
        """Set when the turn must end after the current batch, with this text as its answer."""

    def enter_plan_mode(self) -> None:
        if self.mode is not TurnMode.PLAN:
            self.mode = TurnMode.PLAN
            self.system = self._base_system + MODE_INSTRUCTIONS[TurnMode.PLAN]

    async def submit(self, plan: str) -> str:
        """Show the plan for review; with nobody to review it, it is the answer. Returns what
        the model reads as the tool's result."""
        self.proposed = plan
        review = await self._reviewer.review(plan) if self._reviewer is not None else None
        reason = None
        if review is None:
            status: PlanStatus = "unreviewed"
        else:
            status, reason = ("approved" if review.approved else "rejected"), review.reason
        self.status = status
        if status != "rejected":
            self.mode = TurnMode.NORMAL if self.mode is TurnMode.PLAN else self.mode
            self.end_with = plan
        await self._emit(PlanEvent(plan=plan, status=status, reason=reason))
        return plan_feedback(status, reason)
