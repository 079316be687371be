"""One turn: model step → tool batch → model step … until the model answers (ENGINE.md §2, §3).

Reads top-down like the rules: `run` wraps the turn in its limits and turns every way a turn
can end into a stop reason; `_steps` is the step loop; a `ToolBatch` (batch.py) runs one
response's tool calls (screening, approval, at most `max_parallel` at once, results in call
order).
Whatever happens, the history stays valid: every tool call gets a result, a cancelled one if
need be, and the turn's messages reach the session in one piece at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
from typing import cast

from ...core.attachments import Attachment, prompt_with_attachments
from ...core.history import AssistantMessage, Message, ToolCall, ToolResultMessage, check_history
from ...core.terms import PlanStatus, StopReason
from ...core.usage import TokenUsage, UsageTotals
from ...errors import (
    BlitzError,
    CompactionError,
    ContextWindowError,
    MaxTurnsError,
    ModelError,
    NothingToCompactError,
    TurnLimitError,
)
from ...models.base import ModelRequest, ModelResponse, ModelSwitch, TextDelta, supports_vision
from ..events import (
    CompactionEvent,
    ErrorEvent,
    Event,
    ModelSwitchEvent,
    PlanEvent,
    SteerEvent,
    TextEvent,
    TurnDone,
    TurnStarted,
    UsageEvent,
)
from ..safety.outgoing import OutgoingEvents
from ..steering import TurnControl
from ..tracing import mark_error
from ..undo.recorder import TurnRecorder
from .batch import ToolBatch
from .budget import Budget
from .compaction import Compactor, automatic_window, estimate_tokens
from .modes import MODE_INSTRUCTIONS, TurnMode, plan_feedback
from .setup import TURN_SPAN, TurnResult, TurnSetup
from .watchdog import RepeatWatch

CONTINUE_LABEL = "(continuing the previous turn)"


class _GracefulStop(Exception):
    """The user asked the turn to stop after the current step."""


class EventHandlerError(BlitzError):
    """A front end's event handler raised: the turn aborts (ENG-15)."""


class TurnRunner:
    """Runs one turn of `setup.session`; use once."""

    def __init__(self, setup: TurnSetup, control: TurnControl, *, parent: TurnRunner | None = None) -> None:
        self.setup = setup
        self.control = control
        self.parent = parent
        """The caller's turn when this is a sub-agent's (ENG-70): its spend is the caller's."""
        self.pending: AssistantMessage | None = None
        """The response whose tool calls are running; committed with all its results."""
        self.batch: ToolBatch | None = None
        """The pending response's calls; it holds their results as they finish."""
        self.events: list[Event] = []
        self.usage = UsageTotals()
        self.model_calls = 0
        self._warned_unpriced = False
        self._specs = [tool.spec() for tool in setup.tools.values()]
        self._last_prompt_tokens: int | None = None
        self.watch = RepeatWatch(setup.limits.repeat_warn, setup.limits.repeat_stop)
        self.budget = Budget(setup.session, setup.limits.max_cost_usd, setup.limits.max_cost_usd_session, control)
        self._schema_tokens = len(json.dumps([spec.model_dump() for spec in self._specs])) // 4
        self.mode = setup.mode
        """The turn's mode; `enter_plan_mode` switches it from the next call (ENG-34)."""
        self.system = setup.system
        self.proposed_plan: str | None = None
        self.plan_status: PlanStatus | None = None
        self._end_with: str | None = None
        """Set when the turn must end after the current batch, with this text as its answer."""
        self.recorder: TurnRecorder | None = None
        """What the turn changed, for undo (WS-03); a user's turn only, once it started."""
        self.outgoing = OutgoingEvents(setup.redactor)
        """Every event is redacted before anyone sees it (docs/safety.md)."""
        setup.tool_context.turn = self

    async def run(self, prompt: str | None, attachments: list[Attachment] | None = None) -> TurnResult:
        """The turn, inside its span (ENG-90): the root of its own trace, linked to the
        session's previous turn (ENG-91)."""
        setup = self.setup
        telemetry = setup.telemetry
        attributes = {
            "blitz.agent": setup.agent,
            "blitz.model": setup.model.name,
            "blitz.session": setup.session.name,
            "blitz.turn_index": setup.session.turns,
            "blitz.prompt_length": len(prompt or ""),
            "blitz.attachments": len(attachments or []),
            "blitz.max_turns": setup.limits.max_turns,
            "blitz.max_cost_usd": setup.limits.max_cost_usd,
            "blitz.timeout_s": setup.limits.timeout_s,
            "blitz.plan": setup.mode is TurnMode.PLAN,
            "blitz.mode": setup.mode.value,
            "blitz.prompt": telemetry.content(prompt or ""),
        }
        previous = None if setup.span_name != TURN_SPAN else setup.session.last_turn_span
        with telemetry.root_span(setup.span_name, attributes, previous) as span:
            result = await self._run(prompt, attachments or [])
            span.set_attributes(
                {
                    "blitz.model_calls": self.model_calls,
                    "blitz.input_tokens": result.usage.input_tokens,
                    "blitz.output_tokens": result.usage.output_tokens,
                    "blitz.cost_usd": result.usage.cost_usd,
                    "blitz.priced": result.usage.priced,
                    "blitz.stop_reason": result.stop_reason,
                }
            )
            if result.error is not None:
                mark_error(span, result.error)
            if setup.span_name == TURN_SPAN:
                setup.session.last_turn_span = span.get_span_context()
        return result

    async def _run(self, prompt: str | None, attachments: list[Attachment]) -> TurnResult:
        """`prompt` None continues the session's last turn (it stopped at max_turns with its
        tool results in): no new user message, the model takes the next step."""
        setup = self.setup
        turn_index = setup.session.turns
        refused = self.budget.refusal_before_start()
        if refused is not None:  # GR-05: before any model call, and nothing is recorded
            return await self._refused_result(refused, turn_index, "max_cost")
        blocked = await self._prompt_hooks(prompt, turn_index) if prompt is not None else None
        if blocked is not None:  # WS-04: nothing is recorded
            return await self._refused_result(blocked, turn_index, "blocked")
        if prompt is not None:
            self._commit(prompt_with_attachments(prompt, attachments, vision=supports_vision(setup.model)))
        if setup.depth == 0 and setup.span_name == TURN_SPAN:
            self.recorder = TurnRecorder(setup.session, turn_index, setup.tool_context.workspace, setup.keep_turns)
        text, error = "", None
        stop: StopReason = "end_turn"
        left = setup.limits.time_left()
        deadline = asyncio.timeout(left)
        if left is not None:
            # Tools that block the loop (run_python) cannot be reached by asyncio.timeout; they
            # read this and stop themselves in time (ENG-14).
            setup.tool_context.deadline = time.monotonic() + left
        try:
            await self._emit(
                TurnStarted(
                    session=setup.session.name,
                    turn_index=turn_index,
                    prompt=prompt if prompt is not None else CONTINUE_LABEL,
                    agent=setup.agent,
                    model=setup.model.name,
                    attachments=[a.summary() for a in attachments],
                )
            )
            for notice in setup.notices:
                await self._emit(notice)
            async with deadline:
                text = await self._steps()
        except TimeoutError as exc:
            stop, error = self._timeout_reason(deadline, exc)
        except asyncio.CancelledError:
            stop = "cancelled"
            if self.parent is not None:  # a sub-agent: the caller's call is cancelled with it
                await self._finish(text, stop, error, turn_index)
                raise
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

    async def _prompt_hooks(self, prompt: str, turn_index: int) -> str | None:
        hooks = self.setup.hooks
        if not hooks or self.setup.depth > 0:
            return None
        reason = await hooks.prompt_submit({"session": self.setup.session.name, "turn": turn_index, "prompt": prompt})
        return None if reason is None else f"blocked by prompt_submit hook: {reason}"

    async def _refused_result(self, reason: str, turn_index: int, stop: StopReason) -> TurnResult:
        """A turn refused before it started: the front end shows why; nothing is recorded."""
        await self._emit(ErrorEvent(kind=stop, message=reason))
        await self._emit(TurnDone(stop_reason=stop, usage=self.usage, error=reason))
        return TurnResult(
            text="",
            stop_reason=stop,
            error=reason,
            usage=self.usage,
            events=self.events,
            session=self.setup.session.name,
            turn_index=turn_index,
        )

    def _timeout_reason(self, deadline: asyncio.Timeout, exc: TimeoutError) -> tuple[StopReason, str]:
        if deadline.expired():
            return "timeout", f"turn timed out after {self.setup.limits.timeout_s:g} s"
        return "error", f"timed out: {exc}"

    async def _finish(self, text: str, stop: StopReason, error: str | None, turn_index: int) -> TurnResult:
        session = self.setup.session
        self._close_pending()
        text, error = self.setup.redactor.redact(text), self.setup.redactor.redact_optional(error)
        last = self.outgoing.flush()  # a streamed answer's held tail (the stream was cut)
        session.end_turn(turn_index, stop, error)
        pending = self.control.take_leftovers()
        leftovers, dropped = (pending, []) if stop == "end_turn" else ([], pending)
        if error is not None:
            last.append(ErrorEvent(kind=stop, message=error))
        undoable = self.recorder is not None and self.recorder.checkpoint.changed
        done = TurnDone(
            stop_reason=stop,
            usage=self.usage,
            error=error,
            leftovers=leftovers,
            not_saved=session.not_saved,
            context_used=self._last_prompt_tokens,
            context_window=self.setup.context.tokens,
            undoable=undoable,
        )
        last.append(done)
        self.events.extend(last)
        handler = self.setup.on_event
        if handler is not None:
            for event in last:
                # The turn is over: a failing handler must not lose its record.
                with contextlib.suppress(Exception):
                    outcome = handler(event)
                    if inspect.isawaitable(outcome):
                        await outcome
        return TurnResult(
            text=text,
            stop_reason=stop,
            error=error,
            usage=self.usage,
            events=self.events,
            leftovers=leftovers,
            dropped=dropped,
            session=session.name,
            turn_index=turn_index,
            plan=self.proposed_plan,
            plan_status=self.plan_status,
            undoable=undoable,
        )

    # -- the step loop --------------------------------------------------------------------

    async def _steps(self) -> str:
        limits = self.setup.limits
        while True:
            if self.control.stop_requested:
                raise _GracefulStop
            if self.model_calls >= limits.max_turns:
                raise MaxTurnsError(limits.max_turns)
            self.model_calls += 1
            await self._compact_if_needed()
            if self.budget.limited:  # the estimate walks the history: only when a ceiling is set
                self.budget.check_before_call(
                    self.usage.cost_usd, self._prompt_estimate(), self.setup.prices.lookup(self.setup.model.name)
                )
            response = await self._model_step_with_context_retry()
            if not response.tool_calls:
                self._commit(response.to_message())
                await self._record_usage(response.model, response.usage)
                return response.text
            response.tool_calls = unique_call_ids(response.tool_calls)
            self.pending = response.to_message()
            self.batch = ToolBatch(self.setup, self.control, self._emit, response.tool_calls, self.watch)
            await self._record_usage(response.model, response.usage)
            if self.control.stop_requested:
                raise _GracefulStop
            results = await self.batch.run(self.mode)
            if self._end_with is None:  # else the model takes no further step: they stay leftovers
                await self._attach_steering(results)
            self._commit(self.pending, *results)
            tripped, self.pending, self.batch = self.batch.tripped, None, None
            if tripped is not None:
                raise tripped
            if self._end_with is not None:
                return self._end_with

    async def _model_step_with_context_retry(self) -> ModelResponse:
        """A provider that rejects the prompt as too long gets one compaction and one retry;
        then the turn ends with the provider's error (never a stuck cell)."""
        try:
            return await self._model_step()
        except ContextWindowError:
            if not self.setup.compaction or not await self._compact(required=False):
                raise
        return await self._model_step()

    async def _compact_if_needed(self) -> None:
        """ENG-60: before a step whose prompt (tool schemas included) would pass the threshold."""
        setup = self.setup
        if not setup.compaction:
            return
        if self._prompt_estimate() > setup.context.threshold:
            try:
                await self._compact(required=False)
            except CompactionError as exc:  # the threshold is below the window: try the call as is
                await self._emit(
                    ErrorEvent(kind="notice", message=f"automatic compaction failed, going on without it: {exc}")
                )

    def _prompt_estimate(self) -> int:
        """Tokens the next request will carry: system prompt, history and the tool schemas
        (about 2.5K tokens for the built-in tools, sent with every step)."""
        return estimate_tokens(self.system, self.setup.session.history) + self._schema_tokens

    async def _compact(self, *, required: bool) -> bool:
        """Summarise all but the retained tail; False when there was nothing to compact."""
        setup = self.setup
        history = setup.session.history
        try:
            budget = setup.context.threshold // 2  # room for the summary
            split = automatic_window(history, setup.retain_events, budget)
        except NothingToCompactError:
            if required:
                raise
            return False
        with setup.telemetry.child_span("blitz.compaction", {"blitz.automatic": True}):
            summary, result = await Compactor(setup.model, setup.system).summarise(history, split, None)
        setup.session.replace_window(split, summary)
        await self._record_usage(result.model, result.usage)
        await self._emit(
            CompactionEvent(
                covered_events=result.covered_events,
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
                automatic=True,
            )
        )
        return True

    async def _model_step(self) -> ModelResponse:
        setup = self.setup
        request = ModelRequest(
            system=self.system,
            messages=list(setup.session.history),
            tools=self._specs,
            temperature=setup.temperature,
            max_tokens=setup.max_tokens,
        )
        response: ModelResponse | None = None
        with setup.telemetry.child_span("blitz.model_call", {"blitz.model": setup.model.name}) as span:
            async for item in setup.model.stream(request):
                if isinstance(item, TextDelta):
                    await self._emit(TextEvent(text=item.text, delta=True, thought=item.thought))
                elif isinstance(item, ModelSwitch):  # GR-01: every switch is visible
                    await self._emit(ModelSwitchEvent(failed=item.failed, reason=item.reason, answered_by=item.next))
                else:
                    response = item
            if response is None:
                raise ModelError(setup.model.name, "the response stream ended without a final message")
            span.set_attributes(
                {
                    "blitz.answered_by": response.model,
                    "blitz.input_tokens": response.usage.input_tokens,
                    "blitz.output_tokens": response.usage.output_tokens,
                    "blitz.tool_calls": len(response.tool_calls),
                }
            )
        if response.text:
            await self._emit(TextEvent(text=response.text, repeat=True))
        return response

    async def _record_usage(self, model: str, usage: TokenUsage) -> None:
        """ENG-22/80/81, and the cost ceiling checked after every usage event (ENG-14)."""
        self._last_prompt_tokens = usage.input_tokens or self._last_prompt_tokens
        price = self.setup.prices.lookup(model)
        cost = price.cost(usage) if price is not None else None
        self.usage.add(usage, cost)
        self.setup.session.ledger.record(model, usage, cost)
        await self._emit(UsageEvent(model=model, usage=usage, cost_usd=cost))
        if self.parent is not None:
            self.parent.charge(model, usage, cost)
        if cost is None and self.budget.turn_ceiling is not None and not self._warned_unpriced:
            self._warned_unpriced = True
            await self._emit(
                ErrorEvent(
                    kind="unpriced",
                    message=f"model {model!r} has no price, so --max-cost cannot count it; "
                    f'set prices."{model}" in the configuration',
                )
            )
        self.budget.check_after_usage(self.usage.cost_usd)

    def charge(self, model: str, usage: TokenUsage, cost: float | None) -> None:
        """A sub-agent's call, counted as this turn's (ENG-70): usage, session ledger and the
        ceilings (a spent ceiling ends the sub-agent; this turn stops before its next call)."""
        self.usage.add(usage, cost)
        self.setup.session.ledger.record(model, usage, cost)
        if self.parent is not None:
            self.parent.charge(model, usage, cost)
        self.budget.check_after_usage(self.usage.cost_usd)

    async def _attach_steering(self, ordered: list[ToolResultMessage]) -> None:
        """ENG-40: queued steer messages ride on the batch's last result."""
        messages = self.control.take_messages()
        if not messages or not ordered:
            return
        last = ordered[-1]
        last.message_from_user = messages[0] if len(messages) == 1 else messages
        await self._emit(SteerEvent(count=len(messages), call_id=last.call_id))

    def _commit(self, *messages: Message) -> None:
        """Append one valid unit to the session: a prompt, an answer, or a response with all
        its results. Units keep the history valid at every moment (an aside may copy it)."""
        if isinstance(messages[0], AssistantMessage):
            check_history(list(messages))
        self.setup.session.commit(messages, self.setup.session.turns)

    def _close_pending(self) -> None:
        """The turn ended while a response's calls were open: commit it with a result for
        every call, a cancelled one where none came."""
        if self.pending is not None and self.batch is not None:
            self._commit(self.pending, *self.batch.close())
            self.pending, self.batch = None, None

    # -- what workflow tools may do (TurnAccess) --------------------------------------------

    def enter_plan_mode(self) -> None:
        if self.mode is not TurnMode.PLAN:
            self.mode = TurnMode.PLAN
            self.system = self.setup.system + MODE_INSTRUCTIONS[TurnMode.PLAN]

    def list_agents(self) -> list[tuple[str, str]]:
        subagents = self.setup.subagents
        return subagents.available(self.setup.agent) if subagents is not None else []

    async def invoke_agent(self, agent: str, prompt: str, call_id: str) -> str:
        subagents = self.setup.subagents
        if subagents is None:
            raise BlitzError("sub-agents are not available in this turn")
        return await subagents.run(self, agent, prompt, call_id)

    def checkpoint(self) -> TurnRecorder | None:
        """WS-03: where changing tools report; a sub-agent's changes are its caller's turn's."""
        if self.parent is not None:
            return self.parent.checkpoint()
        return self.recorder

    def set_todos(self, items: list[dict[str, str]]) -> None:
        self.setup.session.todos = items

    async def submit_plan(self, plan: str) -> str:
        """ENG-32: show the plan for review; with nobody to review it, it is the answer."""
        self.proposed_plan = plan
        reviewer = self.setup.plan_reviewer
        reason = None
        review = await reviewer.review(plan) if reviewer is not None else None
        if review is None:
            status: PlanStatus = "unreviewed"
        else:
            status, reason = ("approved" if review.approved else "rejected"), review.reason
        self.plan_status = status
        if status != "rejected":
            self.mode = TurnMode.NORMAL if self.mode is TurnMode.PLAN else self.mode
            self._end_with = plan
        await self._emit(PlanEvent(plan=plan, status=status, reason=reason))
        return plan_feedback(status, reason)

    # -- events -------------------------------------------------------------------------------

    async def emit(self, event: Event) -> None:
        """Send `event` to the front end (a sub-agent's events come through here, wrapped)."""
        await self._emit(event)

    async def _emit(self, event: Event) -> None:
        for shown in self.outgoing.redacted(event):
            await self._deliver(shown)

    async def _deliver(self, event: Event) -> None:
        self.events.append(event)
        handler = self.setup.on_event
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
