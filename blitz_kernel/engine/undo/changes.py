"""A turn's change list: each file, cell and variable it changed, with its diff and where the
review stands (docs/undo.md).

Built from the turn's checkpoint records, so it covers whatever the tools recorded (file
tools, `notebook_edit`, cells the agent ran, `run_python`), and it reads the workspace as it
is now: a file edited or deleted since the turn, a cell edited since, a name rebound since is a
`conflict`, which a revert skips unless forced. Paths come from stored records, so they are
read with undo's confinement (no symlink followed, nothing outside the workspace).

Ids are short and stable: the turn (from 1), a letter for the kind and the change's place
among that kind in the turn's records ("2f1", "2c3", "2v1"). The records are append-only, so
an id names the same change in every kernel that reads the session.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from ...tools.confined import (
    ENGINE_FOLDER,
    RecordPathError,
    entry_status,
    open_entry,
    open_record_folder,
    read_all,
    record_parts,
)
from ...tools.notebook_file import cell_source, find_cell
from ...tools.registry import ToolError
from ..store.checkpoints import CHECKPOINT_DIR, MISSING, CellChange, FileChange, TurnCheckpoint, describe, fingerprint
from .confined import load_notebook_in, notebook_parts
from .undo import NOT_KEPT, REBOUND_SINCE

ChangeStatus = Literal["pending", "kept", "reverted", "conflict"]
MAX_DIFF_BYTES = 2 * 1024 * 1024
"""A side larger than this is not diffed (the counts and the diff say so)."""
MAX_DIFF_LINES = 400
"""The unified diff shown is cut after this many lines; the +/- counts cover the whole file."""
ID_PATTERN = re.compile(r"(\d+)([fcv])(\d+)")
LETTERS = {"file": "f", "cell": "c", "variable": "v"}


class _Reviewed(BaseModel):
    id: str
    """Short and stable: "2f1" is turn 2's first file."""
    turn: int
    """0-based, like the rest of the engine (ids and text count from 1)."""
    key: str
    """The undo item it is ("file:PATH", "cell:N", "variable:NAME")."""
    status: ChangeStatus = "pending"
    note: str | None = None
    """Why it is a conflict, or what else is worth saying (binary file, not diffed)."""


class FileReview(_Reviewed):
    kind: Literal["file"] = "file"
    path: str
    created: bool
    """The turn created the file (a revert removes it)."""
    added: int = 0
    removed: int = 0
    diff: str = ""
    """Unified diff from before the turn to the file now (empty once reverted)."""


class CellReview(_Reviewed):
    kind: Literal["cell"] = "cell"
    index: int
    action: str
    """What was done to the cell: "insert", "replace", "delete" (as its record says)."""
    cell_id: str | None = None
    source_before: str | None = None
    source_after: str | None = None
    outputs_changed: bool = False
    """The change dropped or replaced outputs the cell had."""


class VariableReview(_Reviewed):
    kind: Literal["variable"] = "variable"
    name: str
    type_before: str
    """"DataFrame 7×3", "unbound" (the turn created it), "unknown" (an older record)."""
    type_after: str


ReviewedChange = Annotated[FileReview | CellReview | VariableReview, Field(discriminator="kind")]


class TurnChanges(BaseModel):
    """One turn's change list; `text()` is what `%blitz_review` prints."""

    session: str
    turn: int | None
    """0-based; None when the session has no turn that changed anything."""
    changes: list[ReviewedChange] = Field(default_factory=list)

    @property
    def open(self) -> list[ReviewedChange]:
        """The changes still waiting for a decision (pending or in conflict)."""
        return [c for c in self.changes if c.status in ("pending", "conflict")]

    def text(self) -> str:
        if self.turn is None or not self.changes:
            return f"no changes to review in session {self.session!r}"
        decided = len(self.changes) - len(self.open)
        head = f"turn {self.turn + 1} of session {self.session!r}: {len(self.changes)} changes"
        lines = [head + (f", {decided} decided" if decided else "")]
        lines.extend(f"  {c.id:<6} {c.status:<9} {summary(c)}" for c in self.changes)
        for change in self.changes:
            if change.note:
                lines.append(f"  {change.id}: {change.note}")
        if self.open:
            lines.append("  (%blitz_review --revert ID … reverts; --keep-all keeps the rest)")
        return "\n".join(lines)


def summary(change: ReviewedChange) -> str:
    """One line: "file data.csv +3 −1" (no counts once reverted: nothing differs then), "cell 2
    replaced", "variable sales DataFrame 7×3 → 7×4"."""
    if isinstance(change, FileReview):
        counts = "" if change.status == "reverted" else f" +{change.added} −{change.removed}"
        return f"file {change.path}" + (" (created)" if change.created else "") + counts
    if isinstance(change, CellReview):
        done = {"insert": "inserted", "replace": "replaced", "delete": "deleted", "run": "run"}.get(
            change.action, change.action
        )
        return f"cell {change.index} {done}" + (" (outputs changed)" if change.outputs_changed else "")
    return f"variable {change.name} {change.type_before} → {change.type_after}"


def parse_id(change_id: str) -> int | None:
    """The 0-based turn an id names; None when it is not an id."""
    found = ID_PATTERN.fullmatch(change_id.strip())
    return int(found.group(1)) - 1 if found and int(found.group(1)) > 0 else None


def turn_changes(root: Path, session: str, checkpoint: TurnCheckpoint) -> TurnChanges:
    """The change list of one turn, read against the workspace as it is now."""
    reader = _Reader(root, checkpoint)
    changes: list[ReviewedChange] = []
    for number, change in enumerate(checkpoint.files.values(), 1):
        changes.append(reader.file(_id(checkpoint, "file", number), change))
    for position, cell in enumerate(checkpoint.cells):
        changes.append(reader.cell(_id(checkpoint, "cell", position + 1), position, cell))
    for number, name in enumerate(variable_names(checkpoint), 1):
        changes.append(reader.variable(_id(checkpoint, "variable", number), name))
    for reviewed in changes:
        if reviewed.key in checkpoint.done_items:
            reviewed.status, reviewed.note = "reverted", None
        elif reviewed.key in checkpoint.kept_items:
            reviewed.status, reviewed.note = "kept", None
    return TurnChanges(session=session, turn=checkpoint.turn, changes=changes)


def variable_names(checkpoint: TurnCheckpoint) -> list[str]:
    """The names the turn created, deleted or rebound, in the order it first touched them."""
    return list(dict.fromkeys(n for run in checkpoint.runs for n in (*run.created, *run.deleted, *run.rebound)))


def _id(checkpoint: TurnCheckpoint, kind: str, number: int) -> str:
    return f"{checkpoint.turn + 1}{LETTERS[kind]}{number}"


class _Reader:
    """Reads what one change list needs from the workspace, each notebook once."""

    def __init__(self, root: Path, checkpoint: TurnCheckpoint) -> None:
        self.root = root
        self.checkpoint = checkpoint
        self._notebooks: dict[tuple[str, ...], dict[str, Any] | str] = {}

    def file(self, change_id: str, change: FileChange) -> FileReview:
        review = FileReview(
            id=change_id,
            turn=self.checkpoint.turn,
            key=f"file:{change.path}",
            path=change.path,
            created=not change.existed,
        )
        try:
            parts = record_parts(change.path)
            if parts[0].lower() == ENGINE_FOLDER:
                raise RecordPathError(f"{change.path!r} is inside {ENGINE_FOLDER}/, which the file tools never write")
            now = _read(self.root, parts)
            before = b"" if not change.existed else _read(self.root, _copy_parts(change))
        except (RecordPathError, OSError) as error:
            reason = getattr(error, "strerror", None) or error
            review.status, review.note = "conflict", f"the checkpoint record is not acted on: {reason}"
            return review
        if now is None:
            review.status, review.note = "conflict", "the file was deleted since the turn"
        elif len(now) <= MAX_DIFF_BYTES and fingerprint(now) != change.after:
            review.status, review.note = "conflict", "the file was edited since the turn"
        if before is None:
            review.note = f"its saved copy {change.copy_path} is missing"
            return review
        _diff_into(review, before, now or b"")
        return review

    def cell(self, change_id: str, position: int, change: CellChange) -> CellReview:
        before = change.cell_before or {}
        review = CellReview(
            id=change_id,
            turn=self.checkpoint.turn,
            key=f"cell:{position}",
            index=change.index,
            action=change.action,
            cell_id=change.cell_id,
            source_before=change.source_before,
            source_after=change.source_after,
            # a run replaced the outputs; an edit of a cell that had some dropped them
            outputs_changed=change.action == "run" or (change.action != "insert" and bool(before.get("outputs"))),
        )
        if change.via == "file" and change.action != "delete":
            review.note = self._cell_conflict(change)
            if review.note:
                review.status = "conflict"
        return review

    def _cell_conflict(self, change: CellChange) -> str | None:
        """Why the cell no longer is as the agent left it (the .ipynb on disk); None if it is."""
        document = self._document(change.notebook)
        if isinstance(document, str):
            return f"its notebook cannot be read: {document}"
        index = find_cell(document, change.cell_id, change.index)
        if index is None:
            return "the cell is gone from the notebook"
        if cell_source(document["cells"][index]) != (change.source_after or ""):
            return "the cell was edited since the turn"
        return None

    def _document(self, notebook: str | None) -> dict[str, Any] | str:
        """The notebook as loaded (once per change list), or why it cannot be."""
        try:
            parts = notebook_parts(self.root, notebook)
        except RecordPathError as error:
            return str(error)
        if parts not in self._notebooks:
            try:
                self._notebooks[parts] = load_notebook_in(self.root, parts)
            except (RecordPathError, ToolError, OSError) as error:
                self._notebooks[parts] = getattr(error, "strerror", None) or str(error)
        return self._notebooks[parts]

    def variable(self, change_id: str, name: str) -> VariableReview:
        checkpoint = self.checkpoint
        recorded = [run.types[name] for run in checkpoint.runs if name in run.types]
        if checkpoint.values_kept and name in checkpoint.before_values:
            before = describe(checkpoint.before_values[name])
            after = describe(checkpoint.after_values.get(name, MISSING))
        else:
            before = recorded[0][0] if recorded else "unknown"
            after = recorded[-1][1] if recorded else "unknown"
        review = VariableReview(
            id=change_id,
            turn=checkpoint.turn,
            key=f"variable:{name}",
            name=name,
            type_before=before,
            type_after=after,
        )
        namespace = checkpoint.namespace
        if not checkpoint.values_kept or namespace is None:
            review.status, review.note = "conflict", f"cannot be reverted: {NOT_KEPT}"
        elif namespace.get(name, MISSING) is not checkpoint.after_values.get(name, MISSING):
            review.status, review.note = "conflict", REBOUND_SINCE
        return review


def _copy_parts(change: FileChange) -> tuple[str, ...]:
    return record_parts(change.copy_path or "", under=CHECKPOINT_DIR.parts)


def _read(root: Path, parts: tuple[str, ...]) -> bytes | None:
    """The file's bytes (at most MAX_DIFF_BYTES + 1), None when there is none."""
    try:
        folder = open_record_folder(root, parts[:-1])
    except FileNotFoundError:
        return None
    try:
        if entry_status(folder, parts[-1]) is None:
            return None
        fd = open_entry(folder, parts[-1])
    finally:
        os.close(folder)
    try:
        return read_all(fd, MAX_DIFF_BYTES)
    finally:
        os.close(fd)


def _diff_into(review: FileReview, before: bytes, after: bytes) -> None:
    """The unified diff and its +/- counts; binary or very large files are only named."""
    if len(before) > MAX_DIFF_BYTES or len(after) > MAX_DIFF_BYTES:
        review.note = review.note or f"larger than {MAX_DIFF_BYTES // (1024 * 1024)} MB: not diffed"
        return
    try:
        old, new = before.decode("utf-8"), after.decode("utf-8")
    except UnicodeDecodeError:
        review.note = review.note or "a binary file: not diffed"
        return
    if "\0" in old or "\0" in new:
        review.note = review.note or "a binary file: not diffed"
        return
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{review.path}",
            tofile=f"b/{review.path}",
        )
    )
    review.added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    review.removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    shown = [line if line.endswith("\n") else line + "\n" for line in lines[:MAX_DIFF_LINES]]
    if len(lines) > MAX_DIFF_LINES:
        shown.append(f"… {len(lines) - MAX_DIFF_LINES} more lines\n")
    review.diff = "".join(shown)
