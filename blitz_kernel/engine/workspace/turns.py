"""The turns service: run, continue, aside, compact, steer and stop, one turn per session at a
time. A turn's agent and model are resolved once, checked (can this model ever answer?), then
built into its setup and handed to the loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import weakref
from collections.abc import Mapping
from typing import Any

from ...core.attachments import Attachment
from ...core.history import ToolCall, ToolResultMessage
from ...core.terms import Policy, StopReason
from ...core.usage import PriceBook
from ...errors import BlitzError, SessionBusyError, SteerTooLateError, TooManyTurnsError
from ...tools.registry import KernelContext
from ..steering import TurnControl, framed_prompt
from ..store.session import Session
from ..store.sessions import SessionBook
from ..turn.compaction import CompactionResult, Compactor, manual_window
from ..turn.loop import TurnRunner
from ..turn.modes import TurnMode
from ..turn.options import EventHandler, FrontEnd, RunOptions
from ..turn.replay import RecordedStep, ReplayedCall, ReplayReport, recorded_turn, replay_steps
from ..turn.replay_record import compare_kept, record_calls
from ..turn.setup import TurnResult, TurnSetup, refused_before_start
from .builder import TurnBuilder
from .configuration import Configuration
from .resolution import Resolver


class Turns:
    """Starts and controls the turns of one workspace's sessions."""

    def __init__(
        self, configuration: Configuration, resolver: Resolver, builder: TurnBuilder, sessions: SessionBook
    ) -> None:
        self.configuration = configuration
        self.resolver = resolver
        self.builder = builder
        self.sessions = sessions
        self.slots = TurnSlots()

    async def run(
        self, prompt: str, session: str, options: RunOptions, front_end: FrontEnd, attachments: list[Attachment] | None
    ) -> TurnResult:
        """One turn. `--timeout` covers the lookups before the first model call too (they may
        load a provider library or start MCP servers); the turn then gets what is left."""
        limit = options.timeout_s if options.timeout_s is not None else self.configuration.config.limits.timeout_s
        started = time.monotonic()
        try:
            async with asyncio.timeout(limit):
                # a model that can never answer (or an unknown agent): the turn ends in error before
                # anything is recorded: no session created, no prompt in the history, no turn counted
                resolved = self.resolver.resolve(options.agent, options.model)
                problem = await self.resolver.problem(resolved.model)
        except TimeoutError:
            return await self._refused(setup_timeout(limit), session, front_end, "timeout")
        if problem is not None:
            return await self._refused(problem, session, front_end)
        state = self.sessions.get(session)
        claim(state)
        self.slots.admit(self.configuration.config.limits.max_concurrent_turns)
        context = front_end.kernel or self.builder.kernel
        state.prepare_resume_note(context.user_ns if context is not None else None)  # the restart note
        control = TurnControl(grace_s=self.configuration.config.stop.grace_s)
        state.running = control  # at once: a second run or a steer meanwhile sees this turn
        try:
            try:
                async with asyncio.timeout(limit - (time.monotonic() - started) if limit else None):
                    setup = await self.builder.build(state, options, front_end, resolved=resolved)
            except TimeoutError:
                return await self._refused(setup_timeout(limit), session, front_end, "timeout")
            spent = dataclasses.replace(setup.limits, spent_before_s=time.monotonic() - started)
            inbox = state.take_inbox()
            runner = TurnRunner(dataclasses.replace(setup, limits=spent), control)
            result = await runner.run(framed_prompt(inbox, prompt), attachments)
            if inbox and state.turns == result.turn_index:  # refused before it started: kept for the next
                state.restore_inbox(inbox)
            return result
        finally:
            state.running = None
            self.slots.leave()

    async def continue_turn(self, session: str, options: RunOptions, front_end: FrontEnd) -> TurnResult:
        """A turn that stopped at `max_turns` goes on for `options.max_turns` more steps in the
        same context: no new prompt, the model takes the next step."""
        state = self.sessions.get(session)
        if not state.history or state.history[-1].kind != "tool_result":
            raise BlitzError(f"session {session!r} has no turn to continue: its last turn ended with an answer")
        claim(state)
        self.slots.admit(self.configuration.config.limits.max_concurrent_turns)
        control = TurnControl(grace_s=self.configuration.config.stop.grace_s)
        state.running = control
        try:
            setup = await self.builder.build(state, options, front_end)
            return await TurnRunner(setup, control).run(None)
        finally:
            state.running = None
            self.slots.leave()

    async def aside(
        self, session: str, question: str, on_event: EventHandler | None, kernel: KernelContext | None
    ) -> TurnResult:
        """Answer `question` from a deep copy of the session in the read-only mode `btw`.
        Nothing reaches the session's history; the tokens count toward its usage. It may run
        while the session's own turn runs."""
        source = self.sessions.get(session)
        throwaway = Session(
            name=f"{session} (aside)",
            history=[message.model_copy(deep=True) for message in source.history],
            turns=source.turns,
        )
        options, front_end = RunOptions(mode=TurnMode.BTW), FrontEnd(on_event=on_event, kernel=kernel)
        setup = await self.builder.build(throwaway, options, front_end)
        result = await TurnRunner(setup, TurnControl()).run(question)
        source.ledger.merge(throwaway.ledger)
        if source.running is not None:  # its tokens count toward the running turn's --max-cost
            source.running.charged_usd += throwaway.ledger.total.cost_usd
        return result

    async def replay(
        self,
        session: str = "default",
        turn: int | None = None,
        front_end: FrontEnd | None = None,
        approve: Policy | None = None,
    ) -> ReplayReport:
        """Run turn `turn`'s recorded tool calls again (counted from 1; None: the newest), with
        no model call, through today's approvals; nothing reaches the session's history
        (docs/replay.md). The session is claimed meanwhile: its calls run in the same
        namespace as its turns."""
        if turn is not None and turn < 1:
            raise ValueError(f"turn is counted from 1, got {turn}")
        if session not in self.sessions.names():  # asking must not create it
            raise BlitzError(f"session {session!r} has no recorded turns to replay")
        source = self.sessions.get(session)
        recorded = [*source.archive, *source.history]
        index, steps = recorded_turn(session, recorded, source.turn_starts, None if turn is None else turn - 1)
        claim(source)
        source.running = TurnControl()
        throwaway = Session(name=f"{session} (replay)", turns=source.turns)
        throwaway.always_allowed = set(source.always_allowed)  # the session's "Always allow" answers hold
        try:
            setup = await self._replay_setup(throwaway, front_end, approve)
            return await replay_steps(setup, steps, session, index)
        finally:
            source.running = None  # first: outside a turn, the audit records are saved at once
            for record in throwaway.audit:
                # the session's trail has every call made for it, a replayed one marked as such
                source.record_audit(
                    record.model_copy(update={"session": session, "turn": index, "call_id": f"replay:{record.call_id}"})
                )

    async def replay_record(
        self, record: Mapping[str, Any], front_end: FrontEnd | None = None, approve: Policy | None = None
    ) -> ReplayReport:
        """Replay from a saved cell's turn record, not from a transcript: the session and its
        store may be gone (docs/replay.md). Each call runs as its own batch, in the record's
        order; nothing is added to any session."""
        calls, results, missing = record_calls(record)
        name = str(record.get("session") or "notebook")
        given = record.get("turn_index")
        turn = given if isinstance(given, int) and given >= 0 else 0
        images = {c.get("id"): c.get("images") for c in record.get("tool_calls", []) if isinstance(c, dict)}
        steps = [RecordedStep([call], {call.id: results[call.id]} if call.id in results else {}) for call in calls]
        setup = await self._replay_setup(Session(name=f"{name} (replay)", turns=turn), front_end, approve)

        def judge(call: ToolCall, recorded: ToolResultMessage | None, now: ToolResultMessage) -> ReplayedCall:
            shown = images.get(call.id)
            return compare_kept(call, recorded, now, shown if isinstance(shown, int) else None)

        return await replay_steps(setup, steps, name, turn, judge=judge, missing=missing, source="notebook")

    async def _replay_setup(self, throwaway: Session, front_end: FrontEnd | None, approve: Policy | None) -> TurnSetup:
        # built as an aside so the one-time notices stay for the next real turn; the calls
        # themselves run in the normal mode (replay_steps), mutating ones through the gate
        options = RunOptions(mode=TurnMode.BTW, approve=approve)
        setup = await self.builder.build(throwaway, options, front_end or FrontEnd())
        every_tool = {name: self.configuration.tools.get(name) for name in self.configuration.tools.names()}
        tools = {**{n: t for n, t in every_tool.items() if t is not None}, **setup.runtime.tools}
        return dataclasses.replace(setup, runtime=dataclasses.replace(setup.runtime, tools=tools))

    async def compact(self, session: str, focus: str | None, keep_turns: int) -> CompactionResult:
        """Summarise everything before the keep_turns-th most recent user turn with the current
        model. Raises NothingToCompactError or CompactionError (history unchanged)."""
        state = self.sessions.get(session)
        claim(state)
        state.compacting = True
        configuration = self.configuration
        try:
            split = manual_window(state.history, keep_turns)
            resolved = self.resolver.resolve(None, None)
            model = resolved.model
            attributes = {"blitz.session": session, "blitz.model": model.name, "blitz.keep_turns": keep_turns}
            with configuration.telemetry.root_span("blitz.compaction", attributes):
                compactor = Compactor(model, resolved.definition.instructions)
                summary, result = await compactor.summarise(state.history, split, focus)
        finally:
            state.compacting = False
        state.replace_window(split, summary)
        price = PriceBook(dict(configuration.config.prices), model.price).lookup(result.model)
        state.record_usage(result.model, result.usage, price.cost(result.usage) if price else None)
        return result

    def steer(self, session: str, text: str, inbox: bool) -> None:
        """Queue `text` for the running turn; with none running, in the session's inbox (it
        goes with the next prompt) when `inbox`, else SteerTooLateError. A turn that is ending
        refuses it (SteerTooLateError): the front end sends it as that turn's follow-up prompt."""
        state = self.sessions.get(session)
        if state.running is None:
            if not inbox:
                raise SteerTooLateError(f"session {session!r} has no running turn; send it as a prompt")
            state.redactor = self.configuration.redactor  # stored, so redacted like the history
            state.queue_inbox(text)
            return
        state.running.steer(text)

    def stop(self, session: str) -> bool:
        """Ask the running turn to stop after its current step; False when none runs."""
        control = self.sessions.get(session).running
        if control is None:
            return False
        control.request_stop()
        return True

    async def _refused(self, reason: str, session: str, front_end: FrontEnd, stop: StopReason = "error") -> TurnResult:
        """A turn that could not start: the front end shows why, nothing is recorded."""
        turns = self.sessions.get(session).turns if session in self.sessions.names() else 0
        return await refused_before_start(reason, session, turns, front_end.on_event, stop)


class TurnSlots:
    """How many turns run now in this workspace and in the whole kernel (every workspace on
    the kernel's event loop), against `limits.max_concurrent_turns`. The kernel's count is
    kept per event loop: a loop that is gone (a finished `asyncio.run`) takes its count along."""

    _kernel: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = weakref.WeakKeyDictionary()

    def __init__(self) -> None:
        self.running = 0

    @classmethod
    def kernel_running(cls) -> int:
        """Turns running on this event loop, over all its workspaces."""
        return cls._kernel.get(asyncio.get_running_loop(), 0)

    def admit(self, limit: int) -> None:
        """Take a slot, or TooManyTurnsError saying where the limit was reached."""
        if self.running >= limit:
            raise TooManyTurnsError(self.running, limit, "workspace")
        loop, kernel = asyncio.get_running_loop(), self.kernel_running()
        if kernel >= limit:
            raise TooManyTurnsError(kernel, limit, "kernel")
        self.running += 1
        TurnSlots._kernel[loop] = kernel + 1

    def leave(self) -> None:
        self.running -= 1
        loop = asyncio.get_running_loop()
        TurnSlots._kernel[loop] = max(TurnSlots._kernel.get(loop, 1) - 1, 0)


def claim(state: Session) -> None:
    """One turn or compaction at a time per session (SessionBusyError otherwise)."""
    if state.running is not None:
        raise SessionBusyError(f"session {state.name!r} already has a running turn")
    if state.compacting:
        raise SessionBusyError(f"session {state.name!r} is being compacted")


def setup_timeout(limit: float | None) -> str:
    return f"turn timed out after {limit or 0:g} s, before its first model call (looking up the model)"
