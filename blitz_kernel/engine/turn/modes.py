"""Plan mode and read-only modes.

In plan mode and in a named read-only mode only read-only and workflow tools run; everything
that could change something is refused with a fixed text the model reads as the tool result.
Sub-agents inherit the caller's mode (the check takes the mode, not the agent).
"""

from __future__ import annotations

from enum import Enum
from typing import Protocol

from pydantic import BaseModel

from ...core.terms import PlanStatus
from ...tools.registry import Tool, ToolKind


class TurnMode(Enum):
    """What a turn may do: everything (subject to approval), plan only, or the read-only
    mode of side questions. The value is the name the refusal texts use."""

    NORMAL = "normal"
    PLAN = "plan"
    BTW = "btw"

    @property
    def read_only(self) -> bool:
        """Only read-only and workflow tools run."""
        return self is not TurnMode.NORMAL


ASIDE_INSTRUCTIONS = """

## A side question
The user asks a quick side question while working. Answer it briefly from the conversation
so far and read-only tools. Do not change anything; this exchange is not recorded.
"""


def refusal(mode: TurnMode, tool: Tool) -> str | None:
    """The refusal text for `tool` in `mode`, or None when it may run."""
    if not mode.read_only or tool.kind is not ToolKind.MUTATING:
        return None
    if mode is TurnMode.PLAN:
        return (
            f"plan mode: {tool.name} is disabled because it could change something. "
            "Describe this step in the plan instead."
        )
    return f"{mode.value} is read-only: {tool.name} is disabled because it could change something."


PLAN_INSTRUCTIONS = """

## Plan mode
You are in plan mode: investigate with read-only tools only and change nothing. Then call
exit_plan_mode with a plan in Markdown that has:
1. **Objective** — what will be true when the work is done.
2. **Steps** — numbered, each naming the files, notebook cells, functions or variables involved.
3. **Risks and unknowns**.
4. **Verification** — how to check the result.
5. **Questions** — only those that block the plan.
"""


class PlanReview(BaseModel):
    """A person's answer to a proposed plan."""

    approved: bool
    reason: str | None = None


class PlanReviewer(Protocol):
    """Shows a plan for review (the widget's Approve plan / Reject buttons)."""

    async def review(self, plan: str) -> PlanReview | None:
        """The person's answer, or None when it turned out nobody can see the plan (then it is
        the turn's answer, as with no reviewer at all)."""
        ...


def go_ahead_prompt(plan: str) -> str:
    """The prompt of the carry-out turn that approving a plan starts."""
    return f"The user approved your plan. Carry it out now, step by step:\n\n{plan}"


def plan_feedback(status: PlanStatus, reason: str | None = None) -> str:
    """What the model reads as exit_plan_mode's result."""
    if status == "approved":
        return "The user approved the plan. This turn ends here; the carry-out turn starts next."
    if status == "unreviewed":
        return "Nobody can review the plan here (headless): it is this turn's answer. Stop now."
    because = f": {reason}" if reason else ""
    return f"The user rejected the plan{because}. Revise it (still in plan mode) and call exit_plan_mode again."


SUBAGENT_READ_ONLY = """

## Read-only
The turn that called you is in a read-only mode: use read-only tools only and change nothing.
"""

MODE_INSTRUCTIONS = {TurnMode.PLAN: PLAN_INSTRUCTIONS, TurnMode.BTW: ASIDE_INSTRUCTIONS}
"""What the system prompt gains in each mode."""
