"""Undo's hands on the disk: every path a checkpoint record names is confined before it is
touched (docs/cloned-repositories.md).

A record read back from the store is data someone may have written (a `.blitz/blitz.db`
shipped in a repository), and the folders it names may have changed since the turn (`sub/`
replaced by a symlink to shared storage). So a record's `path` must be a plain relative path
(no `..`, not absolute, not in `.blitz/`), its `copy_path` a file under `.blitz/checkpoints/`,
its `notebook` a workspace-relative `.ipynb`; each is opened from the workspace's own
descriptor without following any symlink on the way. Removing "a file the turn created" also
checks that the file there is the one the tool wrote (device and inode recorded then): a file
of the same name put there since is never removed, not even with --force. Restores replace
the file whole through a temporary file, so a full disk leaves it as it was.

Each step answers with an `Outcome`: done (with what the report says), a conflict that a
later undo may do (--force, or a missing copy put back), or skipped for good (named).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...tools.confined import (
    ENGINE_FOLDER,
    RecordPathError,
    entry_status,
    open_entry,
    open_record_folder,
    read_all,
    record_parts,
    store_content,
)
from ...tools.registry import ToolError
from ..store.checkpoints import CHECKPOINT_DIR, FileChange

FORCE_HINT = "(--force restores it)"
MAX_NOTEBOOK_BYTES = 512 * 1024 * 1024
"""A notebook larger than this is not read back into memory for an undo."""


@dataclass(frozen=True)
class Outcome:
    kind: Literal["done", "retry", "skipped"]
    text: str
    """done: "restored a.txt"; otherwise the reason."""


def _done(text: str) -> Outcome:
    return Outcome("done", text)


def _retry(text: str) -> Outcome:
    return Outcome("retry", text)


def _skipped(text: str) -> Outcome:
    return Outcome("skipped", text)


def undo_file(root: Path, change: FileChange, force: bool) -> Outcome:
    """Put one file back as it was before the turn, or say why not."""
    try:
        parts = record_parts(change.path)
        if parts[0].lower() == ENGINE_FOLDER:
            raise RecordPathError(f"{change.path!r} is inside {ENGINE_FOLDER}/, which the file tools never write")
        copy = None if not change.existed else record_parts(change.copy_path or "", under=CHECKPOINT_DIR.parts)
    except RecordPathError as error:
        return _skipped(f"the checkpoint record is not acted on: {error}")
    try:
        if not change.existed:
            return _remove_created(root, parts, change, force)
        assert copy is not None
        return _restore(root, parts, copy, change, force)
    except RecordPathError as error:
        return _skipped(f"left alone: {error}")
    except (OSError, ToolError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        return _skipped(f"could not be restored: {reason}")


def _remove_created(root: Path, parts: tuple[str, ...], change: FileChange, force: bool) -> Outcome:
    try:
        folder = open_record_folder(root, parts[:-1])
    except FileNotFoundError:
        return _gone(change, force)
    try:
        info = entry_status(folder, parts[-1])
        if info is None:
            return _gone(change, force)
        problem = _not_a_file(info)
        if problem:
            return _skipped(f"left alone: it is {problem} now")
        if change.inode is not None and (info.st_dev, info.st_ino) != (change.device, change.inode):
            return _skipped("left alone: it is no longer the file the turn created (another file was put there since)")
        if _fingerprint(folder, parts[-1]) != change.after and not force:
            return _retry(f"it was changed since the agent wrote it {FORCE_HINT}")
        os.unlink(parts[-1], dir_fd=folder)
    finally:
        os.close(folder)
    return _done(f"removed {change.path} (the turn created it)")


def _gone(change: FileChange, force: bool) -> Outcome:
    if not force:
        return _retry(f"it was deleted since the agent wrote it {FORCE_HINT}")
    return _done(f"{change.path} (the turn created it) is already gone")


def _restore(root: Path, parts: tuple[str, ...], copy: tuple[str, ...], change: FileChange, force: bool) -> Outcome:
    try:
        content = _read_copy(root, copy)
    except (FileNotFoundError, RecordPathError):
        return _retry(
            f"its saved copy {change.copy_path} is missing or not a plain file; the record is kept "
            "(put the copy back, then undo again)"
        )
    folder = open_record_folder(root, parts[:-1], create=True)
    try:
        info = entry_status(folder, parts[-1])
        if info is not None:
            problem = _not_a_file(info)
            if problem:
                return _skipped(f"left alone: it is {problem} now")
        now = None if info is None else _fingerprint(folder, parts[-1])
        if now != change.after and not force:
            why = (
                "it was deleted since the agent wrote it" if now is None else "it was changed since the agent wrote it"
            )
            return _retry(f"{why} {FORCE_HINT}")
        fd = None if info is None else open_entry(folder, parts[-1], os.O_RDWR)
        try:
            store_content(folder, parts[-1], fd, content)
        finally:
            if fd is not None:
                os.close(fd)
    finally:
        os.close(folder)
    return _done(f"restored {change.path}")


def _read_copy(root: Path, copy: tuple[str, ...]) -> bytes:
    folder = open_record_folder(root, copy[:-1])
    try:
        fd = open_entry(folder, copy[-1])
    finally:
        os.close(folder)
    try:
        return read_all(fd)
    finally:
        os.close(fd)


def _not_a_file(info: os.stat_result) -> str | None:
    if stat.S_ISREG(info.st_mode):
        return None
    if stat.S_ISDIR(info.st_mode):
        return "a directory"
    if stat.S_ISLNK(info.st_mode):
        return "a symlink (not followed)"
    return "not a regular file"


def _fingerprint(folder: int, name: str) -> str:
    """The same fingerprint as checkpoints.fingerprint, streamed (no whole copy in memory)."""
    fd = open_entry(folder, name)
    try:
        crc, size, offset = 0, 0, 0
        while piece := os.pread(fd, 1 << 20, offset):
            crc = zlib.crc32(piece, crc)
            size += len(piece)
            offset += len(piece)
    finally:
        os.close(fd)
    return f"{size}:{crc:08x}"


# -- notebooks edited on disk ----------------------------------------------------------------


def notebook_parts(root: Path, notebook: str | None) -> tuple[str, ...]:
    """A record's notebook as workspace-relative parts. Older records hold an absolute path:
    accepted only when it names a place inside the workspace (then opened like any other)."""
    value = notebook or ""
    if os.path.isabs(value):
        relative = os.path.relpath(os.path.normpath(value), root)
        if relative == os.curdir or relative.startswith(os.pardir):
            raise RecordPathError(f"{value!r} is outside the workspace")
        value = relative
    return record_parts(value, suffix=".ipynb")


def load_notebook_in(root: Path, parts: tuple[str, ...]) -> dict[str, Any]:
    folder = open_record_folder(root, parts[:-1])
    try:
        fd = open_entry(folder, parts[-1])
    finally:
        os.close(folder)
    try:
        data = read_all(fd, MAX_NOTEBOOK_BYTES)
    finally:
        os.close(fd)
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise ToolError(f"{'/'.join(parts)} is too large to edit for an undo")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ToolError(f"cannot read the notebook file {'/'.join(parts)}: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise ToolError(f"{'/'.join(parts)} is not a notebook (no list of cells)")
    return document


def save_notebook_in(root: Path, parts: tuple[str, ...], document: dict[str, Any]) -> None:
    """Jupyter's own layout (indent 1, a final newline), replaced whole, keeping its mode."""
    text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    folder = open_record_folder(root, parts[:-1])
    try:
        fd = None
        with contextlib.suppress(FileNotFoundError):
            fd = open_entry(folder, parts[-1], os.O_RDWR)
        try:
            store_content(folder, parts[-1], fd, text.encode("utf-8"))
        finally:
            if fd is not None:
                os.close(fd)
    finally:
        os.close(folder)
