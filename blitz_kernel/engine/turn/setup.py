"""What a turn is given and what it gives back: `TurnSetup` in, `TurnResult` out.

The workspace resolves every choice of a turn (agent, model, tools, limits, approval, mode)
into one frozen `TurnSetup` before the turn starts; the loop only reads it. The mode a turn
*runs* in may still change (`enter_plan_mode`): that is the runner's state, not the
setup's.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, Field

from ...core.budget_ledger import BudgetLedger
from ...core.history import ToolResultMessage
from ...core.redact import Redactor
from ...core.terms import PlanStatus, Policy, Reasoning, StopReason, ToolPolicy
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
from .structured import OutputSchema

TURN_SPAN = "blitz.turn"
"""Span of a turn; linked to the session's previous turn."""
ASIDE_SPAN = "blitz.aside"


class TurnResult(BaseModel):
    """What a turn returns (docs/interface.md), and what `--out NAME` stores."""

    text: str
    stop_reason: StopReason
    error: str | None = None
    usage: UsageTotals
    events: list[Event] = Field(default_factory=list, repr=False)
    leftovers: list[str] = Field(default_factory=list)
    """Steer messages no tool result carried; the front end sends them as the next prompt."""
    dropped: list[str] = Field(default_factory=list)
    """Steer messages dropped because the turn did not end normally."""
    session: str
    turn_index: int
    plan: str | None = None
    """The plan proposed with exit_plan_mode, if any."""
    plan_status: PlanStatus | None = None
    """"approved": the front end starts the carry-out turn (`go_ahead_prompt`)."""
    undoable: bool = False
    """The turn changed files, cells or variables: `Workspace.undo` has something to undo."""
    output: Any = None
    """The validated structured answer of a turn run with a schema (`--schema`), else None."""


DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed for a model nobody describes (local OpenAI-compatible servers): large
enough for today's models, small enough that compaction still happens before most fail."""
THRESHOLD_SHARE = 0.8
"""Auto-compaction starts at this share of the window."""


@dataclass(frozen=True)
class ContextWindow:
    """How many tokens the turn's model can read, and where that number came from."""

    tokens: int
    source: str
    """"models.<key>", "litellm" or "default": shown so a wrong guess can be corrected."""
    threshold: int
    """Compact before a step whose prompt would pass this."""

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
    session_budget_locked: bool = False
    """The admin policy holds `limits.max_cost_usd_session`: budget added before it did (and
    kept in the store) no longer raises the ceiling."""
    repeat_warn: int = 3
    repeat_stop: int = 5
    shared_budget: BudgetLedger | None = None
    """The budget several runs share (`limits.shared_budget_file`), checked before each call."""
    spent_before_s: float = 0.0
    """Wall-clock seconds the turn's setup already used (model lookups): `timeout_s` covers them."""

    def time_left(self) -> float | None:
        if self.timeout_s is None:
            return None
        return max(self.timeout_s - self.spent_before_s, 0.001)


@dataclass(frozen=True)
class ModelChoice:
    """Which agent asks which model, with what instructions, at what price, in what window:
    resolved once per turn, so the model the pre-flight check looked at is the one that runs."""

    model: Model
    agent: str
    system: str
    """The agent's instructions plus the mode's."""
    prices: PriceBook
    context: ContextWindow = field(
        default_factory=lambda: ContextWindow(
            DEFAULT_CONTEXT_WINDOW, "default", int(DEFAULT_CONTEXT_WINDOW * THRESHOLD_SHARE)
        )
    )
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning: Reasoning | None = None
    compaction: bool = True
    """Automatic compaction allowed (asides never compact: they must not change the session)."""
    retain_events: int = 20
    """Events kept verbatim after an automatic compaction."""
    override: str | Model | None = None
    """The run's own model (`-m`), which the turn's unpinned sub-agents follow too."""
    output: OutputSchema | None = None
    """The shape the turn's answer must have (`--schema`); its sub-agents answer in text."""


@dataclass(frozen=True)
class ToolRuntime:
    """Everything a tool batch talks to: the tools, what they may touch, who approves them,
    which policies and hooks apply, how results are redacted, how many run at once. One object,
    so a new rule about running tools changes this and the batch, not the loop."""

    tools: dict[str, Tool]
    """The agent's tools."""
    context: ToolContext
    """The template of the turn's tool context; the runner derives the turn's own (with its
    deadline and its access to the turn) from it, so the setup is never changed."""
    gate: ApprovalGate
    redactor: Redactor = field(default_factory=lambda: Redactor(()))
    """Secrets replaced in every tool result before anyone reads it."""
    policies: dict[str, ToolPolicy] = field(default_factory=dict)
    allowed_tools: tuple[str, ...] | None = None
    """When set, every other tool is refused (`--tools`)."""
    approve_override: Policy | None = None
    """`--approve` for this turn."""
    locked: dict[str, ToolPolicy] = field(default_factory=dict)
    """The admin policy's per-tool policies (`deny` for a disabled tool): nothing loosens them."""
    locked_by: str | None = None
    """The admin policy file, named when a call is refused for it."""
    hooks: HookRunner | None = None
    """prompt_submit / pre_tool / post_tool hooks."""
    max_parallel: int = 8
    keep_turns: int = 5
    caller: str | None = None
    """The outside client the calls run for (`FrontEnd.caller`), named in the audit trail."""
    """Turns whose replaced variables stay referenced for undo (`checkpoints.keep_turns`)."""


@dataclass(frozen=True)
class Observers:
    """Who hears about the turn: the front end's event handler, the tracer, the notices found
    while setting the turn up (sent right after `turn_started`), and the watchers."""

    on_event: EventHandler | None = None
    telemetry: Telemetry = field(default_factory=lambda: Telemetry(enabled=False))
    span_name: str = TURN_SPAN
    notices: tuple[Event, ...] = ()
    watchers: tuple[TurnWatcher, ...] = ()


class TurnWatcher(Protocol):
    """A feature's hook into a turn, called at the loop's fixed points — before each model
    call, after each tool result, at the turn's end — so a feature that needs to see or count
    those adds a watcher (docs/extending.md), not a branch in the loop. A watcher that raises
    ends the turn like any error."""

    async def before_call(self, setup: TurnSetup, step: int) -> None:
        """Before model call number `step` (1-based) of the turn."""
        ...

    async def after_result(self, setup: TurnSetup, result: ToolResultMessage) -> None:
        """After a tool call's result, before the model reads it."""
        ...

    async def at_end(self, setup: TurnSetup, result: TurnResult) -> None:
        """Once the turn has ended, however it ended (its result as the caller gets it)."""
        ...


class SubagentLauncher(Protocol):
    """What the loop asks of the sub-agents service: who can be invoked, and the setup of a
    sub-agent's turn under the calling turn's limits. The loop runs that turn itself, so this
    module and the service never import the loop."""

    def available(self, caller: str) -> list[tuple[str, str]]:
        """(name, description) of every agent the caller may invoke."""
        ...

    async def setup_for(self, caller: TurnSetup, mode: TurnMode, agent: str, on_event: EventHandler) -> TurnSetup:
        """The sub-agent's turn, resolved like any turn's but inside the caller's limits."""
        ...


@dataclass(frozen=True)
class Helpers:
    """The collaborators a turn may call on: a plan reviewer and the sub-agents service."""

    plan_reviewer: PlanReviewer | None = None
    """Who reviews a proposed plan; None means nobody can (the plan is the answer)."""
    subagents: SubagentLauncher | None = None
    """Starts sub-agents for `invoke_agent`; None where there are none to start."""


@dataclass(frozen=True)
class TurnSetup:
    """Everything one turn needs, resolved by the workspace before it starts and never changed
    afterwards: what changes while the turn runs (its mode, deadline, steps) is the runner's."""

    session: Session
    choice: ModelChoice
    runtime: ToolRuntime
    limits: TurnLimits = field(default_factory=TurnLimits)
    observers: Observers = field(default_factory=Observers)
    helpers: Helpers = field(default_factory=Helpers)
    mode: TurnMode = TurnMode.NORMAL
    """The mode the turn starts in."""
    depth: int = 0
    """0 for a turn the user started; 1.. for sub-agents."""


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
