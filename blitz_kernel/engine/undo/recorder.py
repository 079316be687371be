"""The running turn's recorder: the file tools, `notebook_edit` and `run_python` report each
change to it before and after they make it, and it keeps the old content aside and writes the
records (store/checkpoints.py) through the session as they happen."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.text import shorten
from ...tools.paths import open_in_workspace
from ...tools.registry import ToolError
from ..store.checkpoints import MISSING, CellChange, CodeRun, FileChange, describe, fingerprint, session_folder
from ..store.session import Session

MAX_NAMES_SHOWN = 8
CODE_CHARS = 120
COPY_CHUNK = 1 << 24

def _rebinding(old: Any, new: Any) -> str:
    """'DataFrame 7×3 → 7×4' (the type said once when it stayed), 'int → str'."""
    before, after = describe(old), describe(new)
    kind = type(new).__name__ + " "
    if type(old) is type(new) and before.startswith(kind) and after.startswith(kind):
        return f"{before} → {after[len(kind) :]}"
    return f"{before} → {after}"


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMES_SHOWN])
    return shown + (f" and {len(names) - MAX_NAMES_SHOWN} more" if len(names) > MAX_NAMES_SHOWN else "")


def _user_name(name: str) -> bool:
    """IPython's own bookkeeping (`_`, `_i3`, `_oh`, `__builtins__`) starts with `_`; such names
    are left out of the diff (a user's own `_tmp` too: the price of a cheap rule)."""
    return not name.startswith("_")


class TurnRecorder:
    """The running turn's recorder (tools/registry.py `ChangeRecorder`): tools report to it,
    it writes the records through the session."""

    def __init__(self, session: Session, turn: int, root: Path, keep_turns: int) -> None:
        self.session = session
        self.root = root
        self.checkpoint = session.checkpoints.start(turn, keep_turns)
        self._folder = session_folder(root, session.name)
        self._copies = 0

    # -- files ------------------------------------------------------------------------------

    def before_file_change(self, path: Path, fd: int | None, folder: int | None = None) -> int | None:
        relative = self._relative(path)
        if relative in self.checkpoint.files:
            return None  # the first change of the turn has its copy already
        copy_path = None
        fresh = None
        if fd is not None:
            if not self._copies:
                self._folder.mkdir(parents=True, exist_ok=True)
            self._copies += 1
            target = self._folder / f"t{self.checkpoint.turn}-{self._copies}-{os.getpid()}.bak"
            if folder is not None:
                fresh = self._move_aside(fd, folder, path.name, target)
            if fresh is None:
                _copy_descriptor(fd, target)
            copy_path = target.relative_to(self.root).as_posix()
        self.checkpoint.files[relative] = FileChange(path=relative, existed=fd is not None, copy_path=copy_path)
        return fresh

    def _move_aside(self, fd: int, folder: int, name: str, target: Path) -> int | None:
        """Move the file `fd` reads (entry `name` of `folder`) to `target`; a fresh file at its
        place, or None (nothing moved: copy instead) where a move would change more than the
        inode (module docstring)."""
        info = os.fstat(fd)
        if info.st_nlink != 1 or info.st_uid != os.geteuid() or info.st_gid != os.getegid():
            return None
        try:
            into, _ = open_in_workspace(self.root, self._relative(target.parent), directory=True)
        except ToolError:  # the checkpoint folder is not a plain folder inside the workspace
            return None
        try:
            return _move_and_create(fd, info, folder, name, into, target.name)
        finally:
            os.close(into)

    def after_file_change(self, path: Path, content: bytes) -> None:
        change = self.checkpoint.files.get(self._relative(path))
        if change is None:  # a tool that did not announce the change: nothing to restore to
            return
        change.after = fingerprint(content)
        self.session.record_change(self.checkpoint.turn, change)

    def _relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    # -- cells ------------------------------------------------------------------------------

    def cell_changed(self, change: Mapping[str, Any]) -> None:
        record = CellChange.model_validate(dict(change))
        self.checkpoint.cells.append(record)
        self.session.record_change(self.checkpoint.turn, record)

    # -- variables ----------------------------------------------------------------------------

    def namespace_before(self, namespace: dict[str, Any]) -> object:
        return namespace, dict(namespace)  # the names and their objects; no object is copied

    def namespace_after(self, before: object, call_id: str | None, code: str) -> str:
        assert isinstance(before, tuple)
        namespace: dict[str, Any] = before[0]
        old: dict[str, Any] = before[1]
        new = namespace
        created = [n for n in new if n not in old and _user_name(n)]
        deleted = [n for n in old if n not in new and _user_name(n)]
        rebound = [n for n in new if n in old and old[n] is not new[n] and _user_name(n)]
        checkpoint = self.checkpoint
        checkpoint.namespace = namespace
        for name in (*created, *deleted, *rebound):
            checkpoint.before_values.setdefault(name, old.get(name, MISSING))
            checkpoint.after_values[name] = new.get(name, MISSING)
        run = CodeRun(
            call_id=call_id, code=shorten(code, CODE_CHARS), created=created, rebound=rebound, deleted=deleted
        )
        checkpoint.runs.append(run)
        self.session.record_change(checkpoint.turn, run)
        parts = []
        if created:
            parts.append(f"created {_names(created)}")
        if rebound:
            shown = [f"{n} ({_rebinding(old[n], new[n])})" for n in rebound]
            parts.append(f"rebound {_names(shown)}")
        if deleted:
            parts.append(f"deleted {_names(deleted)}")
        return "; ".join(parts)


def _move_and_create(fd: int, info: os.stat_result, folder: int, name: str, into: int, kept: str) -> int | None:
    """Rename `folder`/`name` (the file `fd` reads, `info`) to `into`/`kept`, then create a
    fresh file at `name` with the same permission bits. None when the rename is refused
    (another file system, permissions): nothing moved. Nothing follows a symlink: the entry
    moved is checked to be the file the tool opened and checked, or it is put back."""
    try:
        os.rename(name, kept, src_dir_fd=folder, dst_dir_fd=into)
    except OSError:  # EXDEV (the checkpoints on another mount), EACCES, EBUSY...: copy instead
        return None
    moved = os.stat(kept, dir_fd=into, follow_symlinks=False)
    if (moved.st_dev, moved.st_ino) != (info.st_dev, info.st_ino):  # swapped since the checked open
        _put_back(into, kept, folder, name)
        raise ToolError(f"{name} was replaced while it was being written; nothing was written, try again")
    try:
        fresh = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=folder)
    except OSError as error:  # something appeared at the name since the rename
        _put_back(into, kept, folder, name)
        raise ToolError(f"cannot write {name}: {error.strerror or error}") from None
    try:
        os.fchmod(fresh, info.st_mode & 0o777)
    except OSError as error:
        os.close(fresh)
        os.unlink(name, dir_fd=folder)
        _put_back(into, kept, folder, name)
        raise ToolError(f"cannot write {name}: {error.strerror or error}") from None
    return fresh


def _put_back(into: int, kept: str, folder: int, name: str) -> None:
    """Undo a move without replacing whatever is at `name` now (link, then unlink)."""
    try:
        os.link(kept, name, src_dir_fd=into, dst_dir_fd=folder, follow_symlinks=False)
    except OSError:
        return  # something is at `name` now: the moved entry stays in the checkpoint folder
    os.unlink(kept, dir_fd=into)


def _copy_descriptor(fd: int, target: Path) -> None:
    """Copy what `fd` reads into `target` in the kernel (copy_file_range), from offset 0,
    leaving `fd`'s position alone; plain reads where the call is missing or refused."""
    size = os.fstat(fd).st_size
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        offset = 0
        try:
            while offset < size:
                copied = os.copy_file_range(fd, out, min(COPY_CHUNK, size - offset), offset, offset)
                if copied == 0:
                    break
                offset += copied
        except (AttributeError, OSError):
            pass  # another file system or OS: finish with plain reads
        while True:
            piece = os.pread(fd, COPY_CHUNK, offset)
            if not piece:
                break
            os.pwrite(out, piece, offset)
            offset += len(piece)
    finally:
        os.close(out)
