"""One kernel per session, with a lock file per session under `.blitz/locks/` (docs/store.md):
the way where there are no open-file-description locks (Linux takes a byte of one file
instead, byte_locks.py), and what kernels of earlier versions did. Also the holder record and
session names, which both ways share.

`fcntl.flock` on `<workspace>/.blitz/locks/<session>.lock`, held for as long as the kernel
holds the session. The kernel that dies (kill -9, out of memory) loses its locks with its file
descriptors, so a crash never leaves a session locked. The file also says who holds it (pid,
notebook, since when), so a second kernel can say where the session is open. The file is left
in place when released: unlinking a lock file races with another process opening it. Lock
files are opened without following links and only when a kernel made them (SessionLocks).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import stat
import time
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ...errors import BlitzError, SessionBusyError
from .private import PrivateDir
from .protocol import StoreRefusedError

MAX_NAME_CHARS = 200
ACQUIRE_TRIES = 20
"""A `list` in another kernel probes a lock for microseconds; retrying a few times over
~0.1 s keeps such a probe from looking like a holder."""
RETRY_PAUSE_S = 0.005
MAX_LOCK_BYTES = 4096
"""A holder record is well under this; a bigger lock file is not one a kernel wrote."""


class SessionNameError(BlitzError):
    """A session name that cannot be a session: it names files on disk, so no paths."""


class Holder(BaseModel):
    """Who holds a session: written into its lock file, read by the kernel that is refused."""

    pid: int
    notebook: str | None = None
    since: float
    """Unix time the session was opened."""
    host: str | None = None
    """The machine the kernel runs on (a shared store is reached from many)."""

    @classmethod
    def current(cls) -> Holder:
        """This process. Jupyter server sets JPY_SESSION_NAME to the notebook's path. The host
        name is looked up once per process (every fresh session records it)."""
        notebook = os.environ.get("JPY_SESSION_NAME") or None
        return cls(
            pid=os.getpid(),
            notebook=Path(notebook).name if notebook else None,
            since=time.time(),
            host=_host_name(),
        )

    def describe(self) -> str:
        """ "pid 4242, notebook analysis.ipynb, since 10:42, host hub-node-3" (the date too
        when not today)."""
        opened = datetime.fromtimestamp(self.since)
        when = opened.strftime("%H:%M" if opened.date() == datetime.now().date() else "%Y-%m-%d %H:%M")
        notebook = f", notebook {self.notebook}" if self.notebook else ""
        host = f", host {self.host}" if self.host else ""
        return f"pid {self.pid}{notebook}, since {when}{host}"


_HOST: list[str | None] = []


def _host_name() -> str | None:
    if not _HOST:
        _HOST.append(socket.gethostname() or None)
    return _HOST[0]


def check_session_name(name: str) -> str:
    """The name, or SessionNameError: it becomes a file name, so no `/`, `\\`, `..`, control
    characters, and not empty."""
    if not name or not name.strip():
        raise SessionNameError("a session name cannot be empty")
    if len(name) > MAX_NAME_CHARS:
        raise SessionNameError(f"session name is {len(name)} characters long; at most {MAX_NAME_CHARS}")
    if "/" in name or "\\" in name:
        raise SessionNameError(f"session name {name!r} contains a path separator; use letters, digits, - and _")
    if ".." in name:
        raise SessionNameError(f"session name {name!r} contains '..'; use letters, digits, - and _")
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        raise SessionNameError(f"session name {name!r} contains control characters")
    return name


def refuse_if_held(name: str, holder: Holder | None) -> None:
    """SessionBusyError naming `holder` (a probe's answer; pid 0: held by someone unknown)."""
    if holder is not None:
        raise SessionBusyError(busy_message(name, holder if holder.pid else None))


def busy_message(name: str, holder: Holder | None) -> str:
    where = f" ({holder.describe()})" if holder is not None else ""
    return (
        f"session {name!r} is open in another kernel{where}; "
        f"use %blitz_session new NAME or use NAME for another session"
    )


class SessionLocks:
    """The session locks this process holds on one store (protocol.SessionLockManager).

    Lock files live in a PrivateDir (private.py): opened descriptor-relative, never through a
    link. An existing lock file is used only when it is a regular file of this user with one
    name, holding nothing or a holder record (what a kernel writes): anything else is not a
    lock file a kernel created, so it is never truncated or written, and the session stays in
    memory with a one-line StoreRefusedError."""

    def __init__(self, directory: PrivateDir | Path) -> None:
        if isinstance(directory, Path):
            directory = PrivateDir(directory.parent, (directory.name,), directory.name)
        self.folder = directory
        self.directory = directory.path
        self._held: dict[str, int] = {}

    def path(self, name: str) -> Path:
        return self.directory / self._file(name)

    @staticmethod
    def _file(name: str) -> str:
        return f"{check_session_name(name)}.lock"

    def holds(self, name: str) -> bool:
        return name in self._held

    def acquire(self, name: str) -> None:
        """Take the session's lock, or raise SessionBusyError naming the holder
        (StoreRefusedError: the lock file is not one a kernel made)."""
        if name in self._held:
            return
        file = self._file(name)
        fd, created = self.folder.open_file(file)
        try:
            if not created:
                _check_lock_content(fd, f"{self.folder.shown}/{file}")
            if not _try_lock(fd, tries=ACQUIRE_TRIES):
                raise SessionBusyError(busy_message(name, _read_holder(fd)))
            record = Holder.current().model_dump_json().encode()
            if not created:  # a file made just now is empty
                os.ftruncate(fd, 0)
            os.pwrite(fd, record, 0)
        except BaseException:
            os.close(fd)
            raise
        self._held[name] = fd

    def release(self, name: str) -> None:
        fd = self._held.pop(name, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the descriptor releases the flock

    def release_all(self) -> None:
        for name in list(self._held):
            self.release(name)

    def holder(self, name: str) -> Holder | None:
        """Who holds the session, if another process does (a quick, non-blocking probe).
        A lock file that cannot be one (a link, a folder) holds nobody."""
        if name in self._held:
            return None
        try:
            if self.folder.file_state(self._file(name)) is None:
                return None
            fd, _ = self.folder.open_file(self._file(name), create=False)
        except (OSError, StoreRefusedError):
            return None
        try:
            if _try_lock(fd, tries=1):
                fcntl.flock(fd, fcntl.LOCK_UN)
                return None
            return _read_holder(fd) or Holder(pid=0, since=0)
        finally:
            os.close(fd)

    def check_free(self, name: str) -> None:
        """SessionBusyError when another process holds the session."""
        refuse_if_held(name, self.holder(name))


def _check_lock_content(fd: int, shown: str) -> None:
    """An existing lock file holds nothing or a holder record; anything else was not written
    by a kernel (a repository shipped it), so it is left as it is."""
    content = os.pread(fd, MAX_LOCK_BYTES + 1, 0)
    if not content.strip():
        return
    try:
        Holder.model_validate_json(content)
    except ValidationError:
        raise StoreRefusedError(
            f"{shown} is not a lock file blitz_kernel wrote (it holds other data) and is left untouched; "
            f"move it aside (mv {shown} {shown}.aside) to let blitz_kernel use it"
        ) from None


def legacy_holder(folder: PrivateDir, name: str) -> Holder | None:
    """Who holds `name` through a lock file of its own (what kernels of earlier versions
    take, and this one where open-file-description locks are missing), None when nobody
    does. Anything but a regular file there is no such lock, and is left as it is."""
    try:
        fd = os.open(
            f"{name}.lock", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder.fd(create=False)
        )
    except (OSError, StoreRefusedError):
        return None  # the common case: no such file (or no folder yet)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_holder(fd) or Holder(pid=0, since=0)
        return None
    finally:
        os.close(fd)  # lets the shared probe go


def _try_lock(fd: int, *, tries: int) -> bool:
    for attempt in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt + 1 < tries:
                time.sleep(RETRY_PAUSE_S)
    return False


def _read_holder(fd: int) -> Holder | None:
    try:
        return Holder.model_validate_json(os.pread(fd, MAX_LOCK_BYTES, 0))
    except (ValidationError, OSError, ValueError):
        return None
