"""Running a `%%blitz` turn in a cell: the live widget where a front end can show it, plain
outputs where none can, and always a static rendering that survives the notebook.

`probe.FrontEndProbe` asks at the turn's start whether the widget is seen (skipped where the
answer is known, so a headless cell never waits); until then events are folded into the turn's
state and a tool call waits, so nothing runs unseen. The cell ends with a static rendering whose
output metadata holds the turn record. Follow-up turns (an approved plan's carry-out, leftover
steer messages, Continue at the step limit) run in the same cell, each with its own widget. A
`--plan` turn passes no reviewer when its widget is not seen: the plan is then the answer.
Outputs are only made in the cell's own context: output made in a comm callback would be
parented to the comm message and land nowhere.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine.events import Event, PermissionRequest, ProgressEvent, ToolCallEvent, TurnDone, TurnStarted
from ..engine.steering import leftover_prompt
from ..engine.turn.modes import TurnMode, go_ahead_prompt
from ..engine.turn.options import FrontEnd, RunOptions
from .probe import FrontEndProbe, cell_request, known_mode
from .render import PlainPresenter

if TYPE_CHECKING:
    from ..core.attachments import Attachment
    from ..engine.turn.modes import PlanReviewer
    from ..engine.turn.setup import TurnResult
    from ..engine.workspace import Workspace
    from .presenters import Presenter
    from .render import CellOutput
    from .widgets.controller import TurnController
    from .widgets.output import WidgetOutput

TICK_S = 0.1
"""The ticker's period: a kernel interrupt reaches an awaiting cell within about this long."""
CARRY_OUT_LABEL = "Carrying out the approved plan"
CONTINUE_LABEL = "Continuing past the step limit"


@dataclass
class NextTurn:
    """A turn the cell runs: the typed one, or a follow-up the cell starts by itself."""

    prompt: str
    plan: bool
    label: str = ""
    """Shown instead of the prompt (which the user did not type)."""
    resume: bool = False
    """Continue pressed at the step limit: `continue_turn`, no new prompt."""


async def run_turn_in_cell(
    workspace: Workspace,
    prompt: str,
    *,
    session: str,
    options: RunOptions,
    plain: bool = False,
    shell: Any = None,
    attachments: list[Attachment] | None = None,
) -> TurnResult:
    """Run `prompt` and its follow-ups (an approved plan's carry-out, leftover steer messages)
    in the current cell; returns the last turn's result. BlitzErrors raised before a turn
    starts propagate. A plan-mode `options` makes the first turn a plan turn. `attachments`
    (the prompt's `@` references) go with the first turn only: follow-ups find them in the
    history."""
    kernel = getattr(shell, "kernel", None)
    widget_capable = not plain and kernel is not None and known_mode(cell_request(kernel)) != "plain"
    ticker = asyncio.ensure_future(tick_forever())
    try:
        queue = [NextTurn(prompt, plan=options.plan)]
        result: TurnResult | None = None
        while queue:
            planned = queue.pop(0)
            probe = FrontEndProbe() if widget_capable else None
            turn = CellTurn(workspace, session, planned.prompt, probe=probe, label=planned.label, resume=planned.resume)
            mode = TurnMode.PLAN if planned.plan else TurnMode.NORMAL
            result = await turn.run(dataclasses.replace(options, mode=mode), attachments)
            attachments = None
            queue[:0] = follow_ups(planned, result, turn.follow_up)
            if turn.presenter is not None and turn.presenter.continue_requested:
                queue.insert(0, NextTurn("", plan=False, label=CONTINUE_LABEL, resume=True))
        assert result is not None
        return result
    finally:
        ticker.cancel()


def follow_ups(turn: NextTurn, result: TurnResult, leftovers: list[str]) -> list[NextTurn]:
    """What the cell runs next: an approved plan's carry-out, with the leftover steer messages
    framed before its prompt; else the leftovers alone, framed, in plan mode still if the turn
    was a plan turn (the label shows them as the user wrote them)."""
    approved = result.plan_status == "approved" and bool(result.plan)
    if approved:  # the messages go, marked, with the carry-out's prompt
        return [
            NextTurn(leftover_prompt(leftovers, go_ahead_prompt(result.plan or "")), plan=False, label=CARRY_OUT_LABEL)
        ]
    if leftovers:
        return [NextTurn(leftover_prompt(leftovers), plan=turn.plan, label="\n\n".join(leftovers))]
    return []


async def tick_forever() -> None:
    """Wake the loop every TICK_S so a kernel interrupt reaches the turn promptly
    (docs/architecture.md)."""
    while True:  # noqa: ASYNC110 - waking the loop is the point, there is nothing to wait for
        await asyncio.sleep(TICK_S)


class CellTurn:
    """One turn shown in the cell: fold events into the state, ask which front end is there
    (when `probe` is given), show the turn through the presenter that fits, then leave the
    static rendering. Without a probe the turn is plain from the start."""

    def __init__(
        self,
        workspace: Workspace,
        session: str,
        prompt: str,
        *,
        probe: FrontEndProbe | None,
        label: str = "",
        resume: bool = False,
        plain_output: CellOutput | None = None,
        widget_output: WidgetOutput | None = None,
    ) -> None:
        """`plain_output` and `widget_output` default to the cell's own (IPython's display)."""
        from .widgets.controller import TurnController
        from .widgets.state import TurnState

        self.workspace = workspace
        self.session = session
        self.prompt = prompt
        self.probe = probe
        self.resume = resume
        self.controller: TurnController | None = (
            TurnController(workspace, session, prompt, label=label) if probe else None
        )
        self.state = (
            self.controller.state
            if self.controller
            else TurnState(turn_id="", prompt=prompt, session=session, label=label)
        )
        self._plain_output = plain_output
        self._widget_output = widget_output
        self.presenter: Presenter | None = None if probe else PlainPresenter(self.state, output=plain_output)
        self.follow_up: list[str] = []
        self._over = False
        """The turn raised: a late answer shows nothing any more."""
        if probe is not None:
            # The answer arrives in a comm callback or a timer: show it in the cell's context.
            probe.answer.add_done_callback(self._answered, context=contextvars.copy_context())

    async def run(self, options: RunOptions, attachments: list[Attachment] | None = None) -> TurnResult:
        try:
            front_end = FrontEnd(on_event=self.on_event)
            if self.controller is not None:
                front_end = FrontEnd(
                    on_event=self.on_event,
                    approver=self.controller.approver,
                    plan_reviewer=await self._plan_reviewer(options.plan),
                )
            if self.controller is not None:
                self.controller.continue_steps = options.max_turns or self.workspace.config.limits.max_turns
            if self.resume:
                result = await self.workspace.continue_turn(self.session, options, front_end)
            else:
                result = await self.workspace.run_turn(
                    self.prompt, self.session, options, front_end, attachments=attachments
                )
        except BaseException:
            self._abandon()
            raise
        await self._finish(result)
        return result

    async def _plan_reviewer(self, plan_turn: bool) -> PlanReviewer | None:
        """The widget's reviewer, or None when nobody can see the widget (the plan is then the
        answer). A plan turn settles this before it starts (a few ms in JupyterLab; the
        probe's timeout where no front end answers); any other turn keeps the probe running
        beside the model and takes the reviewer (the agent may propose a plan on its own)."""
        controller, probe = self.controller, self.probe
        assert controller is not None and probe is not None
        if not plan_turn:
            return controller.plan_reviewer
        probe.start(self.state.turn_id)
        await asyncio.shield(probe.answer)
        self._settle()
        if probe.mode == "widget" and await controller.wait_rendered():
            return controller.plan_reviewer
        return None

    def on_event(self, event: Event) -> Awaitable[None] | None:
        """The engine's event handler. Returns an awaitable only when the turn must wait for
        the front end's answer (the engine awaits it); otherwise it is synchronous."""
        if isinstance(event, TurnStarted | ProgressEvent) and self.probe is not None:
            self.probe.start(self.state.turn_id)  # MCP servers starting: the widget says so meanwhile
        self.state.apply(event)
        if self.controller is not None:
            self.controller.observe(event)
        if self.presenter is not None:
            return self.presenter.on_event(event)
        return self._while_asking(event)

    def _while_asking(self, event: Event) -> Awaitable[None] | None:
        """No presenter yet: the event is in the state, shown once the answer comes. A tool
        call waits for the answer; so does the turn's end where a front end was ever seen."""
        probe = self.probe
        assert probe is not None
        if probe.decided:  # answered; the cell has not shown it yet
            return self._settle().hold(event)
        if isinstance(event, ToolCallEvent | PermissionRequest):
            return self._settled_soon(event)
        if isinstance(event, TurnDone):
            if probe.memory.front_end_seen:
                return self._settled_soon(event)
            probe.decide("plain")  # no front end so far in this kernel: no reason to wait
            self._settle()
        return None

    async def _settled_soon(self, event: Event) -> None:
        assert self.probe is not None
        await asyncio.shield(self.probe.answer)
        waiting = self._settle().hold(event)
        if waiting is not None:
            await waiting

    def _answered(self, _answer: asyncio.Future[Any]) -> None:
        if not self._over:
            self._settle()

    def _settle(self) -> Presenter:
        """The presenter the answer calls for; made (and caught up) once."""
        if self.presenter is not None:
            return self.presenter
        probe, controller = self.probe, self.controller
        assert probe is not None and controller is not None and probe.decided
        probe.close()
        presenter: Presenter
        if probe.mode == "widget":
            from .presenters import WidgetPresenter

            presenter = WidgetPresenter(controller, self.workspace.kernel, output=self._widget_output)
        else:
            presenter = PlainPresenter(self.state, output=self._plain_output)
        self.presenter = presenter
        presenter.catch_up()
        return presenter

    async def _finish(self, result: TurnResult) -> None:
        if self.probe is not None:
            self.probe.decide("plain")  # the turn ended before the front end answered
        presenter = self._settle()
        self.follow_up = await presenter.finish(result)
        if self.controller is not None:
            self.controller.close()

    def _abandon(self) -> None:
        """The turn raised (cancelled from outside, or failed to start): leave what was shown,
        and close the widget and the probe."""
        self._over = True
        if self.probe is not None:
            self.probe.close()
        if self.presenter is not None:
            self.presenter.abandon()
        if self.controller is not None:
            self.controller.close()
