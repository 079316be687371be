"""Writing whole files safely, reading small trusted-nothing files, and opening paths a
stored record names: the pieces the file tools, undo and the instruction loaders share.

- **Whole-file writes never leave half a file.** The new content goes to a temporary file in
  the same folder (through the folder's descriptor), which is then renamed over the old name:
  a full disk, a quota or a crash mid-write leaves the old file as it was and the temporary
  one removed. Where a rename would change more than the inode — a file with other hard links
  (they must see the new content) or one owned by another user or group (a new file would be
  ours) — the file is written in place instead, after its new size was reserved with
  `posix_fallocate`, so running out of space shows before a byte of it changed.
- **`.blitz/` is the engine's own folder** (sessions, checkpoints, agents): the file tools do
  not write there, whatever the model or an approval says.
- **A stored path is data, not a promise.** A checkpoint record read back from the store may
  have been written by anyone (a database shipped in a repository): `record_parts` accepts
  only a plain relative path, and `open_record_folder` walks it from the workspace's own
  descriptor with `O_NOFOLLOW` at every step, so a symlinked folder on the way (swapped in
  since, or shipped) is refused instead of followed. Unlike the tools' own paths, no symlink is
  resolved at all: a record names the place the tool wrote, which had none.
- **Small files the engine reads for itself** (project memory, agent files) go through the
  tools' confinement and are size-capped: a symlink to `~/.aws/credentials`, a FIFO or a 2 GB
  file named `AGENTS.md` is refused with a reason instead of read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from .paths import open_in_workspace, open_subfolder, relative_name
from .registry import ToolError

__all__ = [
    "ENGINE_FOLDER",
    "RecordPathError",
    "entry_status",
    "open_entry",
    "open_record_folder",
    "read_all",
    "read_capped",
    "read_regular",
    "record_parts",
    "refuse_engine_folder",
    "replaceable",
    "store_content",
]

ENGINE_FOLDER = ".blitz"
WRITE_PIECE_BYTES = 256 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_NO_RESERVE = (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS)
"""`posix_fallocate` is not offered by this file system: write without reserving."""


# -- the engine's folder ---------------------------------------------------------------------


def refuse_engine_folder(root: Path, path: Path, given: str) -> None:
    """File tools do not write into `.blitz/` (a checked, resolved `path` inside `root`)."""
    parts = path.relative_to(root).parts
    if parts and parts[0].lower() == ENGINE_FOLDER:
        raise ToolError(
            f"{given} is inside {ENGINE_FOLDER}/, the engine's own folder (sessions, checkpoints, agent files); "
            "file tools do not write there: ask the user to change it"
        )


# -- whole-file writes -----------------------------------------------------------------------


def replaceable(info: os.stat_result) -> bool:
    """A file that a renamed new file can stand in for without changing anything but its inode."""
    return info.st_nlink == 1 and info.st_uid == os.geteuid() and info.st_gid == os.getegid()


def store_content(
    folder: int,
    name: str,
    fd: int | None,
    data: bytes,
    before: Callable[[], None] | None = None,
) -> os.stat_result:
    """Make entry `name` of `folder` hold exactly `data`; `fd` reads the file there now (None:
    there is none). Replaced through a temporary file, or written in place (module docstring).
    `before` runs once the change is sure to fit, just before the old content is touched (a
    checkpoint keeps it then, so a write that failed leaves no checkpoint behind). Returns the
    status of the file written (its device and inode identify it later). Raises ToolError,
    with the file unchanged, when the content does not fit."""
    info = os.fstat(fd) if fd is not None else None
    if info is not None and not replaceable(info):
        assert fd is not None
        _write_in_place(fd, name, data, before)
        return os.fstat(fd)
    return _replace(folder, name, data, None if info is None else stat.S_IMODE(info.st_mode), before)


def _replace(
    folder: int, name: str, data: bytes, mode: int | None, before: Callable[[], None] | None
) -> os.stat_result:
    temporary, fd = _temporary(folder, name)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            _write_all(fd, data)
            written = os.fstat(fd)
        finally:
            os.close(fd)
        if before is not None:
            before()
        os.rename(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError as error:
        _unlink_quietly(folder, temporary)
        raise ToolError(f"cannot write {name}: {error.strerror or error}; the file is unchanged") from None
    except BaseException:
        _unlink_quietly(folder, temporary)
        raise
    return written


def _temporary(folder: int, name: str) -> tuple[str, int]:
    """A new, empty file next to `name` (its own short name: `name` may be at NAME_MAX)."""
    for _attempt in range(8):
        temporary = f".blitz-{secrets.token_hex(6)}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            return temporary, os.open(temporary, flags, 0o666, dir_fd=folder)
        except FileExistsError:
            continue
        except OSError as error:
            raise ToolError(f"cannot write {name}: {error.strerror or error}; the file is unchanged") from None
    raise ToolError(f"cannot write {name}: no free temporary name in its folder; the file is unchanged")


def _write_in_place(fd: int, name: str, data: bytes, before: Callable[[], None] | None) -> None:
    size = os.fstat(fd).st_size
    if before is not None:
        before()
    if len(data) > size:
        try:
            os.posix_fallocate(fd, size, len(data) - size)
        except OSError as error:
            if error.errno not in _NO_RESERVE:
                os.ftruncate(fd, size)  # what the reservation added, if anything; the content is untouched
                raise ToolError(f"cannot write {name}: {error.strerror or error}; the file is unchanged") from None
    try:
        _write_all(fd, data)
        os.ftruncate(fd, len(data))
    except OSError as error:
        raise ToolError(f"cannot write {name}: {error.strerror or error}") from None


def _write_all(fd: int, data: bytes) -> None:
    """From offset 0, in pieces (a 1 MB write into a new file costs more than four of 256 KB)."""
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        offset += os.pwrite(fd, view[offset : offset + WRITE_PIECE_BYTES], offset)


def _unlink_quietly(folder: int, name: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=folder)


# -- paths named by stored records ----------------------------------------------------------


class RecordPathError(Exception):
    """A stored record names a path that is not a plain path inside the workspace."""


def record_parts(value: str, *, under: tuple[str, ...] = (), suffix: str | None = None) -> tuple[str, ...]:
    """The components of a record's workspace-relative path; RecordPathError when it is
    absolute, climbs with `..`, is not below `under` or does not end with `suffix`."""
    if not value or "\0" in value:
        raise RecordPathError("it names no usable path")
    path = PurePosixPath(value)
    if path.is_absolute():
        raise RecordPathError(f"{value!r} is an absolute path, outside the workspace")
    parts = path.parts
    if ".." in parts or not parts:
        raise RecordPathError(f"{value!r} leads outside the workspace through '..'")
    if parts[: len(under)] != under or len(parts) <= len(under):
        raise RecordPathError(f"{value!r} is not under {'/'.join(under)}/")
    if suffix is not None and not parts[-1].endswith(suffix):
        raise RecordPathError(f"{value!r} is not a {suffix} file")
    return parts


def open_record_folder(root: Path, parts: tuple[str, ...], *, create: bool = False, mode: int = 0o777) -> int:
    """The descriptor of folder `root/parts...`, walked without following any symlink.
    Missing folders are made (`mode`) when `create`. RecordPathError names a component that
    is a symlink or not a folder; FileNotFoundError when one is missing and not `create`."""
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for index, part in enumerate(parts):
            try:
                child = open_subfolder(folder, part, create=create, mode=mode)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    shown = "/".join(parts[: index + 1])
                    raise RecordPathError(f"{shown} is a symlink or not a folder now (not followed)") from None
                raise
            os.close(folder)
            folder = child
    except BaseException:
        os.close(folder)
        raise
    return folder


def entry_status(folder: int, name: str) -> os.stat_result | None:
    """The entry itself (a symlink is not followed); None when there is none."""
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def open_entry(folder: int, name: str, flags: int = os.O_RDONLY) -> int:
    """Open regular file `name` of `folder` without following a symlink or blocking on a FIFO;
    RecordPathError when it is anything but a regular file."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise RecordPathError(f"{name} is a symlink now (not followed)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RecordPathError(f"{name} is not a regular file")
    return fd


def read_all(fd: int, limit: int | None = None) -> bytes:
    """Everything `fd` reads from offset 0 (at most `limit` + 1 bytes: the caller sees it was more)."""
    pieces: list[bytes] = []
    offset = 0
    while limit is None or offset <= limit:
        piece = os.pread(fd, 1 << 20, offset)
        if not piece:
            break
        pieces.append(piece)
        offset += len(piece)
    return b"".join(pieces)


# -- small files the engine reads ------------------------------------------------------------


def read_capped(workspace: Path, given: str, limit: int) -> str:
    """The UTF-8 text of `given` inside the workspace, read with the file tools' confinement
    (no symlink out, regular files only, nothing that blocks). ToolError names why not:
    outside the workspace, not a regular file, over `limit` bytes, not UTF-8 text."""
    fd, path = open_in_workspace(workspace, given)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise ToolError(f"{given} is {size:,} bytes, over the {limit:,}-byte limit")
        data = read_all(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ToolError(f"{given} is over the {limit:,}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{relative_name(path, workspace.resolve())} is not UTF-8 text") from None


def read_regular(path: Path, limit: int) -> str:
    """The UTF-8 text of a file the user chose (symlinks followed): a regular file only,
    opened without blocking, at most `limit` bytes; ToolError says why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise ToolError(f"cannot open it: {error.strerror or error}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ToolError("it is not a regular file")
        data = read_all(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ToolError(f"it is over the {limit:,}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError("it is not UTF-8 text") from None
