"""Running a `%%blitz` turn in a cell: the live widget where a front end can show it, plain
outputs where none can, and always a static rendering that survives the notebook.

Which front end? A kernel cannot ask. At the turn's start it opens a comm with a target no
front end registers (`blitz.frontend_probe`): JupyterLab, Notebook 7 and other front ends built
on @jupyterlab/services answer an unknown target by closing the comm; nbclient, nbconvert,
papermill and a bare jupyter_client answer nothing. Closed → the widget; no answer within
`PROBE_TIMEOUT_S` → plain outputs (`--plain` and terminal IPython skip the probe). Until the
answer, events are buffered; a tool call or permission request waits for it, so nothing runs
unseen and a headless run prints each tool line before the tool runs.

Either way the cell ends with a static rendering (Markdown + text/plain) whose output metadata
holds the turn record under `blitz`: the widget is replaced by it; plain outputs carry it on the
answer's display. Follow-up turns run in the same cell, each with its own widget and rendering:
the carry-out of a plan approved in the widget (ENG-32: `go_ahead_prompt`, not in plan mode),
then steer messages that no tool result carried (ENG-41).

Plans (ENG-32): a widget turn reviews a proposed plan with Approve plan / Reject. The engine
takes the reviewer when the turn starts, and a reviewer cannot answer "nobody is here", so a
`--plan` turn learns first whether its widget is seen (probe, then render) and passes no
reviewer when it is not: the plan is then the answer, as in plain mode.

Outputs are only ever produced in the cell's own context (see `_in_cell`): output made in a
comm callback would be parented to the comm message and land nowhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..engine.events import PermissionRequest, ToolCallEvent, TurnDone, TurnStarted
from ..engine.modes import TurnMode, go_ahead_prompt
from ..engine.options import FrontEnd, RunOptions
from .render import PlainRenderer

if TYPE_CHECKING:
    from IPython.display import DisplayHandle

    from ..core.attachments import Attachment
    from ..engine.modes import PlanReviewer
    from ..engine.turn import TurnResult
    from ..engine.workspace import Workspace
    from .widgets.controller import TurnController
    from .widgets.state import TurnState

PROBE_TARGET = "blitz.frontend_probe"
PROBE_TIMEOUT_S = 2.0
"""How long a turn waits for a front end to answer the probe (JupyterLab: a few ms)."""
PROBE_TIMEOUT_AFTER_HEADLESS_S = 0.5
"""The wait once this kernel has seen no front end and never one: nbclient runs stay quick."""
ASIDE_WAIT_S = 60.0
"""How long a finished turn waits for side questions still being answered."""
TICK_S = 0.1
"""The ticker's period: a kernel interrupt reaches an awaiting cell within about this long."""
CARRY_OUT_LABEL = "Carrying out the approved plan"

Mode = Literal["probing", "widget", "plain"]


class FrontEndMemory:
    """What this kernel learnt about its front end from earlier probes."""

    front_end_seen = False
    headless_seen = False

    @classmethod
    def probe_timeout(cls) -> float:
        if cls.headless_seen and not cls.front_end_seen:
            return PROBE_TIMEOUT_AFTER_HEADLESS_S
        return PROBE_TIMEOUT_S


@dataclass
class NextTurn:
    """A turn the cell runs: the typed one, or a follow-up the cell starts by itself."""

    prompt: str
    plan: bool
    label: str = ""
    """Shown instead of the prompt (which the user did not type)."""


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
    widget_capable = not plain and getattr(shell, "kernel", None) is not None
    ticker = asyncio.ensure_future(tick_forever())
    try:
        queue = [NextTurn(prompt, plan=options.plan)]
        result: TurnResult | None = None
        while queue:
            planned = queue.pop(0)
            turn = CellTurn(workspace, session, planned.prompt, widget_capable=widget_capable, label=planned.label)
            mode = TurnMode.PLAN if planned.plan else TurnMode.NORMAL
            result = await turn.run(dataclasses.replace(options, mode=mode), attachments)
            attachments = None
            queue[:0] = follow_ups(planned, result, turn.follow_up)
        assert result is not None
        return result
    finally:
        ticker.cancel()


def follow_ups(turn: NextTurn, result: TurnResult, leftovers: list[str]) -> list[NextTurn]:
    """What the cell runs next: an approved plan's carry-out (ENG-32), then leftover steer
    messages as one prompt (ENG-41) — in plan mode still, unless the plan was approved."""
    approved = result.plan_status == "approved" and bool(result.plan)
    turns = [NextTurn(go_ahead_prompt(result.plan or ""), plan=False, label=CARRY_OUT_LABEL)] if approved else []
    if leftovers:
        turns.append(NextTurn("\n\n".join(leftovers), plan=turn.plan and not approved))
    return turns


async def tick_forever() -> None:
    """Wake the loop every TICK_S so a kernel interrupt reaches the turn promptly (KERNEL.md)."""
    while True:  # noqa: ASYNC110 - waking the loop is the point, there is nothing to wait for
        await asyncio.sleep(TICK_S)


class CellTurn:
    """One turn shown in the cell: probe, then widget or plain, then the static rendering."""

    def __init__(
        self, workspace: Workspace, session: str, prompt: str, *, widget_capable: bool, label: str = ""
    ) -> None:
        from .widgets.controller import TurnController
        from .widgets.state import TurnState

        self.workspace = workspace
        self.session = session
        self.prompt = prompt
        self.started = time.monotonic()
        self.mode: Mode = "probing" if widget_capable else "plain"
        self.controller: TurnController | None = (
            TurnController(workspace, session, prompt) if widget_capable else None
        )
        self.state: TurnState = (
            self.controller.state if self.controller else TurnState(turn_id="", prompt=prompt, session=session)
        )
        self.state.label = label
        self.plain: PlainRenderer | None = None if widget_capable else PlainRenderer(started=self.started)
        self.follow_up: list[str] = []
        self._loop = asyncio.get_running_loop()
        self._cell_context = contextvars.copy_context()
        self._decided: asyncio.Future[Mode] = self._loop.create_future()
        self._settled = not widget_capable
        self._buffer: list[Any] = []
        self._handle: DisplayHandle | None = None
        self._probe: Any = None
        self._probe_timer: asyncio.TimerHandle | None = None

    # -- the turn -------------------------------------------------------------------------

    async def run(self, options: RunOptions, attachments: list[Attachment] | None = None) -> TurnResult:
        try:
            front_end = FrontEnd(on_event=self.on_event)
            if self.controller is not None:
                front_end = FrontEnd(
                    on_event=self.on_event,
                    approver=self.controller.approver,
                    plan_reviewer=await self._plan_reviewer(options.plan),
                )
            result = await self.workspace.run_turn(
                self.prompt, self.session, options, front_end, attachments=attachments
            )
        except BaseException:
            self._abandon()
            raise
        finally:
            self._images_in_cards(False)
        await self._finish(result)
        return result

    def _images_in_cards(self, on: bool) -> None:
        """While the widget shows the turn, tools' images go in their cards only, not also in
        the cell (`IPythonKernelContext.images_in_cell`); plain rendering keeps them in the cell."""
        from .kernel_context import IPythonKernelContext

        kernel = self.workspace.kernel
        if isinstance(kernel, IPythonKernelContext):
            kernel.images_in_cell = not on

    async def _plan_reviewer(self, plan_turn: bool) -> PlanReviewer | None:
        """The widget's reviewer, or None when nobody can see the widget (the plan is then the
        answer, ENG-32). A plan turn settles this before it starts (a few ms in JupyterLab; the
        probe's timeout where no front end answers); any other turn keeps the probe running
        beside the model and takes the reviewer (the agent may propose a plan on its own)."""
        controller = self.controller
        assert controller is not None
        if not plan_turn:
            return controller.plan_reviewer
        self._start_probe()
        await asyncio.shield(self._decided)
        self._settle()
        if self.mode == "widget" and await controller.wait_rendered():
            return controller.plan_reviewer
        return None

    def on_event(self, event: Any) -> Awaitable[None] | None:
        """The engine's event handler. Returns an awaitable only when the turn must wait for
        the front end's answer (the engine awaits it); otherwise it is synchronous."""
        if isinstance(event, TurnStarted) and self.mode == "probing":
            self._start_probe()
        if self.controller is not None:
            self.controller.apply(event)
        else:
            self.state.apply(event)
        if self.mode == "plain":
            assert self.plain is not None
            self.plain.handle(event)
            return None
        if self.mode == "widget":
            return self._before_decision(event)
        self._buffer.append(event)
        if self._decided.done():
            self._settle()
            return self._before_decision(event)
        if isinstance(event, ToolCallEvent | PermissionRequest):
            return self._settled_soon(event)
        if isinstance(event, TurnDone):
            if FrontEndMemory.front_end_seen:
                return self._settled_soon(event)
            self._decide("plain")  # no front end so far in this kernel: no reason to wait
            self._settle()
        return None

    async def _settled_soon(self, event: Any) -> None:
        await asyncio.shield(self._decided)
        self._settle()
        waiting = self._before_decision(event)
        if waiting is not None:
            await waiting

    def _before_decision(self, event: Any) -> Awaitable[None] | None:
        """A permission request waits (bounded) for a displayed widget to render: the engine
        reads `approver.interactive` as soon as this handler returns."""
        if self.mode == "widget" and isinstance(event, PermissionRequest) and self.controller is not None:
            return self.controller.wait_until_seen(event)
        return None

    # -- which front end ------------------------------------------------------------------

    def _start_probe(self) -> None:
        if self.mode != "probing" or self._probe is not None or self._decided.done():
            return  # a plan turn probed before it started
        from comm import create_comm

        try:
            self._probe = create_comm(target_name=PROBE_TARGET, data={"turn_id": self.state.turn_id})
            self._probe.on_close(lambda _message: self._decide("widget"))
        except Exception:  # no comm machinery: nobody could see a widget
            self._decide("plain")
            return
        self._probe_timer = self._loop.call_later(FrontEndMemory.probe_timeout(), self._decide, "plain")

    def _decide(self, mode: Mode) -> None:
        """Record the answer (in a comm callback or a timer); the cell shows it (`_settle`)."""
        if self._decided.done():
            return
        self._decided.set_result(mode)
        if mode == "widget":
            FrontEndMemory.front_end_seen = True
        else:
            FrontEndMemory.headless_seen = True
        self._in_cell(self._settle)

    def _in_cell(self, callback: Any) -> None:
        """Run `callback` soon in the cell's context, so what it displays belongs to the cell."""
        self._loop.call_soon(callback, context=self._cell_context)

    def _settle(self) -> None:
        """Show the buffered turn the way the front end allows (once)."""
        if self._settled or not self._decided.done():
            return
        self._settled = True
        self._stop_probe()
        controller = self.controller
        assert controller is not None
        if self._decided.result() == "widget":
            self.mode = "widget"
            self._handle = _display(controller.create_view())
            self._images_in_cards(True)
        else:
            self.mode = "plain"
            self.plain = PlainRenderer(started=self.started)
            for event in self._buffer:
                self.plain.handle(event)
        self._buffer.clear()

    def _stop_probe(self) -> None:
        if self._probe_timer is not None:
            self._probe_timer.cancel()
            self._probe_timer = None
        if self._probe is not None:
            with contextlib.suppress(Exception):
                self._probe.close()
            self._probe = None

    # -- the end --------------------------------------------------------------------------

    async def _finish(self, result: TurnResult) -> None:
        if not self._settled:  # the turn ended before the front end answered
            self._decide("plain")
            self._settle()
        controller = self.controller
        if self.mode == "widget" and controller is not None:
            try:
                await controller.wait_for_asides(ASIDE_WAIT_S)
            except asyncio.CancelledError:  # an interrupt while side answers come: finish anyway
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
            self.follow_up = controller.follow_up(result)
            controller.finish(result)
            self._replace_widget(result.text)
            controller.close()
            return
        self._stop_probe()
        if controller is not None:
            self.follow_up = controller.follow_up(result)
            controller.close()
        from .widgets.static import turn_record

        assert self.plain is not None
        self.plain.attach_record(turn_record(self.state, result.text), result.stop_reason)

    def _replace_widget(self, final_text: str) -> None:
        """The widget's output becomes the static rendering (and keeps no widget state)."""
        from .widgets.static import static_bundle, static_images

        data, metadata = static_bundle(self.state, final_text)
        if self._handle is None:
            return
        self._handle.update(data, raw=True, metadata=metadata)
        # The cards' images, as image outputs right after: every renderer shows those (a
        # data-URL <img> in the Markdown would depend on each one's sanitizer).
        from IPython.display import display

        for bundle in static_images(self.state):
            display(bundle, raw=True)

    def _abandon(self) -> None:
        """The turn raised (cancelled from outside, or failed to start): leave what was shown
        as a static rendering, and close the widget and the probe."""
        self._stop_probe()
        if self.mode == "widget":
            with contextlib.suppress(Exception):
                self.state.phase = "done"
                if self.state.model:
                    self._replace_widget("")
                elif self._handle is not None:  # shown before a turn that never started
                    self._handle.update({"text/plain": ""}, raw=True)
        if self.controller is not None:
            self.controller.close()


def _display(view: Any) -> DisplayHandle:
    from IPython.display import display

    handle = display(view, display_id=True)
    assert handle is not None
    return handle
