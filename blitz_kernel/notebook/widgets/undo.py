"""Undo this turn: a button left under a finished turn's static rendering.

The turn's live widget is gone once the turn ends (live.py replaces it by the static rendering),
so the button is a small widget of its own, displayed after that rendering. Its click arrives
as a comm message whenever the kernel handles it (between cells, or during another cell's
async turn); the control then runs `Workspace.undo` for that session and shows the report in
place, and the button becomes "Undone". It asks nothing more: the click is the confirmation.

Undo goes newest first. When later turns of the session are still in effect (by the engine's
account, whichever way they were undone), undoing this one alone would restore files under
changes made after it, so the button says to rewind them first instead of doing anything.

The static rendering then says the turn was undone: its display is updated in the context of
the cell that made it, because output made in a comm callback would be parented to the comm
message (docs/architecture.md), not to that cell.
"""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anywidget
import traitlets
from pydantic import BaseModel, ValidationError

from ...errors import BlitzError
from ..dropped import drop
from .items import UndoStatus
from .static import static_bundle

if TYPE_CHECKING:
    from ...engine.workspace import Workspace
    from .output import WidgetOutput
    from .state import TurnState

STATIC = Path(__file__).parent / "static"


class UndoMessage(BaseModel):
    """The button pressed (static/undo.js sends it); `turn_id` names the turn it undoes."""

    kind: Literal["undo"]
    turn_id: str


def later_turns(workspace: Workspace, session: str, turn_index: int) -> list[int]:
    """Turns of `session` after `turn_index` that are still in effect, by the engine's own
    account (so turns undone with `%blitz_undo` or another button count too)."""
    state = workspace.session(session)
    in_effect = state.checkpoints.pending(state.turns, state.turns, files=True, conversation=True)
    return sorted(index for index in in_effect if index > turn_index)


class UndoButton(anywidget.AnyWidget):  # type: ignore[misc]
    """The button's view; `status` and `report` are all it shows (static/undo.js, built from
    labextension/widgets/undo.ts by `npm run build:widgets`)."""

    _esm = STATIC / "undo.js"
    _css = STATIC / "turn.css"

    turn_id = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("ready").tag(sync=True)
    report = traitlets.Unicode("").tag(sync=True)


class UndoControl:
    """One finished turn's Undo this turn: the button, the undo, and the rendering's update."""

    def __init__(
        self, workspace: Workspace, state: TurnState, output: WidgetOutput, rendering: Any, final_text: str
    ) -> None:
        """`rendering` is the handle of the static rendering's display (to say "undone" on it)."""
        self.workspace = workspace
        self.state = state
        self._output = output
        self._rendering = rendering
        self._final_text = final_text
        self._context = contextvars.copy_context()
        """The cell's context: the rendering's update is made in it (see the module doc)."""
        self.view = UndoButton(turn_id=state.turn_id)
        self.view.on_msg(self._receive)
        self.task: asyncio.Task[None] | None = None

    def _receive(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """A malformed message is logged once per kind and ignored (dropped.py); one meant
        for another turn's button is ignored."""
        try:
            message = UndoMessage.model_validate(content)
        except ValidationError as error:
            drop("the Undo this turn button", content, error)
            return
        if message.turn_id == self.state.turn_id:
            self.click()

    def click(self) -> None:
        """Undo the turn (once; a click while it runs or after it is done does nothing)."""
        if self.view.status in ("running", "done"):
            return
        later = later_turns(self.workspace, self.state.session, self.state.turn_index)
        if later:
            self._show("blocked", f"undo the later turns first (%blitz_rewind {len(later) + 1})")
            return
        self._show("running", "")
        self.task = asyncio.ensure_future(self._undo())

    async def _undo(self) -> None:
        state = self.state
        undo = getattr(self.workspace, "undo", None)  # Workspace.undo, where the engine has it
        if undo is None:
            self._show("failed", "undo is not available in this version of blitz_kernel")
            return
        try:
            report = await undo(state.session, turns=1, files=True, conversation=True, force=False)
        except BlitzError as exc:
            self._show("failed", str(exc))
            return
        except Exception as exc:  # a callback's task: say what went wrong, never raise into the loop
            self._show("failed", f"{type(exc).__name__}: {exc}")
            return
        text = report.text()
        self._show("done", text)
        first_line = text.splitlines()[0] if text.strip() else ""
        state.undone = f"↶ This turn was undone ({first_line})." if first_line else "↶ This turn was undone."
        data, metadata = static_bundle(state, self._final_text)
        self._context.run(self._output.replace, self._rendering, data, metadata)

    def _show(self, status: UndoStatus, report: str) -> None:
        with self.view.hold_sync():
            self.view.status, self.view.report = status, report
