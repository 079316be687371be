"""Workspace confinement: the one place that decides what "inside the workspace" means.

Every file tool turns the model's path into a real path here: absolute paths elsewhere, `..`
escapes and symlinks that lead out are refused with a message the model can act on.

Checking a path and then opening it by name leaves a gap: between the two, another process
can swap a folder on the path for a symlink to somewhere else, and the open follows it. So the
check (`resolve_in_workspace`, which resolves symlinks) gives a real path with no symlinks in
it, and `open_in_workspace` then opens that path one component at a time, each relative to
the directory descriptor opened before it, with `O_NOFOLLOW`: a symlink that appears after the
check makes the open fail instead of leading out. Only regular files are opened (a FIFO
blocks its reader forever, a device may have side effects); `O_NONBLOCK` makes even that
first open unable to hang.

Walks (list_files, glob, grep) go through directory descriptors the same way, never follow a
symlinked folder, skip `SKIPPED_DIRS`, and skip what they cannot read (symlink loops, dangling
links, pipes, sockets, devices) with a note, so one odd entry never fails a whole search.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..core.text import shorten
from .io import Budget
from .registry import ToolError

__all__ = [
    "SKIPPED_DIRS",
    "Folder",
    "WalkNotes",
    "is_within",
    "missing_file_error",
    "open_for_replace",
    "open_in_workspace",
    "open_with_folder",
    "real_path",
    "relative_name",
    "resolve_in_workspace",
    "special_kind",
    "walk",
]

SKIPPED_DIRS = frozenset({".git", ".venv", "__pycache__", "node_modules", ".blitz", ".ipynb_checkpoints"})
"""Directory names that listing, glob and grep do not descend into unless asked by name."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_OPEN_RETRIES = 3


# -- checking a path -------------------------------------------------------------------------

_PROC_FDS = Path("/proc/self/fd")
_O_PATH = getattr(os, "O_PATH", 0)
_FAST_REAL_PATHS = bool(_O_PATH) and _PROC_FDS.is_dir()
"""Linux: the kernel names the real path of an open descriptor (see `real_path`)."""


def real_path(path: Path) -> Path:
    """`path.resolve()`, in three system calls where the OS can name a descriptor's path.

    `resolve` walks the path a component at a time (an lstat and Python work for each), and
    every file tool checks a path more than once; on Linux, opening the path with `O_PATH`
    (which reads nothing, so even a FIFO cannot block) lets the kernel follow every symlink,
    and /proc names the real path of that descriptor. A path that cannot be opened that way
    (missing, a loop, no permission) goes the portable way, which gives its own answer.
    """
    named = _kernel_real_path(str(path))
    return Path(named) if named is not None else path.resolve()


def _kernel_real_path(path: str) -> str | None:
    """The real path of `path` as the kernel names it (see `real_path`), as text: the checks
    below compare text, and a `Path` costs more to build than the system calls do. None when
    the kernel cannot name it (not Linux, missing, a loop, no permission)."""
    if not _FAST_REAL_PATHS:
        return None
    try:
        fd = os.open(path, _O_PATH | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        named = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    finally:
        os.close(fd)
    if named.startswith("/") and not named.endswith(" (deleted)"):
        return named
    return None


NAME_MAX = 255
"""Bytes in one file or folder name (Linux, macOS)."""
PATH_MAX = 4096


def resolve_in_workspace(workspace: Path, path: str, *, real_root: bool = False) -> Path:
    """Resolve `path` (relative to the workspace, or absolute) to a real path inside it.

    Symlinks are resolved before the check, so a link inside the workspace that points outside
    is refused, while links between places inside the workspace work. The message says which
    of the three ways out was taken, so the model can fix the path rather than retry it.
    `real_root`: `workspace` is already a real path (`real_path`), so it is not resolved again.
    """
    return _resolve_within(workspace if real_root else real_path(workspace), path)


def _resolve_within(root: Path, path: str) -> Path:
    """`resolve_in_workspace` for a workspace already resolved (`root`)."""
    if "\0" in path:
        raise ToolError(f"path {path!r} contains a NUL character")
    too_long = [part for part in path.split(os.sep) if len(os.fsencode(part)) > NAME_MAX]
    if too_long or len(os.fsencode(path)) > PATH_MAX:
        # the OS would refuse it anyway, but with an error our stat calls do not all expect
        raise ToolError(f"path {shorten(path, 60)!r} is too long for this file system")
    given = os.path.expanduser(path)
    absolute = os.path.isabs(given)
    candidate = given if absolute else os.path.join(root, given)
    named = _kernel_real_path(candidate)  # the usual case, on text (this runs for every file call)
    if named is not None and _is_within_text(named, str(root)):
        return Path(named)
    try:
        resolved = Path(named) if named is not None else Path(candidate).resolve()
    except (RuntimeError, OSError) as error:  # 3.11 raises RuntimeError for a symlink loop
        raise ToolError(f"{path} cannot be resolved ({_reason(error)}); skip it") from None
    if is_within(resolved, root):
        return resolved
    if not is_within(Path(os.path.normpath(candidate)), root):
        if absolute:
            raise ToolError(f"{path} is outside the workspace ({root}); use a path relative to the workspace")
        raise ToolError(f"{path} leads outside the workspace ({root}) through '..'")
    raise ToolError(f"{path} is a symlink (or inside one) that leads outside the workspace, to {resolved}")


def _reason(error: BaseException) -> str:
    if isinstance(error, RuntimeError) or getattr(error, "errno", None) == errno.ELOOP:
        return "it is a symlink loop"
    return str(getattr(error, "strerror", None) or error)


def is_within(path: Path, root: Path) -> bool:
    """`path` is `root` or below it; both absolute and normalised (real paths or normpath's),
    so comparing their text is exact (and far cheaper than walking `path.parents`)."""
    return _is_within_text(str(path), str(root))


def _is_within_text(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer if outer.endswith(os.sep) else outer + os.sep)


def _parts_below(path: Path, root: Path) -> list[str]:
    """The names leading from `root` down to `path`, both real paths and `path` within
    `root` (checked): text slicing, exact for such paths, and cheaper than `relative_to`."""
    inner, outer = str(path), str(root)
    if not _is_within_text(inner, outer):
        raise ValueError(f"{inner} is not within {outer}")
    return [part for part in inner[len(outer) :].split(os.sep) if part]


def relative_name(path: Path, root: Path) -> str:
    """The workspace-relative, slash-separated name the model should use for `path`."""
    try:
        parts = _parts_below(path, root)
    except ValueError:
        return str(path)
    return "/".join(parts) or "."


def missing_file_error(path: Path, given: str) -> ToolError:
    """Say the file is missing, with the closest names in its folder (typos are common)."""
    parent = path.parent
    close: list[str] = []
    with contextlib.suppress(OSError):
        if parent.is_dir():
            close = difflib.get_close_matches(path.name, [p.name for p in parent.iterdir()], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return ToolError(f"no such file: {given}{hint}")


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def special_kind(mode: int) -> str | None:
    """What a non-regular, non-directory, non-symlink file is, for messages; None otherwise."""
    for test, kind in _SPECIAL_KINDS:
        if test(mode):
            return kind
    return None


# -- opening what was checked ----------------------------------------------------------------


class _PathChangedError(Exception):
    """A component of a checked path is no longer what the check saw (a symlink now)."""


class _NotRegularError(Exception):
    """The path is a pipe, socket or device: opening or reading it may block or act."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def open_in_workspace(
    workspace: Path,
    given: str,
    flags: int = os.O_RDONLY,
    *,
    create: bool = False,
    directory: bool = False,
    real_root: bool = False,
) -> tuple[int, Path]:
    """Check `given` and open exactly the path that was checked: a descriptor and the path.

    `flags` are the access flags (`O_RDONLY`, `O_WRONLY`, `O_RDWR`); `create` makes missing
    parent folders and the file itself; `directory` opens a folder instead of a file. Refuses
    anything but a regular file (or folder). A path that changes between the check and the
    open is checked again, a few times, then refused.
    """
    fd, _folder, path = _checked_open(
        workspace, given, flags, create=create, directory=directory, keep_folder=False, real_root=real_root
    )
    return fd, path


def open_with_folder(
    workspace: Path, given: str, flags: int = os.O_RDONLY, *, create: bool = False
) -> tuple[int, int, Path]:
    """`open_in_workspace` for a file, also giving a descriptor of the folder the file was
    opened in (its entry there is `path.name`): for renaming that entry (checkpoints move a
    file aside rather than copy it). The caller closes both descriptors."""
    fd, folder, path = _checked_open(workspace, given, flags, create=create, directory=False, keep_folder=True)
    assert folder is not None
    return fd, folder, path


def open_for_replace(workspace: Path, given: str) -> tuple[int | None, int, Path]:
    """For a tool that replaces a file whole (write it to a temporary file, then rename it
    over the old one): the file's descriptor (read-write) when there is a file, None when
    there is none yet; the descriptor of its folder, missing folders made; the checked path.
    The file itself is never created here. The caller closes the descriptors."""
    fd, folder, path = _checked_open(
        workspace, given, os.O_RDWR, create=True, directory=False, keep_folder=True, file_optional=True
    )
    assert folder is not None
    return (fd if fd >= 0 else None), folder, path


def _checked_open(
    workspace: Path,
    given: str,
    flags: int,
    *,
    create: bool,
    directory: bool,
    keep_folder: bool,
    file_optional: bool = False,
    real_root: bool = False,
) -> tuple[int, int | None, Path]:
    root = workspace if real_root else real_path(workspace)
    for _attempt in range(_OPEN_RETRIES):
        path = _resolve_within(root, given)
        try:
            fd, folder = _open_beneath(
                root,
                path,
                flags,
                create=create,
                directory=directory,
                keep_folder=keep_folder,
                file_optional=file_optional,
            )
            return fd, folder, path
        except _PathChangedError:
            continue
        except FileNotFoundError:
            raise missing_file_error(path, given) from None
        except IsADirectoryError:
            raise ToolError(f"{given} is a directory; give a file path") from None
        except NotADirectoryError:
            raise ToolError(f"{given} is a file, not a directory") from None
        except _NotRegularError as error:
            raise ToolError(
                f"{given} is {error.kind}, not a regular file; file tools read and write only regular files"
            ) from None
        except OSError as error:  # permissions, a pipe with no reader (ENXIO), a full disk
            raise ToolError(f"cannot open {given}: {error.strerror or error}") from None
    raise ToolError(f"{given} kept changing while it was being opened (a symlink was swapped in)")


def _open_beneath(
    root: Path,
    path: Path,
    flags: int,
    *,
    create: bool,
    directory: bool,
    keep_folder: bool = False,
    file_optional: bool = False,
) -> tuple[int, int | None]:
    """The descriptor of `path` (-1: `file_optional` and there is none), and (`keep_folder`)
    of the folder it was opened in."""
    parts = _parts_below(path, root)
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    kept = False
    try:
        for part in parts[:-1] if parts else ():
            child = _enter(folder, part, create=create)
            os.close(folder)
            folder = child
        if not parts:
            if not directory:
                raise IsADirectoryError(str(path))
            return os.dup(folder), None
        if file_optional:
            fd = _open_last(folder, parts[-1], flags, create=False, directory=False, missing_ok=True)
        else:
            fd = _open_last(folder, parts[-1], flags, create=create, directory=directory)
        kept = keep_folder
        return fd, folder if keep_folder else None
    finally:
        if not kept:
            os.close(folder)


def open_subfolder(folder: int, name: str, *, create: bool, mode: int = 0o777) -> int:
    """Open sub-folder `name` of the folder descriptor `folder` without following a symlink,
    making it (with `mode`) when `create` and it is not there; OSError otherwise."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=folder)
    except FileNotFoundError:
        if not create:
            raise
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=folder)
        return os.open(name, _DIR_FLAGS, dir_fd=folder)


def _enter(folder: int, name: str, *, create: bool) -> int:
    """Open sub-folder `name` of `folder`; a symlink or a file in the way is a changed path."""
    try:
        return open_subfolder(folder, name, create=create)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _PathChangedError(name) from None
        raise


def _open_last(folder: int, name: str, flags: int, *, create: bool, directory: bool, missing_ok: bool = False) -> int:
    try:
        before = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        if missing_ok:
            return -1
        if not create:
            raise
        before = None
    if before is not None:
        _require_kind(before.st_mode, name, directory=directory)
    extra = os.O_CREAT if create else 0
    if directory:
        flags = os.O_RDONLY | os.O_DIRECTORY
    try:
        fd = os.open(name, flags | extra | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666, dir_fd=folder)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _PathChangedError(name) from None
        raise
    try:
        _require_kind(os.fstat(fd).st_mode, name, directory=directory)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _require_kind(mode: int, name: str, *, directory: bool) -> None:
    if stat.S_ISLNK(mode):
        raise _PathChangedError(name)
    if stat.S_ISDIR(mode):
        if not directory:
            raise IsADirectoryError(name)
        return
    if directory:
        raise NotADirectoryError(name)
    if not stat.S_ISREG(mode):
        raise _NotRegularError(special_kind(mode) or "an unknown kind of file")


# -- walking ---------------------------------------------------------------------------------


@dataclass
class WalkNotes:
    """What a walk skipped and why, for one line at the end of the answer."""

    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, reason: str, name: str) -> None:
        self.skipped[reason] += 1
        self.examples.setdefault(reason, name)

    def render(self) -> str:
        """`[skipped: 1 symlink loop (a/loop), 2 named pipes (FIFO) (p1)]`, or ""."""
        if not self.skipped:
            return ""
        parts = [f"{count} {reason} ({self.examples[reason]})" for reason, count in self.skipped.items()]
        return f"[skipped: {'; '.join(parts)}]"


@dataclass
class Folder:
    """One folder of a walk. `dirs` may be pruned in place; `fd` is open only until the walk
    moves on, for opening `files` relative to it (`open_entry`)."""

    path: Path
    fd: int
    dirs: list[str]
    files: list[str]
    links: set[str]
    """Names in `dirs` and `files` that are symlinks (to somewhere inside the workspace)."""


def walk(root: Path, start: Path, notes: WalkNotes, budget: Budget | None = None) -> Iterator[Folder]:
    """Walk below `start` (a checked folder inside `root`) through directory descriptors.

    Symlinked folders are listed but never entered; symlinks that loop, dangle or lead out of
    the workspace, and pipes, sockets and devices are left out and noted. A skipped folder
    name is still walked when `start` itself is inside it: asking for `.venv/lib/**` by name
    means the model wants it. Stops early (quietly) when `budget` is exhausted.
    """
    fd, _path = open_in_workspace(root, relative_name(start, root), directory=True)
    yield from _walk_folder(root, start, fd, notes, budget)


def _walk_folder(root: Path, path: Path, fd: int, notes: WalkNotes, budget: Budget | None) -> Iterator[Folder]:
    try:
        folder = _list_folder(root, path, fd, notes)
        yield folder
        for name in folder.dirs:
            if budget is not None and budget.exhausted():
                return
            if name in folder.links or name in SKIPPED_DIRS:
                continue
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                notes.add("folders that changed or could not be opened", relative_name(path / name, root))
                continue
            yield from _walk_folder(root, path / name, child, notes, budget)
    finally:
        os.close(fd)


def _list_folder(root: Path, path: Path, fd: int, notes: WalkNotes) -> Folder:
    dirs: list[str] = []
    files: list[str] = []
    links: set[str] = set()
    try:
        with os.scandir(fd) as entries:
            names = sorted(entry.name for entry in entries)
    except OSError:
        notes.add("unreadable folders", relative_name(path, root))
        names = []
    for name in names:
        kind = _entry_kind(root, path, fd, name, notes)
        if kind == "dir":
            dirs.append(name)
        elif kind == "file":
            files.append(name)
        elif kind in ("dir-link", "file-link"):
            links.add(name)
            (dirs if kind == "dir-link" else files).append(name)
    dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
    return Folder(path=path, fd=fd, dirs=dirs, files=files, links=links)


def _entry_kind(root: Path, path: Path, fd: int, name: str, notes: WalkNotes) -> str | None:
    shown = relative_name(path / name, root)
    try:
        mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
    except OSError:
        notes.add("entries that vanished or could not be read", shown)
        return None
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return _link_kind(root, path / name, shown, notes)
    notes.add(_plural(special_kind(mode) or "special files"), shown)
    return None


def _link_kind(root: Path, link: Path, shown: str, notes: WalkNotes) -> str | None:
    try:
        target = link.resolve(strict=True)
    except RuntimeError:
        notes.add("symlink loops", shown)
        return None
    except OSError as error:
        notes.add("symlink loops" if error.errno == errno.ELOOP else "dangling symlinks", shown)
        return None
    if not is_within(target, root):
        notes.add("symlinks leading outside the workspace", shown)
        return None
    if target.is_dir():
        return "dir-link"
    if target.is_file():
        return "file-link"
    notes.add("symlinks to special files", shown)
    return None


def _plural(kind: str) -> str:
    """ "a named pipe (FIFO)" → "named pipes (FIFO)"."""
    kind = kind.removeprefix("a ")
    head, _, tail = kind.partition(" (")
    return f"{head}s" + (f" ({tail}" if tail else "")
