"""A streamed turn for an outside client (`blitz acp`, docs/acp.md): the turn runs in the
kernel like a `%%blitz` turn, and what it shows goes out to the client as it happens.

Each event is a display of EVENT_MIME parented to the request's execute (captured when the
request starts: while the turn runs, ipykernel handles the client's comm messages and would
otherwise parent later output to them). A permission request or a plan to review goes out the
same way and waits for the client's answer, a comm_open to CONTROL_TARGET carrying an
OutsideControl; the same message stops or steers the turn. Every control names its stream, so
a late answer to a finished turn is dropped. Nothing here listens anywhere: the controls come
over the kernel's own signed connection.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from ..core.outside_wire import (
    CONTROL_TARGET,
    EVENT_MIME,
    OutsideControl,
    OutsideEvent,
    OutsideReply,
    OutsideRequest,
    PlanToReview,
)
from ..engine.events import PermissionDecision, PermissionRequest
from .live import tick_forever

_streams: dict[str, LiveStream] = {}


class LiveStream:
    """One running streamed turn: where its output goes and the answers it waits for."""

    def __init__(self, stream_id: str, session: str, workspace: Any) -> None:
        from IPython import get_ipython

        self.id = stream_id
        self.session = session
        self.workspace = workspace
        self.kernel = get_ipython().kernel
        self.parent = self.kernel.get_parent("shell")
        self.waiting: dict[str, asyncio.Future[Any]] = {}
        self.early: dict[str, OutsideControl] = {}
        """Answers that came before their request was waited for (kept, not dropped)."""

    def publish(self, payload: OutsideEvent) -> None:
        content = {"data": {EVENT_MIME: payload.model_dump(mode="json"), "text/plain": ""}, "metadata": {}}
        self.kernel.session.send(self.kernel.iopub_socket, "display_data", content, parent=self.parent)

    async def on_event(self, event: Any) -> None:
        self.publish(OutsideEvent(stream=self.id, event=event.model_dump(mode="json")))

    async def wait_for(self, request_id: str) -> Any:
        if request_id in self.early:
            return self.early.pop(request_id)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[request_id] = future
        try:
            return await future
        finally:
            self.waiting.pop(request_id, None)

    def control(self, control: OutsideControl) -> None:
        if control.kind in ("stop", "steer"):
            from ..errors import BlitzError

            refused = None
            try:
                if control.kind == "stop":
                    self.workspace.stop(self.session)
                elif control.text:
                    self.workspace.steer(self.session, control.text, inbox=False)
            except BlitzError as error:  # the turn is ending: too late to steer it
                refused = str(error)
            if control.id:
                self.publish(OutsideEvent(stream=self.id, acked=control.id, refused=refused))
        elif control.request_id in self.waiting:
            if not self.waiting[control.request_id].done():
                self.waiting[control.request_id].set_result(control)
        elif control.request_id is not None:
            self.early[control.request_id] = control


class StreamApprover:
    """Waits for the outside client's answer (its `session/request_permission`) to the
    request the turn has just shown as an event; fail-closed: a call the answer does not name
    is denied by the gate."""

    interactive = True

    def __init__(self, stream: LiveStream) -> None:
        self.stream = stream

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        answer: OutsideControl = await self.stream.wait_for(request.request_id)
        return [
            PermissionDecision(call_id=d.call_id, decision=d.decision, reason=d.reason, decided_by="user")
            for d in answer.decisions
        ]


class StreamPlanReviewer:
    """Shows the plan of a plan-mode turn to the client for Approve / Reject."""

    def __init__(self, stream: LiveStream) -> None:
        self.stream = stream
        self.count = 0

    async def review(self, plan: str) -> Any:
        from ..engine.turn.modes import PlanReview

        self.count += 1
        request_id = f"plan-{self.count}"
        self.stream.publish(
            OutsideEvent(stream=self.stream.id, plan_review=PlanToReview(request_id=request_id, plan=plan))
        )
        answer: OutsideControl = await self.stream.wait_for(request_id)
        return PlanReview(approved=answer.approved, reason=answer.text)


def stream_approver(workspace: Any, stream: LiveStream, client: str) -> Any:
    """The ACP client's answer, raced with the notebook's when its front end is connected."""
    from .outside_approval import EitherApprover, notebook_approver

    asked = StreamApprover(stream)
    notebook = notebook_approver(workspace, client)
    if notebook is None:
        return asked

    def settle(request_id: str) -> None:
        stream.waiting.pop(request_id, None)
        stream.publish(OutsideEvent(stream=stream.id, settled=request_id))

    return EitherApprover(asked, notebook, settle)


async def run_prompt(workspace: Any, session: str, request: OutsideRequest) -> OutsideReply:
    """Run the request's prompt as a turn of `session`, streaming it to the client."""
    from ..engine.turn.modes import TurnMode
    from ..engine.turn.options import FrontEnd, RunOptions

    if not request.stream:
        return OutsideReply(status="error", text="malformed request: a prompt needs `stream`")
    install_control_target()
    stream = LiveStream(request.stream, session, workspace)
    _streams[stream.id] = stream
    front_end = FrontEnd(
        approver=stream_approver(workspace, stream, request.client),
        plan_reviewer=StreamPlanReviewer(stream),
        on_event=stream.on_event,
        caller=request.client,
    )
    queue = [(request.prompt or "", request.plan)]
    ticker = asyncio.ensure_future(tick_forever())
    try:
        while queue:
            prompt, plan = queue.pop(0)
            options = RunOptions(mode=TurnMode.PLAN if plan else TurnMode.NORMAL)
            result = await workspace.run_turn(prompt, session, options, front_end)
            queue = follow_ups(result, plan)
    finally:
        ticker.cancel()
        _streams.pop(stream.id, None)
        for future in stream.waiting.values():
            future.cancel()
    status = "ok" if result.stop_reason in ("end_turn", "cancelled", "max_turns") else "error"
    return OutsideReply(status=status, text=result.error or "", session=session, stop_reason=result.stop_reason)


def follow_ups(result: Any, plan: bool) -> list[tuple[str, bool]]:
    """What the prompt runs next, as a `%%blitz` cell does: an approved plan's carry-out
    (normal mode), then steering messages no tool result carried, as one prompt."""
    from ..engine.turn.modes import go_ahead_prompt

    approved = result.plan_status == "approved" and bool(result.plan)
    turns = [(go_ahead_prompt(result.plan or ""), False)] if approved else []
    if result.leftovers and result.stop_reason == "end_turn":
        turns.append(("\n\n".join(result.leftovers), plan and not approved))
    return turns


def install_control_target() -> None:
    """Register the comm target the client's controls open (once per kernel)."""
    from IPython import get_ipython

    manager = get_ipython().kernel.comm_manager
    if CONTROL_TARGET not in manager.targets:
        manager.register_target(CONTROL_TARGET, _on_control)


def _on_control(comm: Any, message: dict[str, Any]) -> None:
    """A control for a running stream; anything else (malformed, stale) is dropped."""
    try:
        control = OutsideControl.model_validate(message.get("content", {}).get("data") or {})
    except ValidationError:
        control = None
    try:
        stream = _streams.get(control.stream) if control is not None else None
        if stream is not None and control is not None:
            stream.control(control)
    finally:
        comm.close()
