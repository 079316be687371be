"""How a cell shows one turn: the `Presenter` interface, and the live widget behind it.

A cell turn folds every engine event into its TurnState, then hands the event to one
presenter: the widget's (this module) or the plain outputs' (render.PlainPresenter). Both
end the turn the same way: `finish` leaves the static rendering and says which steer messages
become the next prompt; `abandon` tidies up after a turn that raised.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol

from ..engine.events import Event
from .widgets.nested import asked
from .widgets.output import IPythonWidgetOutput, WidgetOutput

if TYPE_CHECKING:
    from ..engine.turn.setup import TurnResult
    from ..tools.registry import KernelContext
    from .widgets.controller import TurnController
    from .widgets.undo import UndoControl

ASIDE_WAIT_S = 60.0
"""How long a finished turn waits for side questions still being answered."""


class Presenter(Protocol):
    """Shows one turn in the cell; the cell folds each event into the state first."""

    def catch_up(self) -> None:
        """Show what the state already holds (events that came before this presenter)."""

    def on_event(self, event: Event) -> Awaitable[None] | None:
        """Show what `event` changed; an awaitable when the turn must wait (see `hold`)."""

    def hold(self, event: Event) -> Awaitable[None] | None:
        """What the turn must wait for after `event` before it goes on, if anything."""

    async def finish(self, result: TurnResult) -> list[str]:
        """Leave the static rendering; returns the steer messages to send as the next prompt."""
        ...

    def abandon(self) -> None:
        """The turn raised: leave what was shown as it is best kept."""

    @property
    def continue_requested(self) -> bool:
        """After `finish`: whether the user asked to go on past the step limit (Continue)."""
        ...


class WidgetPresenter:
    """The live TurnView, replaced by the static rendering when the turn ends."""

    def __init__(
        self, controller: TurnController, kernel: KernelContext | None = None, output: WidgetOutput | None = None
    ) -> None:
        self.controller = controller
        self.state = controller.state
        self._kernel = kernel
        self._output: WidgetOutput = output or IPythonWidgetOutput()
        self._handle: Any = None
        self.undo: UndoControl | None = None
        self.continue_requested = False
        """Continue was pressed at the step limit: the cell goes on with `continue_turn`."""

    def catch_up(self) -> None:
        """Display the widget with the state so far (its comm opens now)."""
        self._handle = self._output.show(self.controller.create_view())
        self._images_in_cards(True)

    def on_event(self, event: Event) -> Awaitable[None] | None:
        self.controller.send(event)
        return self.hold(event)

    def hold(self, event: Event) -> Awaitable[None] | None:
        """A permission request waits (bounded) for the displayed widget to render: the engine
        reads `approver.interactive` as soon as the event handler returns."""
        request = asked(event)
        if request is not None:
            return self.controller.wait_until_seen(request)
        return None

    async def finish(self, result: TurnResult) -> list[str]:
        controller = self.controller
        # a turn that hits its step limit at once may end before its widget has rendered: the
        # offer waits for the widget (bounded by the render timeout), it does not race it
        if result.stop_reason == "max_turns" and controller.continue_steps and await controller.wait_rendered():
            self.continue_requested = await controller.offer_continue()
        self._images_in_cards(False)
        try:
            await controller.wait_for_asides(ASIDE_WAIT_S)
        except asyncio.CancelledError:  # an interrupt while side answers come: finish anyway
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        follow_up = controller.follow_up(result)
        controller.finish(result)
        if self.state.undoable and self._handle is not None:
            from .widgets.undo import change_list

            self.state.changes = change_list(controller.workspace, self.state.session, self.state.turn_index)
        self._replace_widget(result.text)
        controller.close()
        if self.state.undoable and self._handle is not None:
            self._offer_undo(result.text)
        return follow_up

    def _offer_undo(self, final_text: str) -> None:
        """Review changes and Undo all, under the static rendering: a widget of its own, as
        the turn's widget is gone. Kept on the presenter for tests; its comm keeps it alive."""
        from .widgets.undo import UndoControl

        self.undo = UndoControl(self.controller.workspace, self.state, self._output, self._handle, final_text)
        self._output.show(self.undo.view)

    def abandon(self) -> None:
        """Leave what was shown as a static rendering, and close the widget."""
        self._images_in_cards(False)
        with contextlib.suppress(Exception):
            self.state.set_phase("done")
            if self.state.model:
                self._replace_widget("")
            elif self._handle is not None:  # shown before a turn that never started
                self._output.replace(self._handle, {"text/plain": ""})
        self.controller.close()

    def _replace_widget(self, final_text: str) -> None:
        """The widget's output becomes the static rendering (and keeps no widget state)."""
        from .widgets.static import static_bundle, static_images

        data, metadata = static_bundle(self.state, final_text)
        if self._handle is None:
            return
        self._output.replace(self._handle, data, metadata)
        # The cards' images, as image outputs right after: every renderer shows those (a
        # data-URL <img> in the Markdown would depend on each one's sanitizer).
        for bundle in static_images(self.state):
            self._output.append(bundle)

    def _images_in_cards(self, on: bool) -> None:
        """While the widget shows the turn, tools' images go in their cards only, not also in
        the cell (`IPythonKernelContext.images_in_cell`); plain rendering keeps them in the cell."""
        from .kernel_context import IPythonKernelContext

        if isinstance(self._kernel, IPythonKernelContext):
            self._kernel.images_in_cell = not on
