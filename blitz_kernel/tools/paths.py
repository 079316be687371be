"""Workspace confinement: the one place that decides what "inside the workspace" means.

Every file tool turns the model's path into a real path here: absolute paths elsewhere, `..`
escapes and symlinks that lead out are refused with a message the model can act on. Walks
(list_files, glob, grep) share the folder names they skip, so the model sees one rule.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from pathlib import Path

from .registry import ToolError

__all__ = [
    "SKIPPED_DIRS",
    "is_within",
    "missing_file_error",
    "relative_name",
    "resolve_in_workspace",
    "walk",
]

SKIPPED_DIRS = frozenset({".git", ".venv", "__pycache__", "node_modules", ".blitz"})
"""Directory names that listing, glob and grep do not descend into unless asked by name."""


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """Resolve `path` (relative to the workspace, or absolute) to a real path inside it.

    Symlinks are resolved before the check, so a link inside the workspace that points outside
    is refused, while links between places inside the workspace work. The message says which
    of the three ways out was taken, so the model can fix the path rather than retry it.
    """
    root = workspace.resolve()
    if "\0" in path:
        raise ToolError(f"path {path!r} contains a NUL character")
    given = Path(path).expanduser()
    candidate = given if given.is_absolute() else root / given
    resolved = candidate.resolve()
    if is_within(resolved, root):
        return resolved
    if not is_within(Path(os.path.normpath(candidate)), root):
        if given.is_absolute():
            raise ToolError(
                f"{path} is outside the workspace ({root}); use a path relative to the workspace"
            )
        raise ToolError(f"{path} leads outside the workspace ({root}) through '..'")
    raise ToolError(
        f"{path} is a symlink (or inside one) that leads outside the workspace, to {resolved}"
    )


def is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def relative_name(path: Path, root: Path) -> str:
    """The workspace-relative, slash-separated name the model should use for `path`."""
    try:
        name = path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
    return name or "."


def missing_file_error(path: Path, given: str) -> ToolError:
    """Say the file is missing, with the closest names in its folder (typos are common)."""
    parent = path.parent
    close: list[str] = []
    if parent.is_dir():
        close = difflib.get_close_matches(path.name, [p.name for p in parent.iterdir()], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return ToolError(f"no such file: {given}{hint}")


def walk(start: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    """os.walk below `start`, not following symlinked folders and pruning SKIPPED_DIRS.

    A skipped folder is still walked when `start` itself is inside it: asking for
    `.venv/lib/**` by name means the model wants it.
    """
    for folder, dirs, files in os.walk(start, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        yield Path(folder), dirs, sorted(files)
