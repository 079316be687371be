"""Notebook tools: read the notebook's cells and change them, through the front end.

The live notebook lives in the browser, not in the kernel: the kernel only ever sees code
sent to it. So the tools talk to the JupyterLab / Notebook 7 extension over the comm
`blitz.notebook` (notebook/bridge.py is the kernel side; the message shapes are documented
there). Without the extension (VS Code, classic front ends, nbclient), `notebook_read`
falls back to the `.ipynb` on disk, which lacks unsaved edits, and says so; `notebook_edit`
edits that file when the kernel knows it (notebook_file.py: atomically, and the result warns
that an editor holding the notebook open must reload it), and refuses when it does not.
Every edit reports what reverses it to the turn's checkpoint.

Tools reach the bridge through the kernel context's optional `notebook` attribute (a
`NotebookAccess`); both the bridge and the disk reader produce the same cell shape, so one
formatter writes what the model reads.
"""

from __future__ import annotations

import base64
import difflib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..core.text import shorten
from .media import image_dimensions
from .notebook_file import cell_source, load_notebook, new_cell, retyped, save_notebook
from .registry import ChangeRecorder, Tool, ToolContext, ToolError, ToolKind, change_recorder, tool

__all__ = [
    "NOTEBOOK_TOOLS",
    "agent_note",
    "NotebookAccess",
    "NotebookRequestError",
    "NotebookUnavailableError",
    "cell_image",
    "disk_cell",
    "find_notebook_file",
    "edit_cell",
    "notebook_read",
]

MAX_READ_CHARS = 60_000
"""What one notebook_read returns at most; later cells are listed by their first line."""
MAX_SOURCE_CHARS = 12_000
MAX_OUTPUT_CHARS = 2_000
"""Per output as the model reads it (the front end caps what it sends at OUTPUT_CHARS_SENT)."""
OUTPUT_CHARS_SENT = 8_000
MAX_DIFF_LINES = 80
NEEDS_EXTENSION = (
    "notebook_edit needs the notebook open in JupyterLab or Notebook 7 with the blitz_kernel "
    "extension (pip install blitz_kernel, then reload the page); this front end has no "
    "connection to it. Show the user the code to paste instead, or write a .py file."
)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookUnavailableError(ToolError):
    """No front end with the blitz_kernel extension is connected to this kernel."""


class NotebookRequestError(ToolError):
    """The front end answered a request with an error, or did not answer in time."""


class NotebookNoAnswerError(NotebookRequestError):
    """No answer came: the request timed out or the front end went away before answering
    (unlike an error or a malformed reply, which is an answer)."""


@runtime_checkable
class NotebookAccess(Protocol):
    """The live notebook, through the front end (notebook/bridge.py implements it)."""

    async def request(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request and return the reply's `result`. Raises NotebookUnavailableError
        when no front end with the extension is connected, NotebookRequestError when it
        answered with an error or not within the bridge's timeout."""
        ...


def notebook_access(ctx: ToolContext) -> NotebookAccess | None:
    """The kernel context's bridge, when the front end offers one."""
    bridge = getattr(ctx.kernel, "notebook", None)
    return bridge if isinstance(bridge, NotebookAccess) else None


# -- finding and reading the file on disk -----------------------------------------------------


def find_notebook_file(user_ns: Mapping[str, Any], environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The .ipynb this kernel serves, as far as the kernel can tell without a front end.

    Jupyter Server sets `JPY_SESSION_NAME` (ipykernel copies it to `__session__`); VS Code
    sets `__vsc_ipynb_file__`. The path may be absolute or relative to the server's root,
    and the kernel starts in the notebook's directory, so the file name is also tried there.
    """
    candidates = [user_ns.get("__vsc_ipynb_file__"), user_ns.get("__session__"), environ.get("JPY_SESSION_NAME")]
    for candidate in candidates:
        if not isinstance(candidate, str) or not candidate.endswith(".ipynb"):
            continue
        path = Path(candidate).expanduser()
        for option in (path if path.is_absolute() else cwd / path, cwd / path.name):
            if option.is_file():
                return option
    return None


def read_notebook_file(path: Path, include_images: bool = False) -> dict[str, Any]:
    """An .ipynb in the bridge's `read_cells` result shape."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        raw_cells = document["cells"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ToolError(f"cannot read the notebook file {path}: {error}") from None
    cells = [disk_cell(index, cell, include_images) for index, cell in enumerate(raw_cells)]
    return {"path": str(path), "cell_count": len(cells), "cells": cells}


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def disk_cell(index: int, cell: dict[str, Any], include_images: bool) -> dict[str, Any]:
    """An nbformat cell in the bridge's CELL shape (bridge.py)."""
    outputs = [_disk_output(o, include_images) for o in cell.get("outputs", [])]
    return {
        "index": index,
        "id": cell.get("id", ""),
        "cell_type": cell.get("cell_type", "code"),
        "source": _text(cell.get("source")),
        "execution_count": cell.get("execution_count"),
        "running": False,
        "outputs": outputs,
        **({"blitz": cell["metadata"]["blitz"]} if isinstance((cell.get("metadata") or {}).get("blitz"), dict) else {}),
    }


def _disk_output(output: dict[str, Any], include_images: bool) -> dict[str, Any]:
    kind = output.get("output_type", "")
    if kind == "stream":
        return {"output_type": kind, "name": output.get("name", "stdout"), "text": _text(output.get("text"))}
    if kind == "error":
        return {
            "output_type": kind,
            "ename": output.get("ename", ""),
            "evalue": output.get("evalue", ""),
            "traceback": "\n".join(output.get("traceback", [])),
        }
    data = output.get("data", {})
    summary: dict[str, Any] = {
        "output_type": kind,
        "mime_types": list(data),
        "text": _text(data.get("text/markdown") or data.get("text/plain") or ""),
        "images": [],
    }
    for mime in ("image/png", "image/jpeg", "image/gif"):
        if mime in data:
            encoded = _text(data[mime]).replace("\n", "")
            image: dict[str, Any] = {"mime_type": mime, **_dimensions(encoded)}
            if include_images:
                image["data"] = encoded
            summary["images"].append(image)
    return summary


def _dimensions(encoded: str) -> dict[str, int]:
    try:
        head = base64.b64decode(encoded[:44] + "=" * (-len(encoded[:44]) % 4))
    except ValueError:
        return {}
    size = image_dimensions(head)
    return {"width": size[0], "height": size[1]} if size else {}


# -- what the model reads ---------------------------------------------------------------------


def cap_cell_text(text: str, limit: int) -> str:
    """A cell's source or output as the model reads it: terminal colours dropped, the start kept."""
    text = _ANSI.sub("", text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {len(text) - limit} more characters]"


def output_lines(index: int, outputs: list[dict[str, Any]]) -> list[str]:
    """A cell's outputs as the lines `notebook_read` and `@cell:N` show (images by size)."""
    lines: list[str] = []
    image_number = 0
    for output in outputs:
        kind = output.get("output_type")
        if kind == "stream":
            lines.append(
                f"→ {output.get('name', 'stdout')}:\n{cap_cell_text(output.get('text', ''), MAX_OUTPUT_CHARS).rstrip()}"
            )
        elif kind == "error":
            lines.append(
                f"→ error: {output.get('ename', '')}: {output.get('evalue', '')}\n"
                f"{cap_cell_text(output.get('traceback', ''), MAX_OUTPUT_CHARS).rstrip()}"
            )
        else:
            text = str(output.get("text") or "").rstrip()
            label = "result" if kind == "execute_result" else "display"
            if text:
                lines.append(f"→ {label}:\n{cap_cell_text(text, MAX_OUTPUT_CHARS)}")
            for image in output.get("images", []):
                image_number += 1
                size = f" {image['width']}×{image['height']}" if "width" in image else ""
                lines.append(
                    f'→ {image.get("mime_type", "image")}{size}: view_image(output="cell:{index}:{image_number}")'
                )
            others = [m for m in output.get("mime_types", []) if not m.startswith(("text/plain", "image/"))]
            if not text and not output.get("images"):
                lines.append(f"→ {label}: {', '.join(others) or 'empty'}")
    return lines


ExecutedSource = Callable[[int], tuple[str | None, str] | None]
"""(the id of the cell that ran it, the source) of In[n] in this kernel, None: not run in it;
to tell a stale cell."""


def _cell_header(cell: dict[str, Any], executed: ExecutedSource | None = None) -> str:
    parts = [f"[{cell['index']}] {cell.get('cell_type', 'code')}"]
    count = cell.get("execution_count")
    if count is not None:
        parts.append(f"execution count {count}")
        if _stale(cell, executed(count) if executed is not None else None):
            parts.append("STALE (edited since it ran)")
    failed = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
    if failed is not None:
        parts.append(f"FAILED ({failed.get('ename') or 'error'})")
    if cell.get("running"):
        parts.append("RUNNING NOW (the %%blitz cell of this turn)" if _is_blitz(cell) else "running now")
    if cell.get("id"):
        parts.append(f"id {cell['id']}")
    note = agent_note(cell)
    if note:
        parts.append(note)
    return " · ".join(parts)


def _stale(cell: dict[str, Any], ran: tuple[str | None, str] | None) -> bool:
    """The cell ran in this kernel (In[its count] was run by this very cell) and its source
    has changed since. A count from an earlier kernel, or a run whose cell is not known (no
    cell id), is never called stale."""
    if ran is None or cell.get("running") or not cell.get("id") or ran[0] != cell.get("id"):
        return False
    return ran[1].rstrip("\n") != str(cell.get("source", "")).rstrip("\n")


def agent_note(cell: dict[str, Any]) -> str:
    """'ran by the agent (session default, turn 3)' for a cell with the agent's mark, else ''."""
    blitz = cell.get("blitz")
    if not isinstance(blitz, dict) or blitz.get("session") is None:
        return ""
    turn = f", turn {blitz['turn']}" if blitz.get("turn") is not None else ""
    verb = "ran" if blitz.get("ran") else "edited"
    return f"{verb} by the agent (session {blitz['session']}{turn})"


def _is_blitz(cell: dict[str, Any]) -> bool:
    return str(cell.get("source", "")).lstrip().startswith("%%blitz")


def format_cells(
    result: dict[str, Any], include_outputs: bool, origin: str, executed: ExecutedSource | None = None
) -> str:
    """The notebook as the model reads it: a header, then each cell's source and outputs;
    each cell's header says its execution count, whether it is stale or failed, and whether
    the agent ran or edited it."""
    cells = result.get("cells", [])
    header = f"notebook {result.get('path') or '(unsaved)'} — {result.get('cell_count', len(cells))} cells; {origin}"
    blocks = [header]
    used = len(header)
    for position, cell in enumerate(cells):
        block = "\n".join(
            [
                _cell_header(cell, executed),
                cap_cell_text(cell.get("source", ""), MAX_SOURCE_CHARS),
                *(output_lines(cell["index"], cell.get("outputs", [])) if include_outputs else []),
            ]
        )
        if used + len(block) > MAX_READ_CHARS:
            rest = cells[position:]
            blocks.append(
                f"[... {len(rest)} more cells not shown in full (ask for them with cells=[...]):]\n"
                + "\n".join(f"[{c['index']}] {c.get('cell_type')}: {_first_line(c)}" for c in rest)
            )
            break
        blocks.append(block)
        used += len(block)
    return "\n\n".join(blocks)


def _first_line(cell: dict[str, Any]) -> str:
    line = next((x for x in str(cell.get("source", "")).splitlines() if x.strip()), "(empty)")
    return shorten(line, 80)


# -- notebook_read ----------------------------------------------------------------------------


class NotebookReadArgs(BaseModel):
    cells: list[int] | None = Field(
        default=None, description="Indices of the cells to read (0-based); all cells when omitted."
    )
    include_outputs: bool = Field(
        default=True, description="Include each cell's outputs (text, errors; images listed for view_image)."
    )


@tool("notebook_read", ToolKind.READ_ONLY, NotebookReadArgs)
async def notebook_read(args: NotebookReadArgs, ctx: ToolContext) -> str:
    """Read the notebook this kernel runs: every cell (or the given indices) with its index,
    type, source, execution count and outputs; cells edited since they ran are marked STALE,
    cells whose last run failed FAILED, and cells you ran or edited say so. The %%blitz cell
    running this turn is marked.
    Image outputs are listed as view_image(output="cell:N:K"). Use it before notebook_edit,
    since indices change when cells are inserted or deleted."""
    bridge = notebook_access(ctx)
    if bridge is not None:
        try:
            result = await bridge.request(
                "read_cells",
                {
                    "indices": args.cells,
                    "include_outputs": args.include_outputs,
                    "include_images": False,
                    "max_output_chars": OUTPUT_CHARS_SENT,
                },
            )
        except NotebookUnavailableError:
            pass
        else:
            return format_cells(result, args.include_outputs, "live from the open notebook", _executed(ctx))
    path = _file_or_error(ctx)
    result = read_notebook_file(path)
    result["cells"] = _select(result["cells"], args.cells)
    origin = (
        "read from the file on disk: no JupyterLab/Notebook 7 front end with the blitz_kernel "
        "extension is connected, so unsaved edits and outputs of this session may be missing"
    )
    return format_cells(result, args.include_outputs, origin, _executed(ctx))


def _executed(ctx: ToolContext) -> ExecutedSource | None:
    """The kernel's input history by execution count, when it keeps one (IPython)."""
    executed = getattr(ctx.kernel, "executed_cell", None)
    return executed if callable(executed) else None


def _file_or_error(ctx: ToolContext) -> Path:
    user_ns = ctx.kernel.user_ns if ctx.kernel is not None else {}
    path = find_notebook_file(user_ns, os.environ, Path.cwd())
    if path is None:
        raise NotebookUnavailableError(
            "cannot see the notebook: no JupyterLab/Notebook 7 front end with the blitz_kernel "
            "extension is connected, and the kernel does not know its .ipynb file (no "
            "JPY_SESSION_NAME or __session__); read the file with read_file if you know its path"
        )
    return path


def _select(cells: list[dict[str, Any]], indices: list[int] | None) -> list[dict[str, Any]]:
    if indices is None:
        return cells
    missing = [i for i in indices if not 0 <= i < len(cells)]
    if missing:
        raise ToolError(f"no cell {missing[0]}: the notebook has {len(cells)} cells (0..{len(cells) - 1})")
    return [cells[i] for i in indices]


async def cell_image(ctx: ToolContext, index: int, number: int) -> tuple[bytes, str]:
    """The `number`-th image (1-based) among cell `index`'s outputs, for view_image."""
    bridge = notebook_access(ctx)
    result: dict[str, Any] | None = None
    if bridge is not None:
        try:
            result = await bridge.request(
                "read_cells",
                {"indices": [index], "include_outputs": True, "include_images": True, "max_output_chars": 0},
            )
        except NotebookUnavailableError:
            result = None
    if result is None:
        result = read_notebook_file(_file_or_error(ctx), include_images=True)
        result["cells"] = _select(result["cells"], [index])
    cells = result.get("cells", [])
    images = [image for output in (cells[0].get("outputs", []) if cells else []) for image in output.get("images", [])]
    if not 1 <= number <= len(images):
        raise ToolError(f"cell {index} has {len(images)} image output(s); there is no image {number}")
    image = images[number - 1]
    try:
        return base64.b64decode(image["data"]), str(image.get("mime_type", "image/png"))
    except (KeyError, ValueError):
        raise ToolError(f"the front end sent no image data for cell {index}") from None


# -- notebook_edit ----------------------------------------------------------------------------


class NotebookEditArgs(BaseModel):
    action: Literal["insert", "replace", "delete"] = Field(
        description="insert a new cell before `index`, replace cell `index`'s source, or delete it."
    )
    index: int = Field(
        ge=0,
        description="0-based cell index; for insert, the new cell's index (the number of cells appends).",
    )
    source: str | None = Field(default=None, description="The cell's new source (insert, replace).")
    cell_type: Literal["code", "markdown", "raw"] = Field(
        default="code",
        description="The new cell's type (insert); for replace, the type to change the cell to (default: keep its type).",
    )
    run: bool = Field(
        default=False,
        description="Run the cell right after inserting or replacing it (as notebook_run does): one call.",
    )


async def edit_cell(args: NotebookEditArgs, ctx: ToolContext) -> str:
    """notebook_edit's change (notebook_run.py holds the tool, which may also run the cell):
    through the bridge, else in the .ipynb on disk."""
    if args.action != "delete" and args.source is None:
        raise ToolError(f"{args.action} needs `source`, the cell's text")
    bridge = notebook_access(ctx)
    if bridge is not None:
        try:
            return await _edit_through_bridge(bridge, args, change_recorder(ctx), agent_mark(ctx))
        except NotebookUnavailableError:
            pass
    user_ns = ctx.kernel.user_ns if ctx.kernel is not None else {}
    path = find_notebook_file(user_ns, os.environ, Path.cwd())
    if path is None:
        raise NotebookUnavailableError(NEEDS_EXTENSION)
    return edit_notebook_file(path, args, change_recorder(ctx), agent_mark(ctx))


def agent_mark(ctx: ToolContext, action: str = "edited") -> dict[str, Any]:
    """The `blitz` metadata of a cell the agent edited or ran: which session and turn, so a
    later `@cell:N` or a review knows where the cell came from."""
    return {"session": ctx.session, "turn": getattr(change_recorder(ctx), "turn", None), action: True}


async def _edit_through_bridge(
    bridge: NotebookAccess, args: NotebookEditArgs, recorder: ChangeRecorder | None, mark: dict[str, Any]
) -> str:
    if args.action == "insert":
        result = await bridge.request(
            "insert_cell", {"index": args.index, "cell_type": args.cell_type, "source": args.source, "metadata": mark}
        )
        _record(
            recorder,
            action="insert",
            via="bridge",
            index=result["index"],
            cell_id=result.get("id"),
            cell_type_after=args.cell_type,
            source_after=args.source,
        )
        return (
            f"inserted a {args.cell_type} cell at index {result['index']}; the notebook now has "
            f"{result['cell_count']} cells (cells after it moved down by one). It has not been run."
        )
    if args.action == "replace":
        params: dict[str, Any] = {"index": args.index, "source": args.source, "metadata": mark}
        before_type = before_id = None
        if "cell_type" in args.model_fields_set:
            params["cell_type"] = args.cell_type
            if recorder is not None:  # a new type makes a new cell: learn the old type first
                read = await bridge.request(
                    "read_cells",
                    {"indices": [args.index], "include_outputs": False, "include_images": False, "max_output_chars": 0},
                )
                before = (read.get("cells") or [{}])[0]
                before_type, before_id = before.get("cell_type"), before.get("id")
        result = await bridge.request("replace_cell", params)
        _record(
            recorder,
            action="replace",
            via="bridge",
            index=args.index,
            cell_id=result.get("id"),
            cell_id_before=before_id or result.get("id"),
            cell_type_before=before_type or result.get("cell_type"),
            source_before=result.get("previous_source", ""),
            cell_type_after=result.get("cell_type"),
            source_after=args.source,
        )
        return _replaced_text(args.index, result, args.source or "")
    result = await bridge.request("delete_cell", {"index": args.index})
    deleted = result.get("deleted", {})
    _record(
        recorder,
        action="delete",
        via="bridge",
        index=args.index,
        cell_id=deleted.get("id"),
        cell_type_before=deleted.get("cell_type"),
        source_before=deleted.get("source", ""),
    )
    return (
        f"deleted cell {args.index} ({deleted.get('cell_type', 'cell')}: {_first_line(deleted)}); the "
        f"notebook now has {result['cell_count']} cells (cells after it moved up by one)"
    )


def _record(recorder: ChangeRecorder | None, **change: Any) -> None:
    if recorder is not None:
        recorder.cell_changed(change)


ON_DISK_NOTE = (
    "(edited the .ipynb file on disk: no front end with the blitz_kernel extension is connected; "
    "a copy of this notebook open in an editor must be reloaded from disk, or its next save "
    "overwrites this change)"
)


def edit_notebook_file(
    path: Path, args: NotebookEditArgs, recorder: ChangeRecorder | None, mark: dict[str, Any] | None = None
) -> str:
    """notebook_edit on the .ipynb itself (notebook_file.py says when and why)."""
    document = load_notebook(path)
    cells: list[dict[str, Any]] = document["cells"]
    count = len(cells)
    limit = count if args.action == "insert" else count - 1
    if not 0 <= args.index <= limit:
        raise ToolError(f"no cell {args.index}: the notebook has {count} cells (0..{limit} allowed for {args.action})")
    base = {"action": args.action, "via": "file", "notebook": str(path), "index": args.index}
    if args.action == "insert":
        cell = new_cell(document, args.cell_type, args.source or "")
        if mark is not None:
            cell["metadata"]["blitz"] = mark
        cells.insert(args.index, cell)
        save_notebook(path, document)
        _record(recorder, **base, cell_id=cell.get("id"), cell_type_after=args.cell_type, source_after=args.source)
        return f"inserted a {args.cell_type} cell at index {args.index}; the notebook now has {count + 1} cells. {ON_DISK_NOTE}"
    before = cells[args.index]
    if _is_blitz({"source": cell_source(before)}):
        raise ToolError(f"cell {args.index} is a %%blitz cell; it cannot be {args.action}d")
    if args.action == "replace":
        cell_type = args.cell_type if "cell_type" in args.model_fields_set else before.get("cell_type", "code")
        cells[args.index] = retyped(document, before, cell_type, args.source or "")
        if mark is not None:
            cells[args.index]["metadata"] = {**cells[args.index].get("metadata", {}), "blitz": mark}
        save_notebook(path, document)
        _record(
            recorder,
            **base,
            cell_id=before.get("id"),
            cell_type_before=before.get("cell_type"),
            source_before=cell_source(before),
            cell_type_after=cell_type,
            source_after=args.source,
            cell_before=before,
        )
        result = {"cell_type": cell_type, "previous_source": cell_source(before)}
        return f"{_replaced_text(args.index, result, args.source or '')}\n{ON_DISK_NOTE}"
    del cells[args.index]
    save_notebook(path, document)
    _record(
        recorder,
        **base,
        cell_id=before.get("id"),
        cell_type_before=before.get("cell_type"),
        source_before=cell_source(before),
        cell_before=before,
    )
    shown = {"source": cell_source(before)}
    return (
        f"deleted cell {args.index} ({before.get('cell_type', 'cell')}: {_first_line(shown)}); the notebook "
        f"now has {count - 1} cells. {ON_DISK_NOTE}"
    )


def _replaced_text(index: int, result: dict[str, Any], source: str) -> str:
    previous = str(result.get("previous_source", ""))
    diff = list(difflib.unified_diff(previous.splitlines(), source.splitlines(), "before", "after", lineterm="", n=1))
    if len(diff) > MAX_DIFF_LINES:
        diff = [*diff[:MAX_DIFF_LINES], f"[... {len(diff) - MAX_DIFF_LINES} more diff lines]"]
    kind = result.get("cell_type", "cell")
    changes = "\n".join(diff) if diff else "(the source was already exactly this)"
    return f"replaced the source of cell {index} ({kind}); it has not been run:\n{changes}"


NOTEBOOK_TOOLS: list[Tool] = [notebook_read]
"""notebook_edit and notebook_run: notebook_run.py (an edit may run its cell)."""
