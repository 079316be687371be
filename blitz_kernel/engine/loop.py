"""One turn: model step → tool batch → model step … until the model answers (ENGINE.md §2, §3).

Reads top-down like the rules: `run` wraps the turn in its limits and turns every way a turn
can end into a stop reason; `_steps` is the step loop; `_run_batch` runs one response's tool
calls (screening, approval, at most `max_parallel` at once, results in call order).
Whatever happens, the history stays valid: every tool call gets a result, a cancelled one if
need be, and the turn's messages reach the session in one piece at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel, Field

from ..core.history import (
    AssistantMessage,
    ImagePart,
    Message,
    ToolCall,
    ToolResultMessage,
    check_history,
    user_prompt,
)
from ..core.usage import PriceBook, TokenUsage, UsageTotals
from ..errors import (
    BlitzError,
    ContextWindowError,
    MaxCostError,
    MaxTurnsError,
    ModelError,
    NothingToCompactError,
    TurnLimitError,
)
from ..models.base import Model, ModelRequest, ModelResponse, TextDelta, supports_vision
from ..tools.registry import Tool, ToolContext, ToolError, ToolKind, ToolOutput
from .approval import ApprovalGate, Policy, resolve_policy
from .compaction import Compactor, automatic_window, estimate_tokens
from .events import (
    CompactionEvent,
    ErrorEvent,
    Event,
    PendingCall,
    PermissionDecision,
    PlanEvent,
    SteerEvent,
    StopReason,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
    UsageEvent,
    shown_images,
)
from .modes import PLAN_INSTRUCTIONS, PLAN_MODE, PlanReviewer, PlanStatus, plan_feedback, refusal
from .session import Session
from .steering import TurnControl
from .tracing import Telemetry, mark_error

EventHandler = Callable[[Event], Awaitable[None] | None]
TURN_SPAN = "blitz.turn"
CANCELLED_RESULT = "cancelled: the turn was stopped before this call finished"
PREVIEW_CHARS = 300


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
    """Steer messages dropped because the turn was cancelled (ENG-41)."""
    session: str
    turn_index: int
    plan: str | None = None
    """The plan proposed with exit_plan_mode, if any."""
    plan_status: PlanStatus | None = None
    """"approved": the front end starts the carry-out turn (`go_ahead_prompt`)."""


@dataclass
class TurnLimits:
    max_turns: int = 50
    max_cost_usd: float | None = None
    timeout_s: float | None = None


@dataclass
class TurnPlan:
    """Everything one turn needs, resolved by the workspace before it starts."""

    session: Session
    model: Model
    agent: str
    system: str
    tools: dict[str, Tool]
    """The agent's tools (ENG-04)."""
    tool_context: ToolContext
    gate: ApprovalGate
    prices: PriceBook
    limits: TurnLimits = field(default_factory=TurnLimits)
    allowed_tools: list[str] | None = None
    """ENG-17: when set, every other tool is refused."""
    policies: dict[str, Policy] = field(default_factory=dict)
    approve_override: Policy | None = None
    max_parallel: int = 8
    mode: str | None = None
    """None, "plan", or a named read-only mode such as "btw" (ENG-30)."""
    compaction: bool = True
    """Automatic compaction allowed (asides never compact, ENG-51)."""
    token_threshold: int | None = None
    """Compact before a step whose prompt would pass this (ENG-60); None: never."""
    retain_events: int = 20
    plan_reviewer: PlanReviewer | None = None
    """Who reviews a proposed plan; None means nobody can (the plan is the answer)."""
    telemetry: Telemetry = field(default_factory=lambda: Telemetry(enabled=False))
    span_name: str = "blitz.turn"
    """"blitz.turn" for turns (linked to the previous turn); "blitz.aside" for asides."""
    temperature: float | None = None
    max_tokens: int | None = None
    on_event: EventHandler | None = None


class _GracefulStop(Exception):
    """The user asked the turn to stop after the current step."""


class EventHandlerError(BlitzError):
    """A front end's event handler raised: the turn aborts (ENG-15)."""


class TurnRunner:
    """Runs one turn of `plan.session`; use once."""

    def __init__(self, plan: TurnPlan, control: TurnControl) -> None:
        self.plan = plan
        self.control = control
        self.pending: AssistantMessage | None = None
        """The response whose tool calls are running; committed with all its results."""
        self.results: dict[str, ToolResultMessage] = {}
        """Results of the pending response's calls, as they finish."""
        self.shown_images: dict[str, list[ImagePart]] = {}
        """Images a call showed the user, by call id, until its result event carries them:
        they are no part of the history the model reads."""
        self.events: list[Event] = []
        self.usage = UsageTotals()
        self.model_calls = 0
        self._warned_unpriced = False
        self._specs = [tool.spec() for tool in plan.tools.values()]
        self.mode = plan.mode
        """The turn's mode; `enter_plan_mode` switches it from the next call (ENG-34)."""
        self.system = plan.system
        self.proposed_plan: str | None = None
        self.plan_status: PlanStatus | None = None
        self._end_with: str | None = None
        """Set when the turn must end after the current batch, with this text as its answer."""
        plan.tool_context.turn = self

    async def run(self, prompt: str) -> TurnResult:
        """The turn, inside its span (ENG-90): the root of its own trace, linked to the
        session's previous turn (ENG-91)."""
        plan = self.plan
        telemetry = plan.telemetry
        attributes = {
            "blitz.agent": plan.agent, "blitz.model": plan.model.name, "blitz.session": plan.session.name,
            "blitz.turn_index": plan.session.turns, "blitz.prompt_length": len(prompt), "blitz.attachments": 0,
            "blitz.max_turns": plan.limits.max_turns, "blitz.plan": plan.mode == PLAN_MODE,
            "blitz.mode": plan.mode, "blitz.prompt": telemetry.content(prompt),
        }
        previous = None if plan.span_name != TURN_SPAN else plan.session.last_turn_span
        with telemetry.root_span(plan.span_name, attributes, previous) as span:
            result = await self._run(prompt)
            span.set_attributes({
                "blitz.model_calls": self.model_calls, "blitz.input_tokens": result.usage.input_tokens,
                "blitz.output_tokens": result.usage.output_tokens, "blitz.cost_usd": result.usage.cost_usd,
                "blitz.priced": result.usage.priced, "blitz.stop_reason": result.stop_reason,
            })
            if result.error is not None:
                mark_error(span, result.error)
            if plan.span_name == TURN_SPAN:
                plan.session.last_turn_span = span.get_span_context()
        return result

    async def _run(self, prompt: str) -> TurnResult:
        plan = self.plan
        turn_index = plan.session.turns
        self._commit(user_prompt(prompt))
        text, error = "", None
        stop: StopReason = "end_turn"
        deadline = asyncio.timeout(plan.limits.timeout_s)
        if plan.limits.timeout_s is not None:
            # Tools that block the loop (run_python) cannot be reached by asyncio.timeout; they
            # read this and stop themselves in time (ENG-14).
            plan.tool_context.deadline = time.monotonic() + plan.limits.timeout_s
        try:
            await self._emit(
                TurnStarted(
                    session=plan.session.name, turn_index=turn_index, prompt=prompt,
                    agent=plan.agent, model=plan.model.name,
                )
            )
            async with deadline:
                text = await self._steps()
        except TimeoutError as exc:
            stop, error = self._timeout_reason(deadline, exc)
        except asyncio.CancelledError:
            stop = "cancelled"
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                task.uncancel()  # the turn is over and reported; the caller's cell goes on
        except _GracefulStop:
            stop = "cancelled"
        except TurnLimitError as exc:
            stop, error = cast(StopReason, exc.stop_reason), str(exc)
        except BlitzError as exc:  # model errors (ENG-15), failing handlers, compaction
            stop, error = "error", str(exc)
        except Exception as exc:  # a bug of ours: the turn still ends with a valid history
            stop, error = "error", f"internal error: {type(exc).__name__}: {exc}"
        return await self._finish(text, stop, error, turn_index)

    def _timeout_reason(self, deadline: asyncio.Timeout, exc: TimeoutError) -> tuple[StopReason, str]:
        if deadline.expired():
            return "timeout", f"turn timed out after {self.plan.limits.timeout_s:g} s"
        return "error", f"timed out: {exc}"

    async def _finish(self, text: str, stop: StopReason, error: str | None, turn_index: int) -> TurnResult:
        session = self.plan.session
        self._close_pending()
        session.end_turn(turn_index, stop, error)
        pending = self.control.take_leftovers()
        leftovers, dropped = (pending, []) if stop == "end_turn" else ([], pending)
        if error is not None:
            self.events.append(ErrorEvent(kind=stop, message=error))
        done = TurnDone(
            stop_reason=stop, usage=self.usage, error=error, leftovers=leftovers, not_saved=session.not_saved
        )
        self.events.append(done)
        handler = self.plan.on_event
        if handler is not None:
            for event in self.events[-2 if error is not None else -1 :]:
                # The turn is over: a failing handler must not lose its record.
                with contextlib.suppress(Exception):
                    outcome = handler(event)
                    if inspect.isawaitable(outcome):
                        await outcome
        return TurnResult(
            text=text, stop_reason=stop, error=error, usage=self.usage, events=self.events,
            leftovers=leftovers, dropped=dropped, session=session.name, turn_index=turn_index,
            plan=self.proposed_plan, plan_status=self.plan_status,
        )

    # -- the step loop --------------------------------------------------------------------

    async def _steps(self) -> str:
        limits = self.plan.limits
        while True:
            if self.control.stop_requested:
                raise _GracefulStop
            if self.model_calls >= limits.max_turns:
                raise MaxTurnsError(limits.max_turns)
            self.model_calls += 1
            await self._compact_if_needed()
            response = await self._model_step_with_context_retry()
            if not response.tool_calls:
                self._commit(response.to_message())
                await self._record_usage(response.model, response.usage)
                return response.text
            response.tool_calls = unique_call_ids(response.tool_calls)
            self.pending, self.results = response.to_message(), {}
            await self._record_usage(response.model, response.usage)
            if self.control.stop_requested:
                raise _GracefulStop
            results = await self._run_batch(response.tool_calls)
            self._commit(self.pending, *results)
            self.pending = None
            if self._end_with is not None:
                return self._end_with

    async def _model_step_with_context_retry(self) -> ModelResponse:
        """A provider that rejects the prompt as too long gets one compaction and one retry;
        then the turn ends with the provider's error (never a stuck cell)."""
        try:
            return await self._model_step()
        except ContextWindowError:
            if not self.plan.compaction or not await self._compact(required=False):
                raise
        return await self._model_step()

    async def _compact_if_needed(self) -> None:
        """ENG-60: before a step whose prompt would pass the threshold."""
        plan = self.plan
        threshold = plan.token_threshold
        if not plan.compaction or threshold is None:
            return
        if estimate_tokens(plan.system, plan.session.history) > threshold:
            await self._compact(required=False)

    async def _compact(self, *, required: bool) -> bool:
        """Summarise all but the retained tail; False when there was nothing to compact."""
        plan = self.plan
        history = plan.session.history
        try:
            budget = plan.token_threshold // 2 if plan.token_threshold else None  # room for the summary
            split = automatic_window(history, plan.retain_events, budget)
        except NothingToCompactError:
            if required:
                raise
            return False
        with plan.telemetry.child_span("blitz.compaction", {"blitz.automatic": True}):
            summary, result = await Compactor(plan.model, plan.system).summarise(history, split, None)
        plan.session.replace_window(split, summary)
        await self._record_usage(result.model, result.usage)
        await self._emit(
            CompactionEvent(
                covered_events=result.covered_events, tokens_before=result.tokens_before,
                tokens_after=result.tokens_after, automatic=True,
            )
        )
        return True

    async def _model_step(self) -> ModelResponse:
        plan = self.plan
        request = ModelRequest(
            system=self.system,
            messages=list(plan.session.history),
            tools=self._specs,
            temperature=plan.temperature,
            max_tokens=plan.max_tokens,
        )
        response: ModelResponse | None = None
        with plan.telemetry.child_span("blitz.model_call", {"blitz.model": plan.model.name}) as span:
            async for item in plan.model.stream(request):
                if isinstance(item, TextDelta):
                    await self._emit(TextEvent(text=item.text, delta=True, thought=item.thought))
                else:
                    response = item
            if response is None:
                raise ModelError(plan.model.name, "the response stream ended without a final message")
            span.set_attributes({
                "blitz.answered_by": response.model, "blitz.input_tokens": response.usage.input_tokens,
                "blitz.output_tokens": response.usage.output_tokens, "blitz.tool_calls": len(response.tool_calls),
            })
        if response.text:
            await self._emit(TextEvent(text=response.text, repeat=True))
        return response

    async def _record_usage(self, model: str, usage: TokenUsage) -> None:
        """ENG-22/80/81, and the cost ceiling checked after every usage event (ENG-14)."""
        price = self.plan.prices.lookup(model)
        cost = price.cost(usage) if price is not None else None
        self.usage.add(usage, cost)
        self.plan.session.ledger.record(model, usage, cost)
        await self._emit(UsageEvent(model=model, usage=usage, cost_usd=cost))
        ceiling = self.plan.limits.max_cost_usd
        if ceiling is None:
            return
        if cost is None and not self._warned_unpriced:
            self._warned_unpriced = True
            await self._emit(
                ErrorEvent(
                    kind="unpriced",
                    message=f"model {model!r} has no price, so --max-cost cannot count it; "
                    f"set prices.\"{model}\" in the configuration",
                )
            )
        if self.usage.cost_usd > ceiling:
            raise MaxCostError(self.usage.cost_usd, ceiling)

    # -- tool batches -----------------------------------------------------------------------

    async def _run_batch(self, calls: list[ToolCall]) -> list[ToolResultMessage]:
        """ENG-12/20: screen every call, ask once for those that need it, run the rest at most
        `max_parallel` at once, and return one result per call in call order."""
        results = self.results
        runnable: list[tuple[ToolCall, Tool, BaseModel]] = []
        asking: list[tuple[ToolCall, Tool, BaseModel]] = []
        mode = self.mode
        for call in calls:
            await self._emit(ToolCallEvent(id=call.id, name=call.name, args=call.parsed_arguments()))
            screened = self._screen(call, mode)
            if call.name == "enter_plan_mode":
                mode = PLAN_MODE  # ENG-34: from the next call on, this batch's later ones included
            if isinstance(screened, ToolResultMessage):
                results[call.id] = screened
                await self._emit_result(screened)
            elif screened[3] == "ask":
                asking.append(screened[:3])
            else:
                runnable.append(screened[:3])
        try:
            if asking:
                runnable += await self._ask(asking, results)
            await self._run_concurrently(runnable, results)
        except asyncio.CancelledError:
            for result in self._in_call_order(calls, results):
                if result.call_id not in results:
                    await self._emit_result(result)
            raise
        ordered = self._in_call_order(calls, results)
        if self._end_with is None:  # else the model takes no further step: they stay leftovers
            await self._attach_steering(ordered)
        return ordered

    def _screen(
        self, call: ToolCall, mode: str | None
    ) -> ToolResultMessage | tuple[ToolCall, Tool, BaseModel, Policy]:
        """Refusals the model should read (ENG-17, ENG-20) or the call with its policy."""
        plan = self.plan
        tool = plan.tools.get(call.name)
        if tool is None:
            return _error(call, f"unknown tool {call.name!r}; available: {', '.join(plan.tools)}")
        if plan.allowed_tools is not None and call.name not in plan.allowed_tools:
            allowed = ", ".join(plan.allowed_tools)
            return _error(call, f"{call.name} isn't among the tools this command allows ({allowed})")
        refused = refusal(mode, tool)
        if refused is not None:
            return _error(call, refused)
        try:
            args = tool.parse_arguments(call.arguments)
        except ToolError as exc:
            return _error(call, str(exc))
        policy = resolve_policy(
            call.name, tool.kind is ToolKind.MUTATING, plan.policies, plan.approve_override,
            plan.session.always_allowed,
        )
        if policy == "deny":
            return _error(call, f"{call.name} is denied by the approval policy")
        return call, tool, args, policy

    async def _ask(
        self, asking: list[tuple[ToolCall, Tool, BaseModel]], results: dict[str, ToolResultMessage]
    ) -> list[tuple[ToolCall, Tool, BaseModel]]:
        """ENG-24: one permission request for the batch; returns the calls that may run."""
        gate = self.plan.gate
        request = gate.new_request(
            [PendingCall(id=c.id, name=c.name, args=c.parsed_arguments()) for c, _, _ in asking]
        )
        await self._emit(request)
        decisions = await gate.decide(request, self.control, self.plan.session)
        allowed = []
        for call, tool, args in asking:
            decision = decisions[call.id]
            await self._emit(decision)
            if decision.decision == "deny":
                results[call.id] = _error(call, _denial_text(call.name, decision))
                await self._emit_result(results[call.id])
                continue
            if decision.decision == "always":
                self.plan.session.always_allowed.add(call.name)
            allowed.append((call, tool, args))
        return allowed

    async def _run_concurrently(
        self, runnable: list[tuple[ToolCall, Tool, BaseModel]], results: dict[str, ToolResultMessage]
    ) -> None:
        if not runnable:
            return
        limit = asyncio.Semaphore(self.plan.max_parallel)

        async def run_one(call: ToolCall, tool: Tool, args: BaseModel) -> None:
            async with limit:
                result = await self._invoke(call, tool, args)
            results[call.id] = result
            await self._emit_result(result)

        tasks = [asyncio.ensure_future(run_one(*item)) for item in runnable]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _invoke(self, call: ToolCall, tool: Tool, args: BaseModel) -> ToolResultMessage:
        telemetry = self.plan.telemetry
        attributes = {"blitz.tool": call.name, "blitz.call_id": call.id, "blitz.arguments": telemetry.content(call.arguments)}
        with telemetry.child_span("blitz.tool_call", attributes) as span:
            result = await self._invoke_tool(call, tool, args)
            span.set_attribute("blitz.ok", result.ok)
            if not result.ok:
                mark_error(span, result.error or "")
            return result

    async def _invoke_tool(self, call: ToolCall, tool: Tool, args: BaseModel) -> ToolResultMessage:
        try:
            output = await tool.func(args, self.plan.tool_context)
        except ToolError as exc:
            self.shown_images[call.id] = exc.display_images
            return _error(call, str(exc))
        except Exception as exc:  # a tool bug must not end the turn: the model reads it
            return _error(call, f"{call.name} failed: {type(exc).__name__}: {exc}")
        if not isinstance(output, ToolOutput):
            return ToolResultMessage(call_id=call.id, name=call.name, output=output)
        self.shown_images[call.id] = output.display_images
        if output.images and not supports_vision(self.plan.model):
            return _error(call, blind_model_text(self.plan.model.name))
        return ToolResultMessage(call_id=call.id, name=call.name, output=output.text, images=output.images)

    async def _attach_steering(self, ordered: list[ToolResultMessage]) -> None:
        """ENG-40: queued steer messages ride on the batch's last result."""
        messages = self.control.take_messages()
        if not messages or not ordered:
            return
        last = ordered[-1]
        last.message_from_user = messages[0] if len(messages) == 1 else messages
        await self._emit(SteerEvent(count=len(messages), call_id=last.call_id))

    @staticmethod
    def _in_call_order(calls: list[ToolCall], results: dict[str, ToolResultMessage]) -> list[ToolResultMessage]:
        return [results.get(c.id) or _error(c, CANCELLED_RESULT) for c in calls]

    def _commit(self, *messages: Message) -> None:
        """Append one valid unit to the session: a prompt, an answer, or a response with all
        its results. Units keep the history valid at every moment (an aside may copy it)."""
        if isinstance(messages[0], AssistantMessage):
            check_history(list(messages))
        self.plan.session.commit(messages, self.plan.session.turns)

    def _close_pending(self) -> None:
        """The turn ended while a response's calls were open: commit it with a result for
        every call, a cancelled one where none came."""
        if self.pending is not None:
            self._commit(self.pending, *self._in_call_order(self.pending.tool_calls, self.results))
            self.pending = None

    # -- what workflow tools may do (TurnAccess) --------------------------------------------

    def enter_plan_mode(self) -> None:
        if self.mode != PLAN_MODE:
            self.mode = PLAN_MODE
            self.system = self.plan.system + PLAN_INSTRUCTIONS

    def set_todos(self, items: list[dict[str, str]]) -> None:
        self.plan.session.todos = items

    async def submit_plan(self, plan: str) -> str:
        """ENG-32: show the plan for review; with nobody to review it, it is the answer."""
        self.proposed_plan = plan
        reviewer = self.plan.plan_reviewer
        reason = None
        review = await reviewer.review(plan) if reviewer is not None else None
        if review is None:
            status: PlanStatus = "unreviewed"
        else:
            status, reason = ("approved" if review.approved else "rejected"), review.reason
        self.plan_status = status
        if status != "rejected":
            self.mode = None if self.mode == PLAN_MODE else self.mode
            self._end_with = plan
        await self._emit(PlanEvent(plan=plan, status=status, reason=reason))
        return plan_feedback(status, reason)

    # -- events -------------------------------------------------------------------------------

    async def _emit_result(self, result: ToolResultMessage) -> None:
        preview = (result.output if result.ok else result.error) or ""
        images, omitted = shown_images(self.shown_images.pop(result.call_id, []))
        await self._emit(
            ToolResultEvent(
                id=result.call_id, name=result.name, ok=result.ok, error=result.error,
                preview=preview[:PREVIEW_CHARS], images=images, images_omitted=omitted,
            )
        )

    async def _emit(self, event: Any) -> None:
        self.events.append(event)
        handler = self.plan.on_event
        if handler is None:
            return
        try:
            outcome = handler(event)
            if inspect.isawaitable(outcome):
                await outcome
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise EventHandlerError(f"an event handler failed on {event.type}: {type(exc).__name__}: {exc}") from exc


def unique_call_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Results are matched to calls by id; a provider that repeats an id (or sends none) would
    leave a call without its result. Rename the repeats (`id~2`) so every call has its own."""
    seen: set[str] = set()
    unique: list[ToolCall] = []
    for index, call in enumerate(calls):
        call_id = call.id or f"call_{index}"
        suffix = 2
        while call_id in seen:
            call_id, suffix = f"{call.id or 'call'}~{suffix}", suffix + 1
        seen.add(call_id)
        unique.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
    return unique


def _error(call: ToolCall, message: str) -> ToolResultMessage:
    return ToolResultMessage(call_id=call.id, name=call.name, error=message)


def blind_model_text(model: str) -> str:
    """The error a tool's images become when the model cannot see them."""
    return (
        f"this model ({model}) cannot see images (litellm does not list it as a vision model); "
        "work from the data instead, or ask the user to switch to a vision model"
    )


def _denial_text(tool_name: str, decision: PermissionDecision) -> str:
    return f"{tool_name} was denied: {decision.reason or 'the user said no'}"
