"""One model response's tool calls, run as a batch.

For each call, in order: announce it, screen it (unknown tool, not allowed this run, refused by
the mode, bad arguments, denied by policy), then ask once for every call that needs approval,
then run what may run at most `max_parallel` at once. The batch owns its results: every call
ends with exactly one, in call order, a cancelled one if the turn stopped first, so the history
the loop commits stays valid whatever happens.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable

from ...core.history import ImagePart, ToolCall, ToolResultMessage
from ...core.terms import DecidedBy, ToolOutcome
from ...core.text import shorten
from ...core.tools import ToolPresentation
from ...errors import WatchdogError
from ...models.base import supports_vision
from ...tools.registry import ToolContext, ToolError, ToolKind, ToolOutput
from ..events import Event, PendingCall, PermissionDecision, ToolCallEvent, ToolResultEvent, shown_images
from ..safety.approval import configured_policy, resolve_policy
from ..safety.audit import ARGUMENT_CHARS, AuditRecord
from ..safety.risk import risky_reasons
from ..steering import TurnControl
from ..store.session import Session
from ..tracing import mark_error
from .modes import TurnMode, refusal
from .screening import Decision, Refused, Screened
from .setup import TurnSetup
from .watchdog import RepeatWatch, repeat_note

CANCELLED_RESULT = "cancelled: the turn was stopped before this call finished"
PREVIEW_CHARS = 300

Emit = Callable[[Event], Awaitable[None]]


class ToolBatch:
    """The calls of one response; `run` once, then `in_call_order` has a result per call."""

    def __init__(
        self,
        setup: TurnSetup,
        tool_context: ToolContext,
        control: TurnControl,
        emit: Emit,
        calls: list[ToolCall],
        watch: RepeatWatch,
        audit_into: Session | None = None,
    ) -> None:
        self.setup = setup
        self.audit_into = audit_into or setup.session
        """Where the audit records go: the user's session, a sub-agent's calls included."""
        self.tool_context = tool_context
        """The turn's tool context (its deadline and its access to the turn)."""
        self.control = control
        self.emit = emit
        self.calls = calls
        self.watch = watch
        self.tripped: WatchdogError | None = None
        """Set when the watchdog refused a call: the turn ends after this batch."""
        self._warned: dict[str, str] = {}
        """Calls whose result carries the watchdog's note, by call id."""
        self.results: dict[str, ToolResultMessage] = {}
        self._decisions: dict[str, Decision] = {}
        self._shown_images: dict[str, list[ImagePart]] = {}
        """Images a call showed the user, until its result event carries them: they are no
        part of the history the model reads."""

    async def run(self, mode: TurnMode) -> list[ToolResultMessage]:
        """Screen every call, ask once for those that need it, run the rest, and
        return one result per call in call order. On cancellation every call still open gets
        its cancelled result event before the cancellation goes on."""
        runnable: list[Screened] = []
        asking: list[Screened] = []
        for call in self.calls:
            known = self.setup.runtime.tools.get(call.name)
            presentation = known.presentation if known is not None else ToolPresentation()
            await self.emit(
                ToolCallEvent(id=call.id, name=call.name, args=call.parsed_arguments(), presentation=presentation)
            )
            screened = self._watched(call) or self._screen(call, mode)
            if call.name == "enter_plan_mode":
                mode = TurnMode.PLAN  # from the next call on, this batch's later ones included
            if isinstance(screened, Refused):
                decision = (
                    "blocked"
                    if screened.status == "blocked"
                    else "denied"
                    if screened.status == "denied"
                    else "refused"
                )
                self._decisions[call.id] = Decision(decision, screened.decided_by, screened.result.error)
                await self._record(screened.result, screened.status)
            elif screened.policy == "ask":
                asking.append(screened)
            else:
                self._decisions[call.id] = Decision("allowed", screened.decided_by)
                runnable.append(screened)
        try:
            if asking:
                runnable += await self._ask(asking)
            await self._run_concurrently(runnable)
        except asyncio.CancelledError:
            for result in self.in_call_order():
                if result.call_id not in self.results:
                    await self._emit_result(result, "cancelled")
            raise
        return self.in_call_order()

    def close(self) -> list[ToolResultMessage]:
        """The turn ended before some calls ran (a limit, a stop): audit those as cancelled
        too, so the trail has every call, and return the results in call order."""
        ordered = self.in_call_order()
        for result in ordered:
            if result.call_id not in self.results:
                self.results[result.call_id] = result
                self._audit(result, "cancelled")
        return ordered

    def in_call_order(self) -> list[ToolResultMessage]:
        """A result per call, in call order; a cancelled one where none came."""
        return [self.results.get(c.id) or error_result(c, CANCELLED_RESULT) for c in self.calls]

    # -- screening and approval ---------------------------------------------------------------

    def _watched(self, call: ToolCall) -> Refused | None:
        """Refuse the call that makes a loop; mark the ones that start looking like one."""
        verdict, found = self.watch.observe(call), self.watch.found
        if verdict == "stop" and found is not None:
            self.tripped = WatchdogError(found.describe(call.name, "the agent"))
            return _refused(call, f"{self.tripped} (limits.repeat_stop); the turn ends here", "blocked", "watchdog")
        if verdict == "warn" and found is not None:
            self._warned[call.id] = repeat_note(call.name, found)
        return None

    def _screen(self, call: ToolCall, mode: TurnMode) -> Screened | Refused:
        """Refusals the model should read or the call with its policy."""
        setup = self.setup
        tool = setup.runtime.tools.get(call.name)
        if tool is None and configured_policy(call.name, setup.runtime.locked) == "deny":
            return _refused(call, f"{call.name} is disabled by the admin policy ({setup.runtime.locked_by})", "denied")
        if tool is None:
            return _refused(call, f"unknown tool {call.name!r}; available: {', '.join(setup.runtime.tools)}")
        if setup.runtime.allowed_tools is not None and call.name not in setup.runtime.allowed_tools:
            allowed = ", ".join(setup.runtime.allowed_tools)
            return _refused(call, f"{call.name} isn't among the tools this command allows ({allowed})")
        refused = refusal(mode, tool)
        if refused is not None:
            return _refused(call, refused, decided_by="mode")
        try:
            args = tool.parse_arguments(call.arguments)
        except ToolError as exc:
            return _refused(call, str(exc))
        policy, decided_by = resolve_policy(
            call.name,
            tool.kind is ToolKind.MUTATING,
            setup.runtime.policies,
            setup.runtime.approve_override,
            setup.session.always_allowed,
            setup.runtime.locked,
        )
        if policy == "deny":
            by_admin = configured_policy(call.name, setup.runtime.locked) == "deny"
            whose = f"the admin policy ({setup.runtime.locked_by})" if by_admin else "the approval policy"
            return _refused(call, f"{call.name} is denied by {whose}", "denied")
        if policy == "ask-if-risky":
            reasons = risky_reasons(str(getattr(args, "code", "")))
            if not reasons:
                return Screened(call, tool, args, "allow", "policy")
            return Screened(call, tool, args, "ask", "policy", "; ".join(reasons[:3]))
        return Screened(call, tool, args, policy, decided_by)

    async def _ask(self, asking: list[Screened]) -> list[Screened]:
        """One permission request for the batch; returns the calls that may run."""
        gate = self.setup.runtime.gate
        request = gate.new_request(
            [
                PendingCall(
                    id=s.call.id,
                    name=s.call.name,
                    args=s.call.parsed_arguments(),
                    reason=s.ask_reason,
                    preview=await self._preview(s),
                    presentation=s.tool.presentation,
                )
                for s in asking
            ]
        )
        await self.emit(request)
        decisions = await gate.decide(request, self.control)
        allowed = []
        for screened in asking:
            call = screened.call
            decision = decisions[call.id]
            await self.emit(decision)
            if decision.decision == "deny":
                self._decisions[call.id] = Decision("denied", decision.decided_by, decision.reason)
                await self._record(error_result(call, _denial_text(call.name, decision)), "denied")
                continue
            self._decisions[call.id] = Decision("allowed", decision.decided_by)
            if decision.decision == "always":
                self.setup.session.always_allowed.add(call.name)
            allowed.append(screened)
        return allowed

    async def _preview(self, screened: Screened) -> str | None:
        """What the call would change, for the approval card; a failing preview shows none."""
        preview = screened.tool.preview
        if preview is None:
            return None
        try:
            text = await preview(screened.args, self.tool_context)
        except Exception:  # a preview bug must not cost the user the question
            return None
        return self.setup.runtime.redactor.redact(text) if text is not None else None

    # -- running ------------------------------------------------------------------------------

    async def _run_concurrently(self, runnable: list[Screened]) -> None:
        if not runnable:
            return
        limit = asyncio.Semaphore(self.setup.runtime.max_parallel)

        async def run_one(screened: Screened) -> None:
            async with limit:
                blocked = await self._pre_tool(screened)
                if blocked is not None:
                    await self._record(error_result(screened.call, blocked), "blocked")
                    return
                result = await self._invoke(screened)
            await self._record(result, "ok" if result.ok else "error")
            self._post_tool(screened, result)

        tasks = [asyncio.ensure_future(run_one(item)) for item in runnable]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _pre_tool(self, screened: Screened) -> str | None:
        """The pre_tool hooks run after approval; a block is what the model reads instead."""
        hooks = self.setup.runtime.hooks
        if not hooks:
            return None
        call = screened.call
        reason = await hooks.pre_tool(call.name, self._hook_payload(call))
        if reason is None:
            return None
        self._decisions[call.id] = Decision("blocked", "hook", reason)
        return f"blocked by pre_tool hook: {reason}"

    def _post_tool(self, screened: Screened, result: ToolResultMessage) -> None:
        """The post_tool hooks observe; the turn does not wait for them."""
        hooks = self.setup.runtime.hooks
        if hooks:
            preview = shorten((result.output if result.ok else result.error) or "", PREVIEW_CHARS)
            payload = {
                **self._hook_payload(screened.call),
                "status": "ok" if result.ok else "error",
                "preview": preview,
            }
            hooks.post_tool(screened.call.name, payload)

    def _hook_payload(self, call: ToolCall) -> dict[str, object]:
        setup = self.setup
        return {
            "session": setup.session.name,
            "turn": setup.session.turns,
            "tool": call.name,
            "arguments": call.parsed_arguments(),
        }

    async def _invoke(self, screened: Screened) -> ToolResultMessage:
        call = screened.call
        telemetry = self.setup.observers.telemetry
        attributes = {
            "blitz.tool": call.name,
            "blitz.call_id": call.id,
            "blitz.arguments": telemetry.content(call.arguments),
        }
        with telemetry.child_span("blitz.tool_call", attributes) as span:
            result = await self._invoke_tool(screened)
            span.set_attribute("blitz.ok", result.ok)
            if not result.ok:  # the error text may hold code or printed secrets: content only
                mark_error(span, telemetry.content(result.error or "") or "the tool call failed")
            return result

    async def _invoke_tool(self, screened: Screened) -> ToolResultMessage:
        call, tool, setup = screened.call, screened.tool, self.setup
        try:
            output = await tool.func(screened.args, dataclasses.replace(self.tool_context, call_id=call.id))
        except ToolError as exc:
            self._shown_images[call.id] = exc.display_images
            return error_result(call, setup.runtime.redactor.redact(str(exc)))
        except Exception as exc:  # a tool bug must not end the turn: the model reads it
            return error_result(call, setup.runtime.redactor.redact(f"{call.name} failed: {type(exc).__name__}: {exc}"))
        if not isinstance(output, ToolOutput):
            return ToolResultMessage(call_id=call.id, name=call.name, output=setup.runtime.redactor.redact(output))
        self._shown_images[call.id] = output.display_images
        if output.images and not supports_vision(setup.choice.model):
            return error_result(call, blind_model_text(setup.choice.model.name))
        text = setup.runtime.redactor.redact(output.text)
        return ToolResultMessage(call_id=call.id, name=call.name, output=text, images=output.images)

    # -- results ------------------------------------------------------------------------------

    async def _record(self, result: ToolResultMessage, status: ToolOutcome) -> None:
        note = self._warned.get(result.call_id)
        if note is not None:
            field = "output" if result.ok else "error"
            result = result.model_copy(update={field: f"{getattr(result, field) or ''}\n\n{note}"})
        self.results[result.call_id] = result
        self._audit(result, status)
        await self._emit_result(result, status)

    def _audit(self, result: ToolResultMessage, status: ToolOutcome) -> None:
        """One record per call, with what was decided and by whom."""
        call = next(c for c in self.calls if c.id == result.call_id)
        decision = self._decisions.get(call.id) or Decision("cancelled", "stop")
        session = self.audit_into
        session.record_audit(
            AuditRecord(
                session=session.name,
                agent=self.setup.choice.agent,
                turn=session.turns,
                call_id=call.id,
                tool=call.name,
                arguments=shorten(call.arguments, ARGUMENT_CHARS),
                decision=decision.decision,
                decided_by=decision.decided_by,
                reason=decision.reason,
                status=status,
                caller=self.setup.runtime.caller,
            )
        )

    async def _emit_result(self, result: ToolResultMessage, status: ToolOutcome) -> None:
        preview = (result.output if result.ok else result.error) or ""
        images, omitted = shown_images(self._shown_images.pop(result.call_id, []))
        await self.emit(
            ToolResultEvent(
                id=result.call_id,
                name=result.name,
                ok=result.ok,
                status=status,
                error=result.error,
                preview=shorten(preview, PREVIEW_CHARS),
                images=images,
                images_omitted=omitted,
            )
        )


def error_result(call: ToolCall, message: str) -> ToolResultMessage:
    return ToolResultMessage(call_id=call.id, name=call.name, error=message)


def _refused(call: ToolCall, message: str, status: ToolOutcome = "error", decided_by: DecidedBy = "policy") -> Refused:
    return Refused(error_result(call, message), status, decided_by)


def blind_model_text(model: str) -> str:
    """The error a tool's images become when the model cannot see them."""
    return (
        f"this model ({model}) cannot see images (litellm does not list it as a vision model); "
        "work from the data instead, or ask the user to switch to a vision model"
    )


def _denial_text(tool_name: str, decision: PermissionDecision) -> str:
    return f"{tool_name} was denied: {decision.reason or 'the user said no'}"
