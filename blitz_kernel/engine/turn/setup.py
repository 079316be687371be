"""What a turn is given and what it gives back: `TurnSetup` in, `TurnResult` out.

The workspace resolves every choice of a turn (agent, model, tools, limits, approval, mode)
into one frozen `TurnSetup` before the turn starts; the loop only reads it. The mode a turn
*runs* in may still change (`enter_plan_mode`, ENG-34): that is the runner's state, not the
setup's.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from ...core.redact import Redactor
from ...core.terms import PlanStatus, Policy, StopReason, ToolPolicy
from ...core.usage import PriceBook, UsageTotals
from ...models.base import Model
from ...tools.registry import Tool, ToolContext
from ..events import ErrorEvent, Event, TurnDone
from ..safety.approval import ApprovalGate
from ..safety.hooks import HookRunner
from ..store.session import Session
from ..tracing import Telemetry
from .modes import PlanReviewer, TurnMode
from .options import EventHandler
from .subagents import Subagents

TURN_SPAN = "blitz.turn"
"""Span of a turn; linked to the session's previous turn (ENG-91)."""
ASIDE_SPAN = "blitz.aside"


class TurnResult(BaseModel):
    """What a turn returns (INTERFACE.md), and what `--out NAME` stores."""

    text: str
    stop_reason: StopReason
    error: str | None = None
    usage: UsageTotals
    events: list[Event] = Field(default_factory=list, repr=False)
    leftovers: list[str] = Field(default_factory=list)
    """Steer messages no tool result carried; the front end sends them as the next prompt."""
    dropped: list[str] = Field(default_factory=list)
    """Steer messages dropped because the turn did not end normally (ENG-41)."""
    session: str
    turn_index: int
    plan: str | None = None
    """The plan proposed with exit_plan_mode, if any."""
    plan_status: PlanStatus | None = None
    """"approved": the front end starts the carry-out turn (`go_ahead_prompt`)."""
    undoable: bool = False
    """The turn changed files, cells or variables: `Workspace.undo` has something to undo."""


DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed for a model nobody describes (local OpenAI-compatible servers): large
enough for today's models, small enough that compaction still happens before most fail."""
THRESHOLD_SHARE = 0.8
"""Auto-compaction starts at this share of the window (ENG-60)."""


@dataclass(frozen=True)
class ContextWindow:
    """How many tokens the turn's model can read, and where that number came from."""

    tokens: int
    source: str
    """"models.<key>", "litellm" or "default": shown so a wrong guess can be corrected."""
    threshold: int
    """Compact before a step whose prompt would pass this (ENG-60)."""

    def fill(self, used: int) -> str:
        """'ctx 42 % of 128K': how full the window is after a prompt of `used` tokens."""
        size = f"{self.tokens / 1000:g}K" if self.tokens >= 1000 else str(self.tokens)
        return f"ctx {round(100 * used / self.tokens)} % of {size}"


@dataclass(frozen=True)
class TurnLimits:
    max_turns: int = 50
    max_cost_usd: float | None = None
    timeout_s: float | None = None
    max_cost_usd_session: float | None = None
    repeat_warn: int = 3
    repeat_stop: int = 5
    spent_before_s: float = 0.0
    """Wall-clock seconds the turn's setup already used (model lookups): `timeout_s` covers them."""

    def time_left(self) -> float | None:
        if self.timeout_s is None:
            return None
        return max(self.timeout_s - self.spent_before_s, 0.001)


@dataclass(frozen=True)
class TurnSetup:
    """Everything one turn needs, resolved by the workspace before it starts."""

    session: Session
    model: Model
    agent: str
    system: str
    """The agent's instructions plus the mode's (ENG-02, ENG-32)."""
    tools: dict[str, Tool]
    """The agent's tools (ENG-04)."""
    tool_context: ToolContext
    gate: ApprovalGate
    prices: PriceBook
    limits: TurnLimits = field(default_factory=TurnLimits)
    allowed_tools: tuple[str, ...] | None = None
    """ENG-17: when set, every other tool is refused."""
    policies: dict[str, ToolPolicy] = field(default_factory=dict)
    approve_override: Policy | None = None
    max_parallel: int = 8
    mode: TurnMode = TurnMode.NORMAL
    """The mode the turn starts in (ENG-30)."""
    compaction: bool = True
    """Automatic compaction allowed (asides never compact, ENG-51)."""
    context: ContextWindow = field(
        default_factory=lambda: ContextWindow(
            DEFAULT_CONTEXT_WINDOW, "default", int(DEFAULT_CONTEXT_WINDOW * THRESHOLD_SHARE)
        )
    )
    retain_events: int = 20
    plan_reviewer: PlanReviewer | None = None
    """Who reviews a proposed plan; None means nobody can (the plan is the answer)."""
    telemetry: Telemetry = field(default_factory=lambda: Telemetry(enabled=False))
    span_name: str = TURN_SPAN
    temperature: float | None = None
    max_tokens: int | None = None
    on_event: EventHandler | None = None
    hooks: HookRunner | None = None
    """prompt_submit / pre_tool / post_tool hooks (WS-04)."""
    redactor: Redactor = field(default_factory=lambda: Redactor(()))
    """Secrets replaced in every tool result before anyone reads it (WS-08)."""
    depth: int = 0
    """0 for a turn the user started; 1.. for sub-agents (ENG-70)."""
    subagents: Subagents | None = None
    """Starts sub-agents for `invoke_agent`; None where there are none to start."""
    keep_turns: int = 5
    """Turns whose replaced variables stay referenced for undo (`checkpoints.keep_turns`)."""
    notices: tuple[Event, ...] = ()
    """Problems found while setting the turn up (an MCP server that did not start), sent to
    the front end right after `turn_started`."""


async def refused_before_start(
    reason: str, session: str, turn_index: int, on_event: EventHandler | None, stop: StopReason = "error"
) -> TurnResult:
    """A turn that could not start (its model can never answer, or its --timeout ran out
    while the model was looked up): the front end shows why and nothing is recorded."""
    usage = UsageTotals()
    events: list[Event] = [ErrorEvent(kind=stop, message=reason), TurnDone(stop_reason=stop, usage=usage, error=reason)]
    if on_event is not None:
        for event in events:
            outcome = on_event(event)
            if inspect.isawaitable(outcome):
                await outcome
    return TurnResult(
        text="", stop_reason=stop, error=reason, usage=usage, events=events, session=session, turn_index=turn_index
    )
