"""Paths under `.blitz/` are data the kernel did not necessarily write (docs/store.md).

A repository can ship anything there: `git` stores symbolic links, so a clone may bring
`.blitz/locks/default.lock -> ~/.bashrc`. So every folder and file the store uses there is
opened descriptor-relative (no path is resolved twice), with `O_NOFOLLOW`, and accepted only
when it is a regular file (or folder) owned by this user with a single name. Anything else is
refused with a one-line StoreRefusedError naming the path and how to move it aside; the kernel
then goes on without that file (sessions in memory).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from .protocol import StoreRefusedError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class PrivateDir:
    """A folder reached from `base` (opened normally: the user chose it) through `parts`
    (each opened with O_NOFOLLOW and created 0700 when missing). `shown` names it in messages.
    The descriptor is opened once and kept: later opens are relative to it."""

    def __init__(self, base: Path, parts: tuple[str, ...], shown: str) -> None:
        self.base = base
        self.parts = parts
        self.shown = shown
        self.path = base.joinpath(*parts)
        self._fd: int | None = None

    def fd(self, *, create: bool = True) -> int:
        """The folder's descriptor; StoreRefusedError when a part is a link, not a folder, or
        another user's; FileNotFoundError when it is missing and `create` is False."""
        if self._fd is None:
            self._fd = self._open(create)
        return self._fd

    def _open(self, create: bool) -> int:
        try:
            current = os.open(self.base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise StoreRefusedError(f"cannot open the folder {self.base}: {exc.strerror}") from None
        shown = self.base.name
        try:
            for index, part in enumerate(self.parts):
                shown = "/".join(self.parts[: index + 1])
                child = _open_dir(current, part, shown, create)
                os.close(current)
                current = child
        except BaseException:
            os.close(current)
            raise
        return current

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def file_state(self, name: str) -> os.stat_result | None:
        """The entry `name` as it is (links not followed), None when absent; StoreRefusedError
        when it is there but not a regular file of ours with one name."""
        try:
            info = os.stat(name, dir_fd=self.fd(create=False), follow_symlinks=False)
        except FileNotFoundError:
            return None
        check_regular(info, f"{self.shown}/{name}")
        return info

    def open_file(self, name: str, *, create: bool = True) -> tuple[int, bool]:
        """(descriptor, created): a new file (0600) when there is none, else the existing one
        after the checks. StoreRefusedError for a link, a folder, a FIFO, another user's file."""
        folder = self.fd()
        shown = f"{self.shown}/{name}"
        if create:
            try:
                return os.open(name, FILE_FLAGS | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=folder), True
            except FileExistsError:
                pass
            except OSError as exc:
                raise _refused(exc, shown) from None
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=folder)
        except OSError as exc:
            raise _refused(exc, shown) from None
        try:
            check_regular(os.fstat(fd), shown)
        except BaseException:
            os.close(fd)
            raise
        return fd, False

    def create_exclusive(self, name: str) -> os.stat_result:
        """Create `name` empty (0600), failing if anything is there; its stat."""
        fd, created = self.open_file(name)
        try:
            if not created:
                raise StoreRefusedError(f"{self.shown}/{name} appeared while it was being created")
            return os.fstat(fd)
        finally:
            os.close(fd)

    def rename(self, name: str, new: str) -> None:
        """Rename an entry within the folder (a link is renamed, never followed)."""
        os.rename(name, new, src_dir_fd=self.fd(), dst_dir_fd=self.fd())


def _open_dir(parent: int, name: str, shown: str, create: bool) -> int:
    for _ in range(2):
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                try:
                    os.mkdir(name, 0o700, dir_fd=parent)
                except OSError as exc:
                    raise StoreRefusedError(f"cannot create the folder {shown}: {exc.strerror}") from None
            continue
        except OSError as exc:
            raise _refused(exc, shown, entry=(parent, name)) from None
        info = os.fstat(fd)
        if info.st_uid != os.geteuid():
            os.close(fd)
            raise StoreRefusedError(f"{shown} belongs to another user (uid {info.st_uid}); {_aside(shown)}")
        return fd
    raise StoreRefusedError(f"cannot create the folder {shown}")


def check_regular(info: os.stat_result, shown: str) -> None:
    """StoreRefusedError unless `info` is a regular file of this user with a single name."""
    if stat.S_ISLNK(info.st_mode):
        raise StoreRefusedError(f"{shown} is a symbolic link; links under .blitz/ are never followed; {_aside(shown)}")
    if not stat.S_ISREG(info.st_mode):
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise StoreRefusedError(f"{shown} is {kind}; {_aside(shown)}")
    if info.st_uid != os.geteuid():
        raise StoreRefusedError(f"{shown} belongs to another user (uid {info.st_uid}); {_aside(shown)}")
    if info.st_nlink != 1:
        raise StoreRefusedError(f"{shown} has {info.st_nlink} names (a hard link to another file); {_aside(shown)}")


def _refused(exc: OSError, shown: str, *, entry: tuple[int, str] | None = None) -> StoreRefusedError:
    """The one line for a failed open; `entry` (folder descriptor, name): a folder was wanted,
    so ENOTDIR may also mean a link (O_NOFOLLOW with O_DIRECTORY says ENOTDIR for one)."""
    if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and entry is not None and _is_link(*entry)):
        return StoreRefusedError(f"{shown} is a symbolic link; links under .blitz/ are never followed; {_aside(shown)}")
    if exc.errno == errno.ENOTDIR:
        return StoreRefusedError(f"{shown} is not a folder; {_aside(shown)}")
    if exc.errno == errno.EISDIR:
        return StoreRefusedError(f"{shown} is a folder; {_aside(shown)}")
    return StoreRefusedError(f"cannot open {shown}: {exc.strerror}")


def _is_link(folder: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _aside(shown: str) -> str:
    return f"move it aside (mv {shown} {shown}.aside) to let blitz_kernel use it"
