"""One turn: model step → tool batch → model step … until the model answers (docs/architecture.md).

`run` wraps the turn in its limits and turns every way a turn can end into a stop reason;
`_steps` is the step loop; a `ToolBatch` runs one response's tool calls. Whatever happens, the
history stays valid: every call gets a result (a cancelled one if need be), committed in units.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import time
from typing import Any, cast

from ...core.attachments import Attachment, prompt_with_attachments
from ...core.history import AssistantMessage, Message, ToolResultMessage, check_history, unique_call_ids
from ...core.terms import StopReason
from ...core.todos import TodoItem
from ...errors import BlitzError, ContextWindowError, TurnLimitError
from ...models.base import ModelResponse, supports_vision
from ...tools.registry import ToolError, tool_set
from ..events import ErrorEvent, Event, NoticeEvent, SteerEvent, SubagentEvent, TurnDone, TurnStarted
from ..safety.outgoing import OutgoingEvents
from ..steering import TurnControl, force_stop_text
from ..store.session import Session
from ..tracing import mark_error
from ..undo.recorder import TurnRecorder
from .auto_compaction import AutoCompaction
from .batch import ToolBatch
from .budget import Budget, expected_output
from .plan_flow import PlanFlow
from .refusals import prompt_refusal, timeout_reason
from .setup import TURN_SPAN, TurnResult, TurnSetup
from .spans import outcome_attributes, turn_attributes
from .spend import StepCount, TurnSpend
from .step import model_step
from .structured import OutputFlow
from .subagents import SubagentRecords, subagent_answer
from .watchdog import session_watch

CONTINUE_LABEL = "(continuing the previous turn)"


class _GracefulStop(Exception):
    """The user asked the turn to stop after the current step."""


class EventHandlerError(BlitzError):
    """A front end's event handler raised: the turn aborts."""


class TurnRunner:
    """Runs one turn of `setup.session`; use once."""

    def __init__(self, setup: TurnSetup, control: TurnControl, *, parent: TurnRunner | None = None) -> None:
        self.setup = setup
        self.control = control
        self.parent = parent
        """The caller's turn when this is a sub-agent's: its steps and spend are the caller's."""
        self.pending: AssistantMessage | None = None
        """The response whose tool calls are running; committed with all its results."""
        self.batch: ToolBatch | None = None
        """The pending response's calls; it holds their results as they finish."""
        self.events: list[Event] = []
        self.steps: StepCount = StepCount(setup.limits.max_turns, parent.steps if parent is not None else None)
        """Model calls, counted toward this turn's `max_turns` and every caller's."""
        self.audit_session: Session = parent.audit_session if parent is not None else setup.session
        """Where tool calls are audited: the user's session, a sub-agent's calls included."""
        tools = tool_set(setup.runtime.tools.values())  # specs and their size: once per tool set
        self._specs = tools.specs
        self.watch = session_watch(setup.session, setup.limits.repeat_warn, setup.limits.repeat_stop)
        self.budget = Budget(setup.session, setup.limits.max_cost_usd, setup.limits.max_cost_usd_session, control)
        self.budget.shared = setup.limits.shared_budget if parent is None else None
        self.budget.locked = setup.limits.session_budget_locked
        caller = parent.spend if parent is not None else None
        self.spend: TurnSpend = TurnSpend(setup.session, setup.choice.prices, self.budget, self._emit, caller)
        self.usage = self.spend.usage
        self.compaction = AutoCompaction(setup, tools.schema_tokens, self._emit, self.spend.record)
        self.plan = PlanFlow(setup.mode, setup.choice.system, setup.helpers.plan_reviewer, self._emit)
        self.output = OutputFlow(setup.choice.output) if setup.choice.output is not None else None
        """The structured answer the turn must end with (`--schema`), when one is asked for."""
        self.recorder: TurnRecorder | None = None
        """What the turn changed, for undo; a user's turn only, once it started."""
        self.tool_context = dataclasses.replace(setup.runtime.context, turn=self)
        """The setup's tool context with this turn's access and, once started, its deadline."""
        self.outgoing = OutgoingEvents(setup.runtime.redactor)
        """Every event is redacted before anyone sees it (docs/safety.md)."""
        self.nested = SubagentRecords()

    async def run(self, prompt: str | None, attachments: list[Attachment] | None = None) -> TurnResult:
        """The turn, inside its span: the root of its own trace, linked to the previous turn's."""
        setup = self.setup
        telemetry = setup.observers.telemetry
        attributes = turn_attributes(setup, telemetry, prompt, attachments)
        previous = None if setup.observers.span_name != TURN_SPAN else setup.session.last_turn_span
        with telemetry.root_span(setup.observers.span_name, attributes, previous) as span:
            if setup.observers.span_name == TURN_SPAN:  # known from the start: saved with the turn's outcome
                setup.session.last_turn_span = span.get_span_context()
            result = await self._run(prompt, attachments or [])
            span.set_attributes(outcome_attributes(result, self.steps.count))
            if result.error is not None:
                mark_error(span, result.error)
        return result

    async def _run(self, prompt: str | None, attachments: list[Attachment]) -> TurnResult:
        """`prompt` None continues the session's last turn (it stopped at max_turns with its
        tool results in): no new user message, the model takes the next step."""
        setup = self.setup
        turn_index = setup.session.turns
        refused = self.budget.refusal_before_start()
        if refused is not None:  # session budget spent: before any model call, nothing recorded
            return await self._refused_result(refused, turn_index, "max_cost")
        blocked = await prompt_refusal(setup, prompt, turn_index) if prompt is not None else None
        if blocked is not None:  # a prompt_submit hook blocked it: nothing is recorded
            return await self._refused_result(blocked, turn_index, "blocked")
        if prompt is not None:
            self._commit(prompt_with_attachments(prompt, attachments, vision=supports_vision(setup.choice.model)))
        if setup.depth == 0 and setup.observers.span_name == TURN_SPAN:
            self.recorder = TurnRecorder(
                setup.session, turn_index, self.tool_context.workspace, setup.runtime.keep_turns
            )
        text, error = "", None
        stop: StopReason = "end_turn"
        deadline = self._arm()
        try:
            await self._emit(
                TurnStarted(
                    session=setup.session.name,
                    turn_index=turn_index,
                    prompt=prompt if prompt is not None else CONTINUE_LABEL,
                    agent=setup.choice.agent,
                    model=setup.choice.model.name,
                    attachments=[a.summary() for a in attachments],
                )
            )
            for notice in setup.observers.notices:
                await self._emit(notice)
            async with deadline:
                text = await self._steps()
        except TimeoutError as exc:
            stop, error = timeout_reason(setup.limits, deadline, exc)
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
        except BlitzError as exc:  # model errors, failing handlers, compaction
            stop, error = "error", str(exc)
        except Exception as exc:  # a bug of ours: the turn still ends with a valid history
            stop, error = "error", f"internal error: {type(exc).__name__}: {exc}"
        return await self._finish(text, stop, error, turn_index)

    def _arm(self) -> asyncio.Timeout:
        """The turn's deadline, and a force stop that cancels the user's turn (its sub-agents
        with it). Tools that block the loop (run_python) cannot be reached by asyncio.timeout;
        they read the tool context's deadline and stop themselves in time. A sub-agent runs
        inside its caller's."""
        task = asyncio.current_task()
        if self.parent is None and task is not None:
            self.control.on_force(task.cancel)
        left = self.setup.limits.time_left()
        inherited = self.parent.tool_context.deadline if self.parent is not None else None
        own = time.monotonic() + left if left is not None else None
        ends = [moment for moment in (inherited, own) if moment is not None]
        if ends:
            self.tool_context = dataclasses.replace(self.tool_context, deadline=min(ends))
        return asyncio.timeout(left)

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

    async def _finish(self, text: str, stop: StopReason, error: str | None, turn_index: int) -> TurnResult:
        session = self.setup.session
        if self.parent is None:
            self.control.release()  # from here on, no force stop may cancel the turn's record
        self._close_pending()
        text, error = self.setup.runtime.redactor.redact(text), self.setup.runtime.redactor.redact_optional(error)
        last = self.outgoing.flush()  # a streamed answer's held tail (the stream was cut)
        session.end_turn(turn_index, stop, error)
        self.budget.release()
        if stop in ("end_turn", "watchdog"):  # answered, or its loop already stopped: start afresh
            self.watch.reset()
        session.keep_window(self.watch.window())
        pending = self.control.take_leftovers()
        leftovers, dropped = (pending, []) if stop == "end_turn" else ([], pending)
        forced = self.parent is None and self.control.forced
        if forced:
            last.append(NoticeEvent(kind="force_stop", message=force_stop_text(self.control.grace_s)))
        if error is not None:
            last.append(ErrorEvent(kind=stop, message=error))
        undoable = self.recorder is not None and self.recorder.checkpoint.changed
        done = TurnDone(
            stop_reason=stop,
            usage=self.usage,
            error=error,
            leftovers=leftovers,
            not_saved=session.not_saved,
            context_used=self.spend.last_prompt_tokens,
            context_window=self.setup.choice.context.tokens,
            undoable=undoable,
            forced=forced,
        )
        last.append(done)
        self.events.extend(last)
        handler = self.setup.observers.on_event
        if handler is not None:
            for event in last:
                # The turn is over: a failing handler must not lose its record.
                with contextlib.suppress(Exception):
                    outcome = handler(event)
                    if inspect.isawaitable(outcome):
                        await outcome
        result = TurnResult(
            text=text,
            stop_reason=stop,
            error=error,
            usage=self.usage,
            events=self.events,
            leftovers=leftovers,
            dropped=dropped,
            session=session.name,
            turn_index=turn_index,
            plan=self.plan.proposed,
            plan_status=self.plan.status,
            undoable=undoable,
            output=self.output.value if self.output is not None and stop == "end_turn" else None,
        )
        for watcher in self.setup.observers.watchers:
            with contextlib.suppress(Exception):  # the turn is over: its record is kept
                await watcher.at_end(self.setup, result)
        return result

    async def _steps(self) -> str:
        while True:
            if self.control.stop_requested:
                raise _GracefulStop
            self.steps.take()
            await self.compaction.if_needed(self.plan.system)
            if self.spend.limited:  # the estimate walks the history: only when a ceiling is set
                choice = self.setup.choice
                self.spend.check_before_call(
                    self.compaction.prompt_estimate(self.plan.system),
                    choice.prices.lookup(choice.model.name),
                    expected_output(choice.max_tokens, self.spend.tree_usage),
                )
            for watcher in self.setup.observers.watchers:
                await watcher.before_call(self.setup, self.steps.count)
            response = await self._model_step_with_context_retry()
            if not response.tool_calls:
                self._commit(response.to_message())
                await self.spend.record(response.model, response.usage)
                if self.output is None:
                    return response.text
                again = self.output.accept_text(response.text)  # no valid data: the model reads why
                if again is None or self.output.settle():
                    return self.output.answer_text()
                self._commit(again)
                continue
            response.tool_calls = unique_call_ids(response.tool_calls)
            self.pending = response.to_message()
            self.batch = ToolBatch(
                self.setup,
                self.tool_context,
                self.control,
                self._emit,
                response.tool_calls,
                self.watch,
                audit_into=self.audit_session,
            )
            await self.spend.record(response.model, response.usage)
            if self.control.stop_requested:
                raise _GracefulStop
            results = await self.batch.run(self.plan.mode)
            for watcher, result in ((w, r) for w in self.setup.observers.watchers for r in results):
                await watcher.after_result(self.setup, result)
            if self.plan.end_with is None:  # else the model takes no further step: they stay leftovers
                await self._attach_steering(results)
            self._commit(self.pending, *results)
            tripped, self.pending, self.batch = self.batch.tripped, None, None
            if tripped is not None:
                raise tripped
            if self.plan.end_with is not None:
                return self.plan.end_with
            if self.output is not None and self.output.settle():
                return self.output.answer_text()

    async def _model_step_with_context_retry(self) -> ModelResponse:
        """A provider that rejects the prompt as too long gets one compaction and one retry;
        then the turn ends with the provider's error (never a stuck cell)."""
        try:
            return await model_step(self.setup, self.plan.system, self._specs, self._emit, self.output)
        except ContextWindowError:
            if not self.compaction.enabled or not await self.compaction.compact(required=False):
                raise
        return await model_step(self.setup, self.plan.system, self._specs, self._emit, self.output)

    async def _attach_steering(self, ordered: list[ToolResultMessage]) -> None:
        """Queued steer messages ride on the batch's last result."""
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
        self.setup.session.commit(self.nested.attach(messages), self.setup.session.turns)

    def _close_pending(self) -> None:
        """The turn ended while a response's calls were open: commit it with a result for
        every call, a cancelled one where none came."""
        if self.pending is not None and self.batch is not None:
            self._commit(self.pending, *self.batch.close())
            self.pending, self.batch = None, None

    # -- what workflow tools may do (TurnAccess) --------------------------------------------

    def enter_plan_mode(self) -> None:
        self.plan.enter_plan_mode()

    def list_agents(self) -> list[tuple[str, str]]:
        subagents = self.setup.helpers.subagents
        return subagents.available(self.setup.choice.agent) if subagents is not None else []

    async def invoke_agent(self, agent: str, prompt: str, call_id: str) -> str:
        """Run `agent` on `prompt` for this turn's call `call_id`, inside this turn: its events
        reach the front end wrapped, its spend and changes are this turn's, Stop stops it."""
        subagents = self.setup.helpers.subagents
        if subagents is None:
            raise BlitzError("sub-agents are not available in this turn")
        depth = self.setup.depth + 1

        async def forward(event: Event) -> None:
            await self._emit(SubagentEvent(call_id=call_id, agent=agent, depth=depth, event=event))

        setup = await subagents.setup_for(self.setup, self.plan.mode, agent, forward)
        result = await TurnRunner(setup, self.control.child(), parent=self).run(prompt)
        self.nested.keep(call_id, agent, setup.session, result.stop_reason)  # nested in the result
        return subagent_answer(agent, result, setup.session.history)

    def checkpoint(self) -> TurnRecorder | None:
        """Where changing tools report; a sub-agent's changes are its caller's turn's."""
        if self.parent is not None:
            return self.parent.checkpoint()
        return self.recorder

    def set_todos(self, items: list[TodoItem]) -> None:
        self.setup.session.todos = items

    async def submit_plan(self, plan: str) -> str:
        return await self.plan.submit(plan)

    def submit_output(self, arguments: dict[str, Any]) -> str:
        if self.output is None:
            raise ToolError("this turn asks for no structured output")
        return self.output.submit(arguments)

    # -- events -------------------------------------------------------------------------------

    async def _emit(self, event: Event) -> None:
        """Redacted, kept and handed to the front end; one coroutine per event (this runs for
        every streamed piece)."""
        handler = self.setup.observers.on_event
        for shown in self.outgoing.redacted(event):
            self.events.append(shown)
            if handler is None:
                continue
            try:
                outcome = handler(shown)
                if inspect.isawaitable(outcome):
                    await outcome
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                raise EventHandlerError(
                    f"an event handler failed on {shown.type}: {type(exc).__name__}: {exc}"
                ) from exc
