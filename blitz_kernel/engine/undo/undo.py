"""Undo and rewind: put back what the last turns changed, newest turn first.

Each turn's checkpoint (checkpoints.py) says what to put back: files from their copies (or
removed, when the turn created them), notebook cells by reversing each `notebook_edit` action
and putting back the outputs a cell had before `notebook_run` ran it (through the bridge, or
in the .ipynb, whichever made it), variables rebound to the objects
they held before. Something changed again since the agent changed it (the user edited the
file or the cell, rebound the name) is a conflict: skipped and named, unless `force`.

What cannot be put back is said, not hidden: what `run_python` code did outside the namespace
(files it wrote, processes, network calls) and changes made in place to objects.

`conversation=True` also takes the turns out of the session's history (a `rewind` row in the
append-only log), so the agent does not believe in changes that no longer exist.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ...core.numbers import check_number
from ...core.text import one_line
from ...errors import BlitzError, SessionBusyError
from ...tools.confined import RecordPathError
from ...tools.notebook import NotebookAccess
from ...tools.notebook_file import cell_source, find_cell, new_cell, retyped
from ...tools.registry import ToolError
from ..store.checkpoints import MISSING, CellChange, FileChange, TurnCheckpoint, describe
from ..store.session import Session
from .confined import FORCE_HINT, load_notebook_in, notebook_parts, save_notebook_in, undo_file

NOT_UNDOABLE_CODE = "run_python ran in this turn; what its code did outside the namespace cannot be undone"
RECONNECT_HINT = "(reopen the notebook and undo again)"
RETRY_HINTS = (FORCE_HINT, RECONNECT_HINT)
REBOUND_SINCE = "it was rebound or deleted since the turn"
NOT_KEPT = (
    "their previous objects are no longer kept (another kernel ran the turn, or it is older than "
    "checkpoints.keep_turns)"
)
IN_PLACE_NOTE = "objects changed in place (df.drop(..., inplace=True)) keep their new content"


class SkippedItem(BaseModel):
    """Something an undo left alone, and why."""

    item: str
    """"file data.csv", "cell 3 (id ab12)", "variable sales", "conversation of turn 2"."""
    reason: str


class UndoReport(BaseModel):
    """What `Workspace.undo` did (docs/interface.md); `text()` is the block the magics print."""

    session: str
    turns: list[int] = Field(default_factory=list)
    """The turns undone (0-based indices), newest first."""
    files: list[str] = Field(default_factory=list)
    """"restored data.csv", "removed new.txt (the turn created it)"."""
    cells: list[str] = Field(default_factory=list)
    variables: list[str] = Field(default_factory=list)
    """"restored sales (DataFrame 7×3)", "removed revenue (the turn created it)"."""
    conversation: str | None = None
    """What left the history, e.g. "removed turn 3 from the history (4 messages)"."""
    skipped: list[SkippedItem] = Field(default_factory=list)
    not_undone: list[str] = Field(default_factory=list)
    """What cannot be undone: the run_python calls of those turns (their code's effects
    outside the namespace), with the in-place mutation caveat."""
    nothing_to_undo: bool = False
    scope: Literal["both", "files", "conversation"] = "both"
    """What was asked: files, cells and variables ("files"), the history ("conversation"), or both."""

    def text(self) -> str:
        if self.nothing_to_undo:
            numbers = ", ".join(str(t + 1) for t in self.turns)
            return f"nothing to undo in session {self.session!r}" + (
                f" (turn {numbers} changed nothing)" if numbers else ""
            )
        numbers = ", ".join(str(t + 1) for t in self.turns)
        lines = [f"undid turn {numbers} of session {self.session!r}"]
        for label, items in (("files", self.files), ("cells", self.cells), ("variables", self.variables)):
            if items:
                lines.append(f"  {label}: {'; '.join(items)}")
        if self.scope != "conversation" and not (self.files or self.cells or self.variables or self.skipped):
            lines.append("  files, cells, variables: nothing to undo")
        if self.conversation:
            lines.append(f"  conversation: {self.conversation}")
        lines.extend(f"  skipped {s.item}: {s.reason}" for s in self.skipped)
        lines.extend(f"  not undone: {item}" for item in self.not_undone)
        return "\n".join(lines)


class Undoer:
    """One undo of one session: `run` once."""

    def __init__(self, root: Path, session: Session, bridge: NotebookAccess | None, *, force: bool) -> None:
        self.root = root
        self.session = session
        self.bridge = bridge
        self.force = force
        self.report = UndoReport(session=session.name)
        self._new_ids: dict[str, str] = {}
        """Cell ids the bridge gave cells this undo put back (it cannot keep the old ones)."""
        self._retry = False
        """Something was skipped that a later undo can do (--force, a reconnected notebook):
        the turn's files stay pending; what was restored is marked item by item."""
        self.only: set[str] | None = None
        """A review's partial revert: only these items ("file:PATH", "cell:N", "variable:NAME")."""
        self.outcomes: dict[str, str] = {}
        """Item → "reverted", or why it was skipped (what a review shows per change)."""

    async def run(self, turns: int, *, files: bool, conversation: bool, through_turn: int | None = None) -> UndoReport:
        session, report = self.session, self.report
        report.scope = "both" if files and conversation else "files" if files else "conversation"
        pending = session.checkpoints.pending(session.turns, turns, files=files, conversation=conversation)
        report.turns = [t for t in pending if through_turn is None or t >= through_turn]
        if not report.turns:
            report.nothing_to_undo = True
            return report
        for turn in report.turns:
            checkpoint = session.checkpoints.get(turn)
            if files and not checkpoint.files_undone:
                self._retry = False
                await self._undo_changes(checkpoint)
                if not self._retry:
                    session.mark_undone(turn, "files_undone")
        if conversation:
            self._rewind([t for t in report.turns if not session.checkpoints.get(t).conversation_undone])
        report.nothing_to_undo = not (
            report.files or report.cells or report.variables or report.conversation or report.skipped
        )
        return report

    async def revert_items(self, checkpoint: TurnCheckpoint, keys: set[str]) -> UndoReport:
        """Put back only `keys` of one turn, leaving its other changes as they are; the
        conversation stays (a review reverts changes, not what was said)."""
        self.only = keys
        self.report.turns = [checkpoint.turn]
        await self._undo_changes(checkpoint)
        return self.report

    async def _undo_changes(self, checkpoint: TurnCheckpoint) -> None:
        self._undo_variables(checkpoint)
        await self._undo_cells(checkpoint)
        for change in reversed(list(checkpoint.files.values())):
            if self._pending(checkpoint, f"file:{change.path}"):
                self._undo_file(checkpoint, change)
        for run in checkpoint.runs if self.only is None else ():
            code = one_line(run.code, 60)
            self.report.not_undone.append(f"{NOT_UNDOABLE_CODE}: turn {checkpoint.turn + 1}, `{code}`")
        if checkpoint.runs and (self.only is None or any(k.startswith("variable:") for k in self.only)):
            self.report.not_undone.append(IN_PLACE_NOTE)

    # -- files ------------------------------------------------------------------------------

    def _pending(self, checkpoint: TurnCheckpoint, key: str) -> bool:
        return key not in checkpoint.done_items and (self.only is None or key in self.only)

    def _done(self, checkpoint: TurnCheckpoint, key: str) -> None:
        self.session.mark_item_undone(checkpoint.turn, key)
        self.outcomes[key] = "reverted"

    def _conflict(self, key: str, item: str, reason: str) -> None:
        self.report.skipped.append(SkippedItem(item=item, reason=reason))
        self.outcomes[key] = reason
        self._retry = True

    def _skip(self, key: str, item: str, reason: str) -> None:
        self.report.skipped.append(SkippedItem(item=item, reason=reason))
        self.outcomes[key] = reason

    def _undo_file(self, checkpoint: TurnCheckpoint, change: FileChange) -> None:
        outcome = undo_file(self.root, change, self.force)
        if outcome.kind == "done":
            self.report.files.append(outcome.text)
            self._done(checkpoint, f"file:{change.path}")
        elif outcome.kind == "retry":
            self._conflict(f"file:{change.path}", f"file {change.path}", outcome.text)
        else:
            self._skip(f"file:{change.path}", f"file {change.path}", outcome.text)

    # -- variables ----------------------------------------------------------------------------

    def _undo_variables(self, checkpoint: TurnCheckpoint) -> None:
        names = [n for run in checkpoint.runs for n in (*run.created, *run.rebound, *run.deleted)]
        names = [n for n in dict.fromkeys(names) if self._pending(checkpoint, f"variable:{n}")]
        if not names:
            return
        namespace = checkpoint.namespace
        if not checkpoint.values_kept or namespace is None:
            reason = NOT_KEPT
            self.report.skipped.append(SkippedItem(item=f"variables {', '.join(names)}", reason=reason))
            self.outcomes.update((f"variable:{n}", reason) for n in names)
            return
        for name, before in reversed(list(checkpoint.before_values.items())):
            if not self._pending(checkpoint, f"variable:{name}"):
                continue
            current = namespace.get(name, MISSING)
            if current is not checkpoint.after_values.get(name, MISSING) and not self.force:
                self._conflict(f"variable:{name}", f"variable {name}", f"{REBOUND_SINCE} {FORCE_HINT}")
                continue
            self._done(checkpoint, f"variable:{name}")
            if before is MISSING:
                namespace.pop(name, None)
                self.report.variables.append(f"removed {name} (the turn created it)")
            else:
                namespace[name] = before
                self.report.variables.append(f"restored {name} ({describe(before)})")

    # -- cells ------------------------------------------------------------------------------

    async def _undo_cells(self, checkpoint: TurnCheckpoint) -> None:
        documents: dict[tuple[str, ...], dict[str, Any]] = {}
        for position, change in reversed(list(enumerate(checkpoint.cells))):
            key = f"cell:{position}"
            if not self._pending(checkpoint, key):
                continue
            label = f"cell {change.index}" + (f" (id {change.cell_id})" if change.cell_id else "")
            try:
                if change.via == "file":
                    parts = notebook_parts(self.root, change.notebook)
                    if parts not in documents:
                        documents[parts] = load_notebook_in(self.root, parts)
                    done = _reverse_in_document(documents[parts], change, self.force)
                else:
                    done = await self._reverse_through_bridge(change)
            except RecordPathError as error:
                done = f"the checkpoint record is not acted on: its notebook {error}"
            except (ToolError, OSError, KeyError, AssertionError) as error:
                done = f"could not be undone: {getattr(error, 'strerror', None) or error}"
            if done.startswith(("restored", "removed", "put back")):
                self.report.cells.append(f"{done} {label}")
                self._done(checkpoint, key)
            elif done.endswith(RETRY_HINTS):
                self._conflict(key, label, done)
            else:
                self._skip(key, label, done)
        for parts, document in documents.items():
            save_notebook_in(self.root, parts, document)

    async def _reverse_through_bridge(self, change: CellChange) -> str:
        if self.bridge is None:
            return f"the notebook front end is not connected {RECONNECT_HINT}"
        listed = await self.bridge.request(
            "read_cells", {"indices": None, "include_outputs": False, "include_images": False, "max_output_chars": 0}
        )
        cells = listed.get("cells", [])
        if change.action == "delete":
            cell = {
                "index": min(change.index, len(cells)),
                "cell_type": change.cell_type_before or "code",
                "source": change.source_before or "",
            }
            inserted = await self.bridge.request("insert_cell", cell)
            self._remember_id(change.cell_id, inserted.get("id"))
            return "put back"
        cell_id = self._new_ids.get(change.cell_id or "", change.cell_id)
        found = next((c["index"] for c in cells if cell_id and c.get("id") == cell_id), None)
        if found is None:
            return "the cell is gone from the notebook"
        index = int(found)
        if cells[index].get("source") != change.source_after and not self.force:
            return f"it was edited since the agent changed it {FORCE_HINT}"
        if change.action == "insert":
            await self.bridge.request("delete_cell", {"index": index})
            return "removed"
        if change.action == "run":
            outputs = {
                "id": cells[index]["id"],
                "outputs": change.outputs_before or [],
                "execution_count": change.execution_count_before,
                "metadata": change.metadata_before,
            }
            await self.bridge.request("set_outputs", outputs)
            return "restored the outputs of"
        params: dict[str, Any] = {"index": index, "source": change.source_before or ""}
        if change.cell_type_before and change.cell_type_before != cells[index].get("cell_type"):
            params["cell_type"] = change.cell_type_before
        replaced = await self.bridge.request("replace_cell", params)
        self._remember_id(change.cell_id_before, replaced.get("id"))
        return "restored"

    def _remember_id(self, old: str | None, new: Any) -> None:
        """Earlier changes name the cell by its old id: point them at the new one."""
        if old and isinstance(new, str) and new != old:
            self._new_ids[old] = new

    # -- conversation -------------------------------------------------------------------------

    def _rewind(self, turns: list[int]) -> None:
        """Take `turns` (newest first) out of the history; the oldest ones compaction already
        summarised stay (the summary cannot be split), and are said to."""
        session = self.session
        summarised: list[int] = []
        removed = session.rewind_history(turns) if turns else 0
        while removed is None:
            summarised.insert(0, turns.pop())
            removed = session.rewind_history(turns) if turns else 0
        for turn in (*turns, *summarised):  # a summarised turn has nothing left to roll back
            session.mark_undone(turn, "conversation_undone")
        if summarised:
            self.report.skipped.append(
                SkippedItem(
                    item=f"conversation of turn {', '.join(str(t + 1) for t in summarised)}",
                    reason="compaction summarised it; the summary stays",
                )
            )
        if turns:
            numbers = ", ".join(str(t + 1) for t in turns)
            self.report.conversation = f"removed turn {numbers} from the history ({removed} messages)"


def _reverse_in_document(document: dict[str, Any], change: CellChange, force: bool) -> str:
    """Reverse one file-made cell change in the loaded .ipynb; what happened, in a few words."""
    cells: list[dict[str, Any]] = document["cells"]
    if change.action == "delete":
        cell = change.cell_before or new_cell(document, change.cell_type_before or "code", change.source_before or "")
        cells.insert(min(change.index, len(cells)), cell)
        return "put back"
    index = find_cell(document, change.cell_id, change.index)
    if index is None:
        return "the cell is gone from the notebook"
    if cell_source(cells[index]) != (change.source_after or "") and not force:
        return f"it was edited since the agent changed it {FORCE_HINT}"
    if change.action == "insert":
        del cells[index]
        return "removed"
    if change.action == "run":
        cell = cells[index]
        cell["outputs"], cell["execution_count"] = change.outputs_before or [], change.execution_count_before
        metadata = cell.setdefault("metadata", {})
        if change.metadata_before is None:
            metadata.pop("blitz", None)
        else:
            metadata["blitz"] = change.metadata_before
        return "restored the outputs of"
    before = change.cell_before
    cells[index] = (
        before
        if before is not None
        else retyped(document, cells[index], change.cell_type_before or "code", change.source_before or "")
    )
    return "restored"


def check_undo_request(turns: int, files: bool, conversation: bool, through_turn: int | None) -> None:
    """The arguments of `Workspace.undo`, checked before anything is touched."""
    check_number("turns", turns, upper=10_000, integer=True)
    if not (files or conversation):
        raise BlitzError("undo needs files, conversation or both")
    if through_turn is not None and (
        isinstance(through_turn, bool) or not isinstance(through_turn, int) or through_turn < 0
    ):
        raise BlitzError(f"through_turn must be a turn index (0 or more), got {through_turn!r}")


async def undo_turns(
    root: Path,
    state: Session,
    notebook: NotebookAccess | None,
    turns: int,
    files: bool,
    conversation: bool,
    force: bool,
    through_turn: int | None,
) -> UndoReport:
    """Undo a session's newest turns (see `Workspace.undo`); refused while the session is busy."""
    if state.running is not None:
        raise SessionBusyError(
            f"session {state.name!r} has a running turn; undo it after the turn ends (stop it first with ■)"
        )
    if state.compacting:
        raise SessionBusyError(f"session {state.name!r} is being compacted; undo after it finishes")
    if through_turn is not None:
        turns = max(state.turns - through_turn, 1)  # the newest turns down to that one
    undoer = Undoer(root, state, notebook, force=force)
    return await undoer.run(int(turns), files=files, conversation=conversation, through_turn=through_turn)
