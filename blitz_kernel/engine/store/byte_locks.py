"""One kernel per session in one lock file: a session's lock is one byte of
`.blitz/locks/sessions.lock` (docs/store.md).

A lock file per session made every fresh session create a file, which costs more than the
session's row. Here the kernel opens one file per store, once, and a session's lock is an
open-file-description lock (`F_OFD_SETLK`) on one byte of it, at an offset worked out from
the session's name: taking it is one system call. Such a lock belongs to the open file, not to
the process, so two workspaces in one process exclude each other as two kernels do, and it
dies with the process (kill -9, out of memory) like any descriptor. The file itself is never
written: the bytes locked lie past its end.

Who holds a session is not in the file: the store keeps it in the session's row (written when
the session is opened), and `holders` reads it there. A kernel of an older version took a lock
file per session (`<session>.lock`, flock); such a file, when there is one, is probed too, so an
older kernel's session is busy here as well.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import struct
from collections.abc import Callable

from pydantic import ValidationError

from ...errors import SessionBusyError
from .locks import (
    Holder,
    busy_message,
    check_session_name,
    legacy_holder,
    refuse_if_held,
)
from .private import PrivateDir
from .protocol import StoreError, StoreRefusedError

LOCK_FILE = "sessions.lock"
OFFSET_BYTES = 7
"""A name's lock byte is at one of 2**56 offsets (an off_t holds it): names never meet."""
_FLOCK = struct.Struct("@hhqqi4x")
"""Linux's `struct flock`: type, whence, start, length, pid (0 for OFD locks), padding."""
SUPPORTED = hasattr(fcntl, "F_OFD_SETLK")
"""Linux has open-file-description locks; elsewhere a lock file per session (locks.py)."""


def lock_offset(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=OFFSET_BYTES).digest(), "big")


class ByteRangeSessionLocks:
    """The session locks this process holds on one store (protocol.SessionLockManager)."""

    def __init__(self, directory: PrivateDir, holders: Callable[[str], str | None]) -> None:
        self.folder = directory
        self._holders = holders
        self._fd: int | None = None
        self._held: set[str] = set()

    def holds(self, name: str) -> bool:
        return name in self._held

    def acquire(self, name: str) -> None:
        """Take the session's byte, or raise SessionBusyError naming the holder
        (StoreRefusedError: the lock file is not one a kernel made)."""
        if name in self._held:
            return
        check_session_name(name)
        fd = self._file()
        assert fd is not None
        refuse_if_held(name, legacy_holder(self.folder, name))
        try:
            taken = _set(fd, fcntl.F_WRLCK, lock_offset(name))
        except OSError as exc:  # a file system without such locks (ENOLCK, EINVAL)
            shown = f"{self.folder.shown}/{LOCK_FILE}"
            raise StoreRefusedError(f"{shown} cannot be locked here ({exc.strerror or exc})") from None
        if not taken:  # held: another kernel's probe (`holder`) never takes the byte, so no retry
            raise SessionBusyError(busy_message(name, self._holder_record(name)))
        self._held.add(name)

    def release(self, name: str) -> None:
        if name in self._held:
            self._held.discard(name)
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    _set(self._fd, fcntl.F_UNLCK, lock_offset(name))

    def release_all(self) -> None:
        for name in list(self._held):
            self.release(name)
        if self._fd is not None:
            os.close(self._fd)  # closing the open file lets every byte of it go
            self._fd = None

    def holder(self, name: str) -> Holder | None:
        """Who holds the session, if another process does (a quick, non-blocking probe)."""
        if name in self._held:
            return None
        older = legacy_holder(self.folder, name)
        if older is not None:
            return older
        try:
            fd = self._file(create=False)
            if fd is None or not _taken(fd, lock_offset(name)):
                return None
        except (OSError, StoreRefusedError):
            return None
        return self._holder_record(name) or Holder(pid=0, since=0)

    def check_free(self, name: str) -> None:
        refuse_if_held(name, self.holder(name))

    def _file(self, *, create: bool = True) -> int | None:
        """The lock file, opened once (checked: a regular file of this user, one name, empty);
        None when it is not there and `create` is False (nobody ever locked here)."""
        if self._fd is None:
            if not create and self.folder.file_state(LOCK_FILE) is None:
                return None
            fd, created = self.folder.open_file(LOCK_FILE)
            if not created and os.fstat(fd).st_size:
                os.close(fd)
                shown = f"{self.folder.shown}/{LOCK_FILE}"
                raise StoreRefusedError(
                    f"{shown} is not a lock file blitz_kernel made (it holds data) and is left untouched; "
                    f"move it aside (mv {shown} {shown}.aside) to let blitz_kernel use it"
                )
            self._fd = fd
        return self._fd

    def _holder_record(self, name: str) -> Holder | None:
        try:
            record = self._holders(name)
            return Holder.model_validate_json(record) if record else None
        except (ValidationError, ValueError, OSError, StoreError):
            return None


def _set(fd: int, kind: int, offset: int) -> bool:
    """Lock (or unlock) one byte without waiting; False when another open file holds it."""
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(kind, os.SEEK_SET, offset, 1, 0))
    except (BlockingIOError, PermissionError):
        return False
    return True


def _taken(fd: int, offset: int) -> bool:
    """Whether another open file holds the byte (this one's own locks never conflict)."""
    answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0))
    return _FLOCK.unpack(answer)[0] != fcntl.F_UNLCK
