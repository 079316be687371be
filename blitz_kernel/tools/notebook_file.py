"""Editing the .ipynb on disk: notebook_edit's fallback when no front end with the extension
is connected (nbclient, papermill, a kernel whose notebook is closed), and the undo of edits
made that way.

The file is read, changed as JSON and written back whole, atomically (a temporary file in the
same folder, then a rename), so a reader never sees half a notebook. Cells are found again by
their nbformat 4.5 `id`, because indices shift when cells come and go.

The risk this cannot remove: a notebook open in an editor without the extension keeps its own
copy, and its next save overwrites the file. The tool result says so, so the model can tell
the user to reload from disk.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from .registry import ToolError

__all__ = [
    "cell_source",
    "find_cell",
    "load_notebook",
    "new_cell",
    "save_notebook",
]


def load_notebook(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ToolError(f"cannot read the notebook file {path}: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise ToolError(f"{path} is not a notebook (no list of cells)")
    return document


def save_notebook(path: Path, document: dict[str, Any]) -> None:
    """Write atomically, in Jupyter's own layout (indent 1, a final newline), keeping the
    file's permissions."""
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def cell_source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def new_cell(document: dict[str, Any], cell_type: str, source: str) -> dict[str, Any]:
    """A cell as nbformat writes it; with an id when the notebook's format has ids (4.5+)."""
    cell: dict[str, Any] = {"cell_type": cell_type, "metadata": {}, "source": source}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    if (document.get("nbformat", 4), document.get("nbformat_minor", 0)) >= (4, 5):
        cell["id"] = uuid.uuid4().hex[:8]
    return cell


def find_cell(document: dict[str, Any], cell_id: str | None, fallback: int | None = None) -> int | None:
    """The index of the cell with `cell_id`; without ids (older notebooks) the recorded index."""
    cells = document["cells"]
    if cell_id:
        return next((i for i, cell in enumerate(cells) if cell.get("id") == cell_id), None)
    return fallback if fallback is not None and 0 <= fallback < len(cells) else None


def retyped(document: dict[str, Any], cell: dict[str, Any], cell_type: str, source: str) -> dict[str, Any]:
    """`cell` with another type and source; same id, outputs only where a code cell keeps them."""
    if cell.get("cell_type") == cell_type:
        return {**cell, "source": source}
    changed = new_cell(document, cell_type, source)
    if "id" in cell:
        changed["id"] = cell["id"]
    changed["metadata"] = cell.get("metadata", {})
    return changed
