"""The running turn's recorder: the file tools, `notebook_edit` and `run_python` report each
change to it before and after they make it, and it keeps the old content aside and writes the
records (store/checkpoints.py) through the session as they happen."""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...core.text import shorten
from ...tools.confined import RecordPathError, open_record_folder, replaceable
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
        self._copies = 0

    @functools.cached_property
    def _folder(self) -> Path:
        """Where this session's copies go: worked out on the turn's first file change only."""
        return session_folder(self.root, self.session.name)

    @property
    def turn(self) -> int:
        """The turn's index in its session (notebook_run marks the cells it ran with it)."""
        return self.checkpoint.turn

    # -- files ------------------------------------------------------------------------------

    def before_file_change(self, path: Path, fd: int | None, folder: int | None = None) -> None:
        relative = self._relative(path)
        if relative in self.checkpoint.files:
            return  # the first change of the turn has its copy already
        copy_path = None
        if fd is not None:
            self._copies += 1
            kept = f"t{self.checkpoint.turn}-{self._copies}-{os.getpid()}.bak"
            into = self._checkpoint_folder(relative)
            try:
                if folder is None or not self._link_aside(fd, folder, path.name, into, kept):
                    _copy_descriptor(fd, into, kept)
            except OSError as error:
                raise ToolError(
                    f"cannot keep the old content of {relative} for undo ({error.strerror or error}); nothing was written"
                ) from None
            finally:
                os.close(into)
            copy_path = (self._folder / kept).relative_to(self.root).as_posix()
        self.checkpoint.files[relative] = FileChange(path=relative, existed=fd is not None, copy_path=copy_path)

    def _checkpoint_folder(self, relative: str) -> int:
        """The session's checkpoint folder, walked from the workspace without following any
        symlink: a `.blitz` or `.blitz/checkpoints` that leads elsewhere (shipped in a
        repository) would put copies of the user's files outside the workspace."""
        try:
            return open_record_folder(self.root, self._folder.relative_to(self.root).parts, create=True, mode=0o700)
        except (RecordPathError, OSError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise ToolError(
                f"cannot keep the old content of {relative} for undo: {reason} (the checkpoint folder "
                ".blitz/checkpoints must be a plain folder of the workspace); nothing was written"
            ) from None

    def _link_aside(self, fd: int, folder: int, name: str, into: int, kept: str) -> bool:
        """Link the file `fd` reads (entry `name` of `folder`) into the checkpoint as `kept`;
        False (nothing linked: copy instead) where the tool will not replace the file (it
        writes hard-linked or foreign files in place) or the link is refused (another file
        system). The entry linked is checked to be the file the tool opened and checked."""
        info = os.fstat(fd)
        if not replaceable(info):
            return False
        try:
            os.link(name, kept, src_dir_fd=folder, dst_dir_fd=into, follow_symlinks=False)
        except OSError:  # EXDEV (the checkpoints on another mount), EPERM, EMLINK...: copy instead
            return False
        linked = os.stat(kept, dir_fd=into, follow_symlinks=False)
        if (linked.st_dev, linked.st_ino) != (info.st_dev, info.st_ino):  # swapped since the checked open
            os.unlink(kept, dir_fd=into)
            return False
        return True

    def after_file_change(self, path: Path, content: bytes, written: os.stat_result | None = None) -> None:
        change = self.checkpoint.files.get(self._relative(path))
        if change is None:  # a tool that did not announce the change: nothing to restore to
            return
        change.after = fingerprint(content)
        if written is not None:
            change.device, change.inode = written.st_dev, written.st_ino
        self.session.record_change(self.checkpoint.turn, change)

    def _relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    # -- cells ------------------------------------------------------------------------------

    def cell_changed(self, change: Mapping[str, Any]) -> None:
        record = CellChange.model_validate(dict(change))
        if record.notebook is not None:  # undo opens only a workspace-relative .ipynb
            record.notebook = self._relative(Path(record.notebook))
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
        types = {
            n: (describe(old.get(n, MISSING)), describe(new.get(n, MISSING))) for n in (*created, *deleted, *rebound)
        }
        run = CodeRun(
            call_id=call_id,
            code=shorten(code, CODE_CHARS),
            created=created,
            rebound=rebound,
            deleted=deleted,
            types=types,
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


def _copy_descriptor(fd: int, into: int, kept: str) -> None:
    """Copy what `fd` reads into a new file `kept` of folder `into`, in the kernel
    (copy_file_range), from offset 0, leaving `fd`'s position alone; plain reads where the
    call is missing or refused."""
    size = os.fstat(fd).st_size
    out = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=into)
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
    except BaseException:
        os.close(out)
        os.unlink(kept, dir_fd=into)
        raise
    os.close(out)
