"""What one run asks for, and who it talks to: typed, frozen, checked once.

`RunOptions` is what the person chose for this turn (`%%blitz` options, `Workspace.run`'s
keyword arguments): agent, model, mode, limits, allowed tools, approval override. `FrontEnd`
is who the turn talks to: the approver, the plan reviewer, the event handler, the kernel.
Both are frozen so no layer patches a field after another layer read it; a follow-up turn
(an approved plan's carry-out) is a `dataclasses.replace` of the options, not an edit.

Numbers are checked here, where they enter the engine: a NaN cost ceiling would compare
false against every spend and silently lift the ceiling, and an infinite timeout overflows the
timers the tools arm.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...core.numbers import MAX_COST_USD, MAX_TIMEOUT_S, MAX_TURNS, RunOptionError, check_number
from ...core.terms import Policy, Reasoning
from .modes import TurnMode

if TYPE_CHECKING:
    from ...models.base import Model
    from ...tools.registry import KernelContext
    from ..events import Event
    from ..safety.approval import Approver
    from .modes import PlanReviewer
    from .structured import OutputSchema

EventHandler = Callable[["Event"], Awaitable[None] | None]


@dataclass(frozen=True)
class RunOptions:
    """Per-run choices; None means "the configuration's value"."""

    agent: str | None = None
    model: str | Model | None = None
    mode: TurnMode = TurnMode.NORMAL
    max_turns: int | None = None
    max_cost_usd: float | None = None
    timeout_s: float | None = None
    tools: tuple[str, ...] | None = None
    """Only these tools may run."""
    approve: Policy | None = None
    """The approval policy for mutating tools this turn (`--approve`)."""
    inherited_model: str | Model | None = None
    """A sub-agent's caller's per-run model (`-m`): used when the agent pins no model."""
    output: OutputSchema | None = None
    """The structured answer the turn must end with (`--schema`; docs/structured-output.md)."""
    reasoning: Reasoning | None = None
    """How hard the model thinks this turn (`--think`); None: the agent's, else the config's."""

    def __post_init__(self) -> None:
        check_number("max_turns", self.max_turns, upper=MAX_TURNS, integer=True)
        check_number("max_cost_usd", self.max_cost_usd, upper=MAX_COST_USD)
        check_number("timeout", self.timeout_s, upper=MAX_TIMEOUT_S)
        if self.tools is not None and not self.tools:
            raise RunOptionError("the allowed tools list is empty: name at least one tool")

    @property
    def plan(self) -> bool:
        return self.mode is TurnMode.PLAN


@dataclass(frozen=True)
class FrontEnd:
    """Who a turn talks to. Every part is optional: no approver is headless, no
    reviewer means nobody can review a plan (it is the answer), no handler discards events."""

    approver: Approver | None = None
    plan_reviewer: PlanReviewer | None = None
    on_event: EventHandler | None = None
    kernel: KernelContext | None = None
    caller: str | None = None
    """The client outside the notebook the turn runs for ("mcp:claude-code"): its audit rows
    name it. None for the notebook's own turns."""
