"""Review changes and Undo all: the controls left under a finished turn's static rendering.

The turn's live widget is gone once the turn ends (live.py replaces it by the static rendering),
so the controls are a small widget of its own, displayed after that rendering. A turn that
changed files, cells or variables offers **Review changes** (its change list, each change with
its diff and Keep / Revert, docs/undo.md) and **Undo all** (the whole turn in one click; "Undo
this turn" where the change list cannot be read). Clicks arrive as typed comm messages whenever
the kernel handles them (between cells, or during another cell's async turn); the control runs
`Workspace.undo`, `Workspace.revert` or `review.keep` for that session and shows the report in
place. It asks nothing more: the click is the confirmation.

Undo goes newest first. When later turns of the session are still in effect (by the engine's
account, whichever way they were undone), undoing this one alone would restore files under
changes made after it, so the button says to rewind them first instead of doing anything.

The static rendering then says what became of the turn (undone, or each change's status): its
display is updated in the context of the cell that made it, because output made in a comm
callback would be parented to the comm message (docs/architecture.md), not to that cell.
"""

from __future__ import annotations

import asyncio
import contextvars
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import anywidget
import traitlets
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ...errors import BlitzError
from ..dropped import drop
from .static import static_bundle

if TYPE_CHECKING:
    from ...engine.workspace import Workspace
    from .output import WidgetOutput
    from .state import TurnState

STATIC = Path(__file__).parent / "static"
UndoStatus = Literal["ready", "running", "done", "blocked", "failed"]
REVIEW_PANEL = "Review changes panel"
"""Who decided, as the audit trail says it: the user, through the panel."""


class UndoMessage(BaseModel):
    """Undo all (or Undo this turn) pressed."""

    kind: Literal["undo"]
    turn_id: str


class OpenReviewMessage(BaseModel):
    """Review changes pressed: the panel opens (the look is audited)."""

    kind: Literal["review_open"]
    turn_id: str


class DecideChangeMessage(BaseModel):
    """Keep, Revert or Revert anyway (`force`, on a change in conflict) pressed on one change."""

    kind: Literal["review_change"]
    turn_id: str
    change_id: str = Field(max_length=40)
    decision: Literal["keep", "revert", "force"]


ControlMessage = Annotated[UndoMessage | OpenReviewMessage | DecideChangeMessage, Field(discriminator="kind")]
CONTROL_MESSAGE: TypeAdapter[ControlMessage] = TypeAdapter(ControlMessage)


def change_list(workspace: Workspace, session: str, turn_index: int, by: str | None = None) -> list[dict[str, Any]]:
    """The turn's changes as the panel and the static rendering show them ([] where the list
    cannot be read: the button is then Undo this turn, as before)."""
    from ...engine.undo.changes import summary

    changes = getattr(workspace, "changes", None)
    if changes is None:
        return []
    try:
        listed = changes(turn_index + 1, session=session, by=by)
    except Exception:  # a callback or the turn's end: never raise into either
        return []
    return [change.model_dump(mode="json") | {"summary": summary(change)} for change in listed.changes]


def later_turns(workspace: Workspace, session: str, turn_index: int) -> list[int]:
    """Turns of `session` after `turn_index` that are still in effect, by the engine's own
    account (so turns undone with `%blitz_undo` or another button count too)."""
    state = workspace.session(session)
    in_effect = state.checkpoints.pending(state.turns, state.turns, files=True, conversation=True)
    return sorted(index for index in in_effect if index > turn_index)


class UndoButton(anywidget.AnyWidget):  # type: ignore[misc]
    """The controls' view (labextension/widget/src/undo.ts, built into static/undo.js): the
    buttons, the change list and the status and report."""

    _esm = STATIC / "undo.js"
    _css = STATIC / "turn.css"

    turn_id = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("ready").tag(sync=True)
    report = traitlets.Unicode("").tag(sync=True)
    changes: traitlets.List[Any] = traitlets.List().tag(sync=True)
    """The change list (dicts of engine/undo/changes.py's models, with `summary`)."""
    panel = traitlets.Bool(False).tag(sync=True)
    """The Review changes panel is open."""


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
        self.view = UndoButton(turn_id=state.turn_id, changes=state.changes)
        self.view.on_msg(self._receive)
        self.task: asyncio.Task[None] | None = None

    def _receive(self, _widget: Any, content: Any, _buffers: Any) -> None:
        try:
            message = CONTROL_MESSAGE.validate_python(content)
        except ValidationError as error:  # logged once per kind and ignored (dropped.py)
            drop("the Review changes and Undo all controls", content, error)
            return
        if message.turn_id != self.state.turn_id:
            return  # meant for another turn's controls
        if isinstance(message, UndoMessage):
            self.click()
        elif isinstance(message, OpenReviewMessage):
            self.open_review()
        else:
            self.decide(message.change_id, message.decision)

    def open_review(self) -> None:
        """Show the panel with the list as it is now (the look goes into the audit trail)."""
        if self.view.panel:
            return
        self._refresh(by=REVIEW_PANEL)
        self.view.panel = True

    def decide(self, change_id: str, decision: Literal["keep", "revert", "force"]) -> None:
        """Keep one change, or revert it (`force`: also when it changed since the turn)."""
        if self.view.status in ("running", "done"):
            return
        if change_id not in {c["id"] for c in self.view.changes}:
            return  # not a change of this turn
        if decision == "keep":
            try:
                self.workspace.review.keep([change_id], session=self.state.session, by=REVIEW_PANEL)
            except BlitzError as exc:
                self._show("failed", str(exc))
                return
            self._refresh()
            self._show("ready", f"kept {change_id}")
            return
        self._show("running", "")
        self.task = asyncio.ensure_future(self._revert(change_id, force=decision == "force"))

    async def _revert(self, change_id: str, *, force: bool) -> None:
        try:
            report = await self.workspace.revert([change_id], force, session=self.state.session, by=REVIEW_PANEL)
        except BlitzError as exc:
            self._show("failed", str(exc))
            return
        except Exception as exc:  # a callback's task: say what went wrong, never raise into the loop
            self._show("failed", f"{type(exc).__name__}: {exc}")
            return
        self._refresh()
        self._show("ready", report.text())

    def _refresh(self, by: str | None = None) -> None:
        """The list read again (`by`: the look is audited); the static rendering shows the
        new statuses."""
        state = self.state
        state.changes = change_list(self.workspace, state.session, state.turn_index, by)
        self.view.changes = state.changes
        data, metadata = static_bundle(state, self._final_text)
        self._context.run(self._output.replace, self._rendering, data, metadata)

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
        self._refresh()

    def _show(self, status: UndoStatus, report: str) -> None:
        with self.view.hold_sync():
            self.view.status, self.view.report = status, report
