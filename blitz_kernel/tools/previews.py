"""Approval previews: what a call would change, shown in the permission request before anyone
allows it (`PendingCall.preview`), as plain text (front ends never render it as HTML).

- `write_file`, `edit_file`: a unified diff against the file as it is now (`--- a/PATH`,
  `+++ b/PATH`); a new file is all added lines. A long diff is folded: its first
  MAX_DIFF_LINES lines, then "[... N more diff lines]".
- `notebook_edit`: the cell's source before and after (read live through the bridge, else from
  the .ipynb).
- `run_python`: the code itself.
- `notebook_run`: the source of each cell it would run.

A preview reads, never writes, and goes through the same workspace confinement as the tools.
When it cannot be made (the file is binary, too large, unreadable) it says why in one line;
an edit that would fail says so, which is worth knowing before saying yes.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Awaitable, Callable
from typing import Any

from ..core.tools import PreviewKind
from .files import EditFileArgs, WriteFileArgs, count_error, edit_file, match_line_endings, write_file
from .notebook import NotebookEditArgs, find_notebook_file, notebook_access, read_notebook_file
from .notebook_file import cell_source
from .notebook_run import NotebookRunArgs, notebook_edit, notebook_run
from .paths import open_in_workspace, resolve_in_workspace
from .registry import Tool, ToolContext, ToolError, with_preview
from .run_python import RunPythonArgs, run_python

__all__ = ["MAX_DIFF_LINES", "fold", "unified_diff", "with_previews"]

MAX_DIFF_LINES = 120
MAX_PREVIEW_BYTES = 2 * 1024 * 1024
"""Files above this are not read for a diff (a preview must not stall the kernel)."""


class _NoPreview(Exception):
    """The preview cannot be made; the message says why, in a few words."""


def fold(lines: list[str], limit: int = MAX_DIFF_LINES) -> str:
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join([*lines[:limit], f"[... {len(lines) - limit} more diff lines]"])


def unified_diff(path: str, before: str | None, after: str) -> str:
    """A diff of `before` (None: the file does not exist) → `after`, folded."""
    old_name = "/dev/null" if before is None else f"a/{path}"
    lines = list(
        difflib.unified_diff((before or "").splitlines(), after.splitlines(), old_name, f"b/{path}", lineterm="", n=3)
    )
    return fold(lines) if lines else f"(no change: {path} already holds exactly this)"


def _current_text(ctx: ToolContext, path: str) -> str | None:
    """The file's text now; None when it does not exist."""
    root = ctx.workspace.resolve()
    if not resolve_in_workspace(root, path).exists():
        return None
    fd, _ = open_in_workspace(root, path)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        if size > MAX_PREVIEW_BYTES:
            raise _NoPreview(f"{path} is {size:,} bytes; too large to show a diff")
        data = handle.read()
    if b"\x00" in data[:8192]:
        raise _NoPreview(f"{path} is a binary file; no diff shown")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _NoPreview(f"{path} is not UTF-8 text; no diff shown") from None


async def write_file_preview(args: WriteFileArgs, ctx: ToolContext) -> str:
    return unified_diff(args.path, _current_text(ctx, args.path), args.content)


async def edit_file_preview(args: EditFileArgs, ctx: ToolContext) -> str:
    text = _current_text(ctx, args.path)
    if text is None:
        raise _NoPreview(f"{args.path} does not exist, so this edit would fail")
    old, new = match_line_endings(text, args)
    count = text.count(old) if old else 0
    if count == 0 or (count > 1 and not args.replace_all):
        raise _NoPreview(f"this edit would fail: {count_error(text, old, count, args.path)}")
    edited = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
    return unified_diff(args.path, text, edited)


async def notebook_edit_preview(args: NotebookEditArgs, ctx: ToolContext) -> str:
    if args.action == "insert":
        return f"new {args.cell_type} cell at index {args.index}:\n{args.source or ''}"
    cell = await _cell(ctx, args.index)
    kind = cell.get("cell_type", "code")
    if args.action == "delete":
        return f"cell {args.index} ({kind}) will be deleted; its source:\n{cell.get('source', '')}"
    new_kind = args.cell_type if "cell_type" in args.model_fields_set else kind
    return (
        f"cell {args.index} ({kind}) before:\n{cell.get('source', '')}\n\n"
        f"cell {args.index} ({new_kind}) after:\n{args.source or ''}"
    )


async def _cell(ctx: ToolContext, index: int) -> dict[str, Any]:
    bridge = notebook_access(ctx)
    if bridge is not None:
        try:
            result = await bridge.request(
                "read_cells",
                {"indices": [index], "include_outputs": False, "include_images": False, "max_output_chars": 0},
            )
            return dict(result["cells"][0])
        except (ToolError, KeyError, IndexError):
            pass
    user_ns = ctx.kernel.user_ns if ctx.kernel is not None else {}
    path = find_notebook_file(user_ns, os.environ, ctx.workspace)
    if path is None:
        raise _NoPreview("the notebook cannot be read to show the cell")
    cells = read_notebook_file(path)["cells"]
    if not 0 <= index < len(cells):
        raise _NoPreview(f"no cell {index}: the notebook has {len(cells)} cells")
    cell = cells[index]
    return {"cell_type": cell.get("cell_type"), "source": cell_source(cell)}


async def notebook_run_preview(args: NotebookRunArgs, ctx: ToolContext) -> str:
    if args.cell is not None and not (isinstance(args.cell, int) or str(args.cell).isdigit()):
        cells = await _all_cells(ctx)
        chosen = [c for c in cells if c.get("id") == args.cell]
        if not chosen:
            raise _NoPreview(f"no cell with id {args.cell!r}")
    else:
        first = int(args.cell) if args.cell is not None else args.start or 0
        last = first if args.cell is not None else (args.end if args.end is not None else first)
        cells = await _all_cells(ctx)
        if last >= len(cells):
            raise _NoPreview(f"no cell {last}: the notebook has {len(cells)} cells")
        chosen = cells[first : last + 1]
    return "\n\n".join(f"# cell {c['index']}\n{c.get('source', '')}" for c in chosen)


async def _all_cells(ctx: ToolContext) -> list[dict[str, Any]]:
    bridge = notebook_access(ctx)
    if bridge is not None:
        try:
            result = await bridge.request(
                "read_cells",
                {"indices": None, "include_outputs": False, "include_images": False, "max_output_chars": 0},
            )
            return [dict(c) for c in result["cells"]]
        except (ToolError, KeyError):
            pass
    user_ns = ctx.kernel.user_ns if ctx.kernel is not None else {}
    path = find_notebook_file(user_ns, os.environ, ctx.workspace)
    if path is None:
        raise _NoPreview("the notebook cannot be read to show the cell")
    return [
        {"index": c["index"], "id": c.get("id", ""), "source": c.get("source", "")}
        for c in read_notebook_file(path)["cells"]
    ]


async def run_python_preview(args: RunPythonArgs, ctx: ToolContext) -> str:
    return args.code


def _safe(preview: Callable[[Any, ToolContext], Awaitable[str]]) -> Callable[[Any, ToolContext], Awaitable[str | None]]:
    """A preview that cannot be made says why instead of failing the request."""

    async def run(args: Any, ctx: ToolContext) -> str | None:
        try:
            return await preview(args, ctx)
        except (_NoPreview, ToolError) as reason:
            return f"(no preview: {reason})"
        except OSError as error:
            return f"(no preview: {error.strerror or error})"

    return run


PREVIEWS: list[tuple[Tool, Callable[[Any, ToolContext], Awaitable[str]], PreviewKind]] = [
    (write_file, write_file_preview, "diff"),
    (edit_file, edit_file_preview, "diff"),
    (notebook_edit, notebook_edit_preview, "cell"),
    (run_python, run_python_preview, "code"),
    (notebook_run, notebook_run_preview, "code"),
]
"""The built-in tools that have a preview, with how the approval card shows it."""


def with_previews(tools: list[Tool]) -> list[Tool]:
    """The tools, those in PREVIEWS (the same tool objects) with their preview attached."""
    previewed = {id(base): (preview, kind) for base, preview, kind in PREVIEWS}
    attached = []
    for item in tools:
        found = previewed.get(id(item)) if item.preview is None else None
        attached.append(item if found is None else with_preview(item, _safe(found[0]), found[1]))
    return attached
