"""notebook_run: run notebook cells as the user would, and put their outputs into the cells.

The `%%blitz` cell is still running while the agent works (the shell is busy), so a queued
execute request would only run after the turn. The cell's source therefore runs inside the
turn, like run_python's code (cell_run.py), and its outputs are then written into the cell:

- with the live notebook (the labextension bridge), through the `set_outputs` op: the cell
  shows its streams, displays, figures, error and execution count as if the user had run it,
  and saving the notebook keeps them;
- with no front end (nbclient, papermill, a closed notebook), into the `.ipynb` on disk, as
  notebook_edit writes it; the result says an editor or executor holding the notebook in
  memory does not see the change (docs/tools.md, "Running cells").

Each run cell is marked in its metadata (`blitz`: session, turn) and reported to the turn's
checkpoint: its outputs and execution count before (undo puts them back) and the variables
the run created, rebound or deleted (undo restores those like run_python's).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, model_validator

from ..core.tools import ToolPresentation
from .cell_run import CellRun, cell_host, run_cell_source
from .images import keep_figures, png_part
from .notebook import (
    NEEDS_EXTENSION,
    NotebookAccess,
    NotebookEditArgs,
    NotebookUnavailableError,
    agent_mark,
    cap_cell_text,
    edit_cell,
    find_notebook_file,
    notebook_access,
)
from .notebook_file import cell_source, find_cell, load_notebook, save_notebook
from .registry import ChangeRecorder, Tool, ToolContext, ToolError, ToolKind, ToolOutput, change_recorder, tool
from .run_python import MAX_SECTION_CHARS, cap_text, effective_timeout, one_at_a_time, user_namespace
from .signals import MAX_TIMEOUT_S

__all__ = ["NOTEBOOK_RUN_TOOLS", "NotebookRunArgs", "notebook_edit", "notebook_run", "run_cells"]

MAX_IMAGES_TO_MODEL = 4
"""Images of one call sent to a model that sees (the rest are named for view_image)."""
ON_DISK_NOTE = (
    "(outputs written into the .ipynb file on disk: no front end with the blitz_kernel extension "
    "is connected; an editor, nbclient or papermill holding this notebook in memory does not see "
    "them, and its next save overwrites them)"
)


class NotebookRunArgs(BaseModel):
    cell: int | str | None = Field(
        default=None, description="The cell to run: its 0-based index, or its id (as notebook_read shows it)."
    )
    start: int | None = Field(default=None, ge=0, description="Run a range of cells: the first index.")
    end: int | None = Field(
        default=None, ge=0, description="The last index of the range (included); stops at the first error."
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="Stop a cell after this many seconds (default: no limit but the turn's --timeout).",
    )

    @model_validator(mode="after")
    def _one_target(self) -> NotebookRunArgs:
        ranged = self.start is not None or self.end is not None
        if (self.cell is None) == (not ranged):
            raise ValueError("give either `cell` (an index or id) or `start` and `end`")
        if ranged and (self.start is None or self.end is None):
            raise ValueError("a range needs both `start` and `end`")
        if ranged and self.end is not None and self.start is not None and self.end < self.start:
            raise ValueError(f"`end` ({self.end}) is before `start` ({self.start})")
        return self


# -- where the cells are ----------------------------------------------------------------------


class _Live:
    """The open notebook, through the bridge."""

    via = "bridge"

    def __init__(self, bridge: NotebookAccess) -> None:
        self.bridge = bridge
        self.path: str | None = None

    async def cells(self) -> list[dict[str, Any]]:
        result = await self.bridge.request(
            "read_cells", {"indices": None, "include_outputs": False, "include_images": False, "max_output_chars": 0}
        )
        self.path = result.get("path")
        return list(result.get("cells", []))

    async def write(self, cell: dict[str, Any], run: CellRun, metadata: dict[str, Any]) -> dict[str, Any]:
        result = await self.bridge.request(
            "set_outputs",
            {
                "id": cell["id"],
                "outputs": run.outputs,
                "execution_count": run.execution_count,
                "metadata": metadata,
            },
        )
        return {
            "index": result.get("index", cell["index"]),
            "outputs_before": result.get("previous_outputs", []),
            "execution_count_before": result.get("previous_execution_count"),
            "metadata_before": result.get("previous_metadata"),
        }


class _OnDisk:
    """The .ipynb on disk (no front end connected)."""

    via = "file"

    def __init__(self, path: Path) -> None:
        self.path = path

    async def cells(self) -> list[dict[str, Any]]:
        document = load_notebook(self.path)
        return [
            {
                "index": index,
                "id": cell.get("id", ""),
                "cell_type": cell.get("cell_type", "code"),
                "source": cell_source(cell),
                "blitz": (cell.get("metadata") or {}).get("blitz"),
            }
            for index, cell in enumerate(document["cells"])
        ]

    async def write(self, cell: dict[str, Any], run: CellRun, metadata: dict[str, Any]) -> dict[str, Any]:
        document = load_notebook(self.path)  # read again: the code may have changed the file
        index = find_cell(document, cell.get("id") or None, cell["index"])
        if index is None:
            raise ToolError(f"cell {cell['index']} is gone from {self.path}; its outputs were not written")
        target = document["cells"][index]
        before = {
            "index": index,
            "outputs_before": target.get("outputs", []),
            "execution_count_before": target.get("execution_count"),
            "metadata_before": (target.get("metadata") or {}).get("blitz"),
        }
        target["outputs"] = run.outputs
        target["execution_count"] = run.execution_count
        target.setdefault("metadata", {})["blitz"] = metadata
        save_notebook(self.path, document)
        return before


async def _place(ctx: ToolContext, tool_name: str) -> tuple[_Live | _OnDisk, list[dict[str, Any]]]:
    """Where the cells are (the live notebook first), and its cells."""
    bridge = notebook_access(ctx)
    if bridge is not None:
        live = _Live(bridge)
        try:
            return live, await live.cells()
        except NotebookUnavailableError:
            pass
    user_ns = ctx.kernel.user_ns if ctx.kernel is not None else {}
    path = find_notebook_file(user_ns, os.environ, Path.cwd())
    if path is None:
        raise NotebookUnavailableError(NEEDS_EXTENSION.replace("notebook_edit", tool_name))
    on_disk = _OnDisk(path)
    return on_disk, await on_disk.cells()


def _targets(cells: list[dict[str, Any]], args: NotebookRunArgs) -> list[dict[str, Any]]:
    count = len(cells)
    if args.cell is not None:
        if isinstance(args.cell, int) or (isinstance(args.cell, str) and args.cell.isdigit()):
            index = int(args.cell)
            if not 0 <= index < count:
                raise ToolError(f"no cell {index}: the notebook has {count} cells (0..{count - 1})")
            return [cells[index]]
        found = [c for c in cells if c.get("id") == args.cell]
        if not found:
            raise ToolError(f"no cell with id {args.cell!r}; read the notebook (notebook_read) for the ids")
        return found
    assert args.start is not None and args.end is not None
    if args.end >= count:
        raise ToolError(f"no cell {args.end}: the notebook has {count} cells (0..{count - 1})")
    return cells[args.start : args.end + 1]


def _is_blitz(source: str) -> bool:
    return source.lstrip().startswith(("%%blitz", "%blitz"))


# -- running ------------------------------------------------------------------------------------


async def run_cells(ctx: ToolContext, args: NotebookRunArgs, tool_name: str = "notebook_run") -> str | ToolOutput:
    """Run the chosen cells in order, each one's outputs into its cell; stop at the first error."""
    ns = user_namespace(ctx, tool_name)
    place, cells = await _place(ctx, tool_name)
    targets = _targets(cells, args)
    return await run_notebook_cells(ctx, ns, place, targets)


async def run_notebook_cells(
    ctx: ToolContext, ns: dict[str, Any], place: _Live | _OnDisk, targets: list[dict[str, Any]]
) -> str | ToolOutput:
    """Run `targets` (cells as `place` lists them) in order; the text the model reads."""
    recorder = change_recorder(ctx)
    reports: list[str] = []
    images: list[tuple[bytes, str]] = []
    failed = False
    for position, cell in enumerate(targets):
        if cell.get("cell_type") != "code":
            reports.append(f"cell {cell['index']} is a {cell.get('cell_type')} cell: nothing to run")
            continue
        if _is_blitz(cell.get("source", "")):
            raise ToolError(f"cell {cell['index']} is a %%blitz cell; notebook_run does not start another turn")
        run, namespace = await _run_one(ctx, ns, cell, recorder)
        written = await _write(place, cell, run, ctx, recorder)
        images.extend(run.images)
        reports.append(_report(cell, run, namespace, written))
        if run.interrupted:
            raise asyncio.CancelledError("notebook_run was interrupted by the user")
        if run.error is not None:
            failed = True
            rest = targets[position + 1 :]
            if rest:
                reports.append(
                    f"stopped at cell {cell['index']}: cells {rest[0]['index']}..{rest[-1]['index']} were not run"
                )
            break
    if isinstance(place, _OnDisk):
        reports.append(ON_DISK_NOTE)
    figures = keep_figures(ctx, images)
    if figures:
        reports.append("figures:\n" + "\n".join(figures))
    text = "\n\n".join(reports) or "(nothing to run)"
    shown = [png_part(png) for png, _label in images]
    if failed:
        raise ToolError(text, display_images=shown)
    if not shown:
        return text
    to_model = shown[:MAX_IMAGES_TO_MODEL] if ctx.vision else []
    return ToolOutput(text, images=to_model, display_images=shown)


async def _run_one(
    ctx: ToolContext, ns: dict[str, Any], cell: dict[str, Any], recorder: ChangeRecorder | None
) -> tuple[CellRun, str]:
    taken: list[object] = []

    def snapshot() -> None:
        if recorder is not None:
            taken.append(recorder.namespace_before(ns))

    source = str(cell.get("source", ""))
    started = time.monotonic()
    try:
        async with one_at_a_time():
            host, limit = cell_host(ctx.kernel), effective_timeout(None, ctx)
            run = await run_cell_source(source, ns, host, limit, snapshot, cell.get("id") or None)
    finally:
        namespace = recorder.namespace_after(taken[0], ctx.call_id, source) if recorder and taken else ""
    run.notes.insert(0, f"ran in {time.monotonic() - started:.2f} s")
    return run, namespace


async def _write(
    place: _Live | _OnDisk, cell: dict[str, Any], run: CellRun, ctx: ToolContext, recorder: ChangeRecorder | None
) -> dict[str, Any] | None:
    """Put the run's outputs into the cell and report what reverses it; None when the front
    end could not be reached (an interrupt cancelling the turn, a closed tab)."""
    metadata = {**(cell.get("blitz") or {}), **agent_mark(ctx, "ran")}
    try:
        before = await place.write(cell, run, metadata)
    except (ToolError, asyncio.CancelledError):
        if run.interrupted:
            return None
        raise
    if recorder is not None:
        recorder.cell_changed(
            {
                "action": "run",
                "via": place.via,
                "notebook": str(place.path) if isinstance(place, _OnDisk) else None,
                "index": before["index"],
                "cell_id": cell.get("id") or None,
                "source_after": cell.get("source", ""),
                "outputs_before": before["outputs_before"],
                "execution_count_before": before["execution_count_before"],
                "metadata_before": before["metadata_before"],
            }
        )
    return before


def _report(cell: dict[str, Any], run: CellRun, namespace: str, written: dict[str, Any] | None) -> str:
    header = [f"cell {cell['index']}"]
    if cell.get("id"):
        header.append(f"id {cell['id']}")
    if run.execution_count is not None:
        header.append(f"execution count {run.execution_count}")
    header.extend(run.notes)
    lines = [" · ".join(header)]
    if namespace:
        lines.append(f"namespace: {namespace}")
    lines.extend(_output_lines(run))
    if run.error is not None:
        lines.append(f"error: {run.error}")
        if run.failing_line:
            lines.append(f"failing line: {run.failing_line}")
        lines.append(f"traceback:\n{cap_cell_text(run.traceback_text, MAX_SECTION_CHARS // 4).rstrip()}")
    if written is None:
        lines.append("(the outputs could not be written into the cell: the turn was interrupted)")
    elif not run.outputs:
        lines.append("(no output)")
    return "\n".join(lines)


def _output_lines(run: CellRun) -> list[str]:
    lines = []
    for output in run.outputs:
        kind = output["output_type"]
        if kind == "stream":
            lines.append(f"{output['name']}:\n{cap_text(output['text']).rstrip()}")
        elif kind in ("display_data", "execute_result"):
            data = output.get("data", {})
            label = "result" if kind == "execute_result" else "display"
            text = str(data.get("text/plain", "")).rstrip()
            others = [m for m in data if m != "text/plain"]
            suffix = f" ({', '.join(others)})" if others else ""
            lines.append(f"{label}{suffix}:\n{cap_text(text)}" if text else f"{label}{suffix}")
    return lines


@tool("notebook_run", ToolKind.MUTATING, NotebookRunArgs, ToolPresentation(preview_kind="code"))
async def notebook_run(args: NotebookRunArgs, ctx: ToolContext) -> str | ToolOutput:
    """Run notebook cells in the user's namespace, as the user would: by `cell` (index or id),
    or `start`..`end` in order (stopping at the first error). The outputs, figures and the
    execution count go into the cell itself. Returns each cell's outputs (text shortened),
    the error with its failing line, and the variables it created, rebound or deleted. Read
    the notebook first (notebook_read) for indices; fix a failing cell with notebook_edit
    (run: true runs it again)."""
    if args.timeout_s is not None:
        ctx = _with_deadline(ctx, args.timeout_s)
    return await run_cells(ctx, args)


def _with_deadline(ctx: ToolContext, timeout_s: float) -> ToolContext:
    deadline = time.monotonic() + timeout_s
    if ctx.deadline is not None:
        deadline = min(deadline, ctx.deadline)
    return dataclasses.replace(ctx, deadline=deadline)


@tool("notebook_edit", ToolKind.MUTATING, NotebookEditArgs)
async def notebook_edit(args: NotebookEditArgs, ctx: ToolContext) -> str | ToolOutput:
    """Change the open notebook: insert a cell, replace a cell's source, or delete a cell. The
    user sees the change at once (the cell is scrolled into view and highlighted); cells are
    not run unless run: true, which runs the inserted or replaced cell at once and returns its
    outputs as notebook_run does. Read the notebook first (notebook_read): indices shift after
    inserts and deletes. The running %%blitz cell cannot be replaced or deleted."""
    if args.run and args.action == "delete":
        raise ToolError("run: true needs insert or replace; a deleted cell cannot be run")
    edited = await edit_cell(args, ctx)
    if not args.run:
        return edited
    edited = edited.replace(" It has not been run.", "").replace("; it has not been run:", ":")
    try:  # both paths refuse an index past the end, so the cell is at args.index
        ran = await run_cells(ctx, NotebookRunArgs(cell=args.index), "notebook_edit")
    except ToolError as error:
        raise ToolError(f"{edited}\n\n{error}", display_images=error.display_images) from None
    if isinstance(ran, ToolOutput):
        return ToolOutput(f"{edited}\n\n{ran.text}", images=ran.images, display_images=ran.display_images)
    return f"{edited}\n\n{ran}"


NOTEBOOK_RUN_TOOLS: list[Tool] = [notebook_edit, notebook_run]
"""notebook_edit lives here, beside notebook_run, because `run: true` runs what it edited."""
