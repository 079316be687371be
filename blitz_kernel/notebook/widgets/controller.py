"""What the widget's buttons and boxes do to a running turn: approve, review a plan, steer,
ask aside, stop.

The controller owns one turn's TurnState, its TurnView and the coalescing sync. Front-end
messages arrive in comm callbacks on the kernel's main thread while the cell awaits the turn
(docs/architecture.md); a callback only changes state, resolves a future or starts a task. It
never prints or displays (that output would belong to the comm message, not to the cell).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, assert_never

from ...engine.events import Event, PermissionDecision, PermissionRequest, TextEvent, TurnDone
from ...engine.turn.modes import PlanReview
from ...errors import BlitzError, SteerTooLateError
from .nested import asked
from .state import TurnState
from .sync import WidgetSync
from .view import (
    AsideMessage,
    ContinueMessage,
    DecideMessage,
    FrontEndMessage,
    ReadyMessage,
    ReviewMessage,
    SteerMessage,
    StopMessage,
    TurnView,
)

if TYPE_CHECKING:
    from ...engine.turn.setup import TurnResult
    from ...engine.workspace import Workspace

STOPPED_REASON = "the user pressed Stop (denied)"
PLAN_STOPPED_REASON = "the user pressed Stop"
ASIDE_CANCELLED = "aside cancelled"


@dataclass
class OpenRequest:
    """A permission request the widget shows, and the answers clicked so far."""

    request: PermissionRequest
    answered: asyncio.Future[list[PermissionDecision]]
    decisions: dict[str, PermissionDecision] = field(default_factory=dict)

    def complete(self) -> bool:
        return len(self.decisions) == len(self.request.calls)

    def resolve(self) -> None:
        if not self.answered.done():
            self.answered.set_result(list(self.decisions.values()))


@dataclass
class OpenReview:
    """A proposed plan the widget shows with Approve plan / Reject."""

    review_id: int
    answered: asyncio.Future[PlanReview]

    def resolve(self, review: PlanReview) -> None:
        if not self.answered.done():
            self.answered.set_result(review)


class WidgetApprover:
    """The Approver (engine/approval.py) behind the widget's Allow once / Always allow / Deny.

    Interactive only while a view of the turn has rendered. The engine reads `interactive`
    once, right after the PermissionRequest event; the cell's event handler first waits
    (bounded) for a displayed widget to render (`TurnController.wait_until_seen`), so a request
    nobody can see gets the engine's own headless verdict — never left hanging, never
    silently allowed, and with no second copy of that rule here.
    """

    def __init__(self, controller: TurnController) -> None:
        self._controller = controller

    @property
    def interactive(self) -> bool:
        return self._controller.rendered.is_set()

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        return await self._controller.ask(request)


class WidgetPlanReviewer:
    """The PlanReviewer (engine/modes.py) behind the widget's Approve plan / Reject.

    A turn learns whether its widget is seen only while it runs: when the plan comes and the
    widget never rendered, the review answers None and the plan becomes the turn's answer,
    exactly as with no reviewer at all.
    """

    def __init__(self, controller: TurnController) -> None:
        self._controller = controller

    async def review(self, plan: str) -> PlanReview | None:
        controller = self._controller
        if not await controller.wait_rendered():
            return None  # nobody sees the widget: the plan is the turn's answer
        return await controller.review_plan(plan)


class TurnController:
    """One turn's widget: state, view, sync, approvals, steering, asides and Stop."""

    def __init__(
        self,
        workspace: Workspace,
        session: str,
        prompt: str,
        *,
        render_timeout: float | None = None,
        label: str = "",
    ) -> None:
        self.workspace = workspace
        self.turn_id = uuid.uuid4().hex
        self.state = TurnState(turn_id=self.turn_id, prompt=prompt, session=session, label=label)
        self.render_timeout = workspace.config.notebook.render_timeout_s if render_timeout is None else render_timeout
        """How long a permission request or a plan waits for the widget to render before nobody
        is taken to be there (fail-closed: nobody can click a widget nobody sees)."""
        self.view: TurnView | None = None
        """The widget, once the cell shows it (a front end answered the probe)."""
        self.sync: WidgetSync | None = None
        self.rendered = asyncio.Event()
        """Set by the first message from a view of this turn: somebody can see it and click."""
        self.approver = WidgetApprover(self)
        self.plan_reviewer = WidgetPlanReviewer(self)
        self.late_steers: list[str] = []
        """Steer messages that came when no turn ran (SteerTooLateError): the next prompt."""
        self.cell_task = asyncio.current_task()
        """The task a second Stop cancels: the cell's, as a kernel interrupt would."""
        self._requests: dict[str, OpenRequest] = {}
        """Open permission requests by id: the turn's own, or several at once when parallel
        sub-agents ask (request ids are unique in the kernel)."""
        self._review: OpenReview | None = None
        self._review_ids = 0
        self._offer: tuple[int, asyncio.Future[bool]] | None = None
        self.continue_steps = 0
        """How many more steps Continue runs (the turn's own step limit); 0: not offered."""
        self._asides: dict[int, asyncio.Task[None]] = {}

    # -- the view ---------------------------------------------------------------------------

    def create_view(self) -> TurnView:
        """The widget, with the state so far (its comm opens now)."""
        values = self.state.take_dirty()
        self.view = TurnView(self.turn_id, self.receive, **values)
        self.sync = WidgetSync(self.view, self.state)
        return self.view

    def apply(self, event: Event) -> None:
        """An engine event: fold it in and let the sync decide when to send it."""
        self.state.apply(event)
        self.observe(event)
        self.send(event)

    def observe(self, event: Event) -> None:
        """What an event (already folded into the state) means for the buttons: a permission
        request opens now, not when the approver starts waiting, since a click may come first."""
        request = asked(event)
        if request is not None and request.request_id not in self._requests:
            self._requests[request.request_id] = OpenRequest(request, asyncio.get_running_loop().create_future())

    def send(self, event: Event) -> None:
        """Let the sync send what `event` changed: at once for what a user waits on."""
        self.changed(urgent=isinstance(event, TurnDone) or asked(event) is not None)

    def changed(self, *, urgent: bool = False) -> None:
        if self.sync is None:
            return
        if urgent:
            self.sync.flush()
        else:
            self.sync.changed()

    def close(self) -> None:
        for task in self._asides.values():
            task.cancel()
        if self.sync is not None:
            self.sync.close()
        if self.view is not None:
            with contextlib.suppress(Exception):  # the comm may already be gone with the kernel
                self.view.close()

    # -- messages from the front end --------------------------------------------------------

    def receive(self, message: FrontEndMessage) -> None:
        """A message for this turn (view.py already dropped stale and malformed ones)."""
        self.rendered.set()  # any message proves that a view of this turn is on screen
        match message:
            case DecideMessage():
                self._on_decide(message)
            case ReviewMessage():
                self._on_review(message)
            case SteerMessage():
                self._on_steer(message.text)
            case AsideMessage():
                self._on_aside(message.question)
            case StopMessage():
                self._on_stop()
            case ContinueMessage():
                self._on_continue(message)
            case ReadyMessage():
                pass  # rendered, and nothing more to do
            case _:
                assert_never(message)
        self.changed(urgent=not isinstance(message, SteerMessage | AsideMessage))

    def _on_decide(self, message: DecideMessage) -> None:
        request = self._requests.get(message.request_id)
        if request is None:
            return  # an answer to a request that is over: stale
        if message.call_id not in {call.id for call in request.request.calls} or message.call_id in request.decisions:
            return
        reason = (message.reason or "").strip() or None
        request.decisions[message.call_id] = PermissionDecision(
            call_id=message.call_id, decision=message.decision, reason=reason if message.decision == "deny" else None
        )
        self.state.decide_call(message.request_id, message.call_id, message.decision)
        if request.complete():
            request.resolve()

    def _on_review(self, message: ReviewMessage) -> None:
        review = self._review
        if review is None or message.review_id != review.review_id:
            return  # a plan the turn no longer waits for: stale
        reason = None if message.approved else (message.reason or "").strip() or None
        review.resolve(PlanReview(approved=message.approved, reason=reason))

    def _on_continue(self, message: ContinueMessage) -> None:
        offer = self._offer
        if offer is None or offer[0] != message.offer_id or offer[1].done():
            return  # an offer the cell no longer waits for: stale
        offer[1].set_result(message.go)

    async def offer_continue(self) -> bool:
        """The turn stopped at its step limit; ask whether to go on. True when
        Continue was pressed; False for End turn, Stop, or no answer within the approval
        timeout (a widget nobody answers must not hold the cell for ever when one is set)."""
        self._review_ids += 1
        offer_id = self._review_ids
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._offer = (offer_id, future)
        self.state.set_offer(offer_id, self.continue_steps)
        self.changed(urgent=True)
        try:
            return await asyncio.wait_for(future, self.workspace.config.approval.timeout_s)
        except TimeoutError:
            return False
        finally:
            self._offer = None
            self.state.set_offer(None)
            self.changed(urgent=True)

    def _on_steer(self, text: str) -> None:
        """Queue it for the running turn, or keep it as the next prompt."""
        state = self.state
        if state.done_seen or state.phase != "running":
            self._steer_later(text)
            return
        try:
            self.workspace.steer(state.session, text)
        except SteerTooLateError:
            self._steer_later(text)
        else:
            state.add_steer(text)

    def _steer_later(self, text: str) -> None:
        self.late_steers.append(text)
        self.state.add_steer(text, "next_prompt", "sent as the next prompt")

    def _on_aside(self, question: str) -> None:
        aside_id = self.state.add_aside(question)
        self._asides[aside_id] = asyncio.ensure_future(self._answer_aside(aside_id, question))

    async def _answer_aside(self, aside_id: int, question: str) -> None:
        """Answered from a read-only copy of the session; nothing is recorded."""
        state = self.state
        streamed: list[str] = []

        def show(event: Event) -> None:
            if isinstance(event, TextEvent) and not event.thought:
                if event.repeat:
                    streamed[:] = [event.text]
                elif event.delta:
                    streamed.append(event.text)
                state.stream_aside(aside_id, "".join(streamed))
                self.changed()

        try:
            result = await self.workspace.aside(state.session, question, on_event=show)
        except asyncio.CancelledError:  # cancelled before the engine's turn began
            state.set_aside(aside_id, "cancelled", "".join(streamed), ASIDE_CANCELLED)
        except BlitzError as exc:
            state.set_aside(aside_id, "failed", "".join(streamed), str(exc))
        except Exception as exc:  # an aside must never break the turn it was asked beside
            state.set_aside(aside_id, "failed", "".join(streamed), f"{type(exc).__name__}: {exc}")
        else:
            # The engine turns a cancellation into a result, so its stop reason tells an answer
            # from an aside that was cut short or failed (an empty text is not an answer).
            if result.stop_reason == "end_turn":
                state.set_aside(aside_id, "answered", result.text)
            elif result.stop_reason == "cancelled":
                state.set_aside(aside_id, "cancelled", "".join(streamed), ASIDE_CANCELLED)
            else:
                error = result.error or f"the aside stopped ({result.stop_reason})"
                state.set_aside(aside_id, "failed", "".join(streamed), error)
        finally:
            self._asides.pop(aside_id, None)
            self.changed(urgent=True)

    def _on_stop(self) -> None:
        """First press: stop after the current step. Second: now (cancel, as an interrupt)."""
        state = self.state
        if state.phase == "done":
            return
        if self._offer is not None and not self._offer[1].done():
            self._offer[1].set_result(False)  # Stop while Continue is offered: the turn ends here
            return
        if state.phase == "finishing" or state.done_seen:
            state.set_stopping("force")
            for task in list(self._asides.values()):
                task.cancel()
            return
        if not state.stopping:
            state.set_stopping("graceful")
            self.workspace.stop(state.session)
            self._deny_open_request(STOPPED_REASON)
            if self._review is not None:
                self._review.resolve(PlanReview(approved=False, reason=PLAN_STOPPED_REASON))
        else:
            state.set_stopping("force")
            if self.cell_task is not None:
                self.cell_task.cancel()

    # -- approvals ------------------------------------------------------------------------

    async def wait_rendered(self) -> bool:
        """Whether a view of this turn is on screen: False at once when no widget was
        displayed (plain outputs), else after up to `render_timeout` for it to render."""
        if self.view is None:
            return False
        if not self.rendered.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.rendered.wait(), self.render_timeout)
        return self.rendered.is_set()

    async def wait_until_seen(self, request: PermissionRequest) -> None:
        """Before the engine decides `request` (the event handler awaits this): let a displayed
        widget render; if none does, take the request off the widget — the engine then answers
        it by the headless policy, since the approver is not interactive."""
        if not await self.wait_rendered():
            self.withdraw(request)

    async def ask(self, request: PermissionRequest) -> list[PermissionDecision]:
        """Show the request (the PermissionRequest event already put it in the state) and
        wait for an answer per call. Cancelled (force stop, interrupt): the buttons go away."""
        open_request = self._requests.get(request.request_id)
        if open_request is None:
            open_request = OpenRequest(request, asyncio.get_running_loop().create_future())
            self._requests[request.request_id] = open_request
        if self.state.stopping:
            self._deny_open_request(STOPPED_REASON)
        try:
            return await open_request.answered
        finally:
            self._requests.pop(request.request_id, None)
            self.state.close_request(request.request_id)
            self.changed(urgent=True)

    async def review_plan(self, plan: str) -> PlanReview:
        """Show the plan with Approve plan / Reject and wait for the click. Stop pressed
        (before or meanwhile) rejects it; a force stop or interrupt cancels the wait."""
        self._review_ids += 1
        review = OpenReview(self._review_ids, asyncio.get_running_loop().create_future())
        self._review = review
        self.state.open_review(review.review_id, plan)
        if self.state.stopping:
            review.resolve(PlanReview(approved=False, reason=PLAN_STOPPED_REASON))
        self.changed(urgent=True)
        try:
            return await review.answered
        finally:
            self._review = None
            self.state.close_review()
            self.changed(urgent=True)

    def withdraw(self, request: PermissionRequest) -> None:
        """Nobody can answer the request: take it off the widget."""
        self._requests.pop(request.request_id, None)
        self.state.close_request(request.request_id)
        self.changed(urgent=True)

    def _deny_open_request(self, reason: str) -> None:
        """Stop pressed: every open request (the turn's and its sub-agents') is denied."""
        for request in list(self._requests.values()):
            for call in request.request.calls:
                request.decisions.setdefault(
                    call.id, PermissionDecision(call_id=call.id, decision="deny", reason=reason)
                )
            request.resolve()

    # -- the end of the turn --------------------------------------------------------------

    async def wait_for_asides(self, limit_s: float) -> None:
        """Let side questions asked during the turn finish (bounded; Stop cancels them)."""
        tasks = list(self._asides.values())
        if not tasks:
            return
        self.state.set_phase("finishing")
        self.changed(urgent=True)
        _, still_running = await asyncio.wait(tasks, timeout=limit_s)
        for task in still_running:
            task.cancel()
        if still_running:
            await asyncio.wait(still_running)

    def finish(self, result: TurnResult) -> None:
        """The turn's outcome: dropped steer messages, the phase, a last exact flush."""
        state = self.state
        if result.dropped or result.stop_reason != "end_turn":
            state.drop_queued_steers(dropped_because(result.stop_reason))
        state.set_phase("done")
        self.changed(urgent=True)

    def follow_up(self, result: TurnResult) -> list[str]:
        """Steer messages to send as the next prompt: leftovers of a turn that
        ended normally and messages that came too late; none after any other end."""
        return self.state.follow_up(result, self.late_steers)


def dropped_because(stop_reason: str) -> str:
    """Why queued steer messages were dropped: every end but `end_turn` drops them."""
    if stop_reason == "cancelled":
        return "dropped: the turn was stopped"
    return f"dropped: the turn ended with {stop_reason}"
