"""One kernel per session (WS-02): an OS file lock per session under `.blitz/locks/`.

`fcntl.flock` on `<workspace>/.blitz/locks/<session>.lock`, held for as long as the kernel
holds the session. The kernel that dies (kill -9, out of memory) loses its locks with its file
descriptors, so a crash never leaves a session locked. The file also says who holds it (pid,
notebook, since when), so a second kernel can say where the session is open. The file is left
in place when released: unlinking a lock file races with another process opening it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from datetime import datetime
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ValidationError

from ...errors import BlitzError, SessionBusyError

MAX_NAME_CHARS = 200
ACQUIRE_TRIES = 20
"""A `list` in another kernel probes a lock for microseconds; retrying a few times over
~0.1 s keeps such a probe from looking like a holder."""
RETRY_PAUSE_S = 0.005


class SessionNameError(BlitzError):
    """A session name that cannot be a session: it names files on disk, so no paths."""


class Holder(BaseModel):
    """Who holds a session: written into its lock file, read by the kernel that is refused."""

    pid: int
    notebook: str | None = None
    since: float
    """Unix time the session was opened."""

    @classmethod
    def current(cls) -> Holder:
        """This process. Jupyter server sets JPY_SESSION_NAME to the notebook's path."""
        notebook = os.environ.get("JPY_SESSION_NAME") or None
        return cls(pid=os.getpid(), notebook=Path(notebook).name if notebook else None, since=time.time())

    def describe(self) -> str:
        """ "pid 4242, notebook analysis.ipynb, since 10:42" (the date too when not today)."""
        opened = datetime.fromtimestamp(self.since)
        when = opened.strftime("%H:%M" if opened.date() == datetime.now().date() else "%Y-%m-%d %H:%M")
        notebook = f", notebook {self.notebook}" if self.notebook else ""
        return f"pid {self.pid}{notebook}, since {when}"


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


def busy_message(name: str, holder: Holder | None) -> str:
    where = f" ({holder.describe()})" if holder is not None else ""
    return (
        f"session {name!r} is open in another kernel{where}; "
        f"use %blitz_session new NAME or use NAME for another session"
    )


class SessionLocks:
    """The session locks this process holds in one workspace."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._held: dict[str, IO[str]] = {}

    def path(self, name: str) -> Path:
        return self.directory / f"{check_session_name(name)}.lock"

    def holds(self, name: str) -> bool:
        return name in self._held

    def acquire(self, name: str) -> None:
        """Take the session's lock, or raise SessionBusyError naming the holder."""
        if name in self._held:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        handle = open(self.path(name), "a+", encoding="utf-8")  # noqa: SIM115 - held until release
        if not _try_lock(handle, tries=ACQUIRE_TRIES):
            holder = _read_holder(handle)
            handle.close()
            raise SessionBusyError(busy_message(name, holder))
        handle.seek(0)
        handle.truncate()
        handle.write(Holder.current().model_dump_json())
        handle.flush()
        self._held[name] = handle

    def release(self, name: str) -> None:
        handle = self._held.pop(name, None)
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.truncate(0)
            handle.close()  # closing the descriptor releases the flock

    def release_all(self) -> None:
        for name in list(self._held):
            self.release(name)

    def holder(self, name: str) -> Holder | None:
        """Who holds the session, if another process does (a quick, non-blocking probe)."""
        if name in self._held:
            return None
        path = self.path(name)
        if not path.exists():
            return None
        try:
            with open(path, encoding="utf-8") as handle:
                if _try_lock(handle, tries=1):
                    fcntl.flock(handle, fcntl.LOCK_UN)
                    return None
                return _read_holder(handle) or Holder(pid=0, since=0)
        except OSError:
            return None

    def check_free(self, name: str) -> None:
        """SessionBusyError when another process holds the session."""
        holder = self.holder(name)
        if holder is not None:
            raise SessionBusyError(busy_message(name, holder if holder.pid else None))


def _try_lock(handle: IO[str], *, tries: int) -> bool:
    for attempt in range(tries):
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt + 1 < tries:
                time.sleep(RETRY_PAUSE_S)
    return False


def _read_holder(handle: IO[str]) -> Holder | None:
    try:
        handle.seek(0)
        return Holder.model_validate_json(handle.read())
    except (ValidationError, OSError, ValueError):
        return None
