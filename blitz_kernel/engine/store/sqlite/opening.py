"""Opening a kernel's SQLite store: the file checks and the identity rule (identity.py).

Under an exclusive `flock` on the store's folder (so two kernels opening one workspace at once
agree on what they found), in this order:
1. the database and its companions (`-wal`, `-shm`, `-journal`) must each be absent or a
   regular file of this user with one name (private.py): a link there is refused, never
   followed, and nothing is written;
2. a missing database is created here, exclusively, and given a new id;
3. an existing one at the default place is used only when its id is recorded in the user's
   home for this file; otherwise it and its companions are renamed to
   `<name>.foreign-<time>[-wal|-shm]` and a new store is created (the notice says where);
4. after SQLite opened the file, it must still be the file checked in 1.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

from ..identity import StoreIdentities, new_store_id
from ..private import PrivateDir
from ..protocol import StoreError, StoreRefusedError, StoreUnavailableError
from .edge import translate
from .schema import connect, refuse_newer
from .store import Store

COMPANIONS = ("-wal", "-shm", "-journal")


def open_sqlite(
    folder: PrivateDir,
    name: str,
    *,
    location: str,
    identities: StoreIdentities,
    adopt: bool,
    wal: bool = True,
    viewer: bool = False,
) -> tuple[Store, str | None]:
    """The store `folder/name`, and a one-line notice when a foreign one was moved aside.
    `adopt`: the user named this file, so it is theirs whatever its id (it is recorded).
    `wal`: False on a network file system (the rollback journal, mounts.py). `viewer`: for a
    reader such as the side panel: a missing or foreign file is refused, never created or moved
    aside, and no identity is recorded."""
    fd = folder.fd()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        raise StoreUnavailableError(f"cannot lock the folder {folder.shown}: {exc.strerror}") from None
    try:
        if viewer:
            return _open_viewer(folder, name, location=location, identities=identities, adopt=adopt, wal=wal), None
        return _open_locked(folder, name, location=location, identities=identities, adopt=adopt, wal=wal)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _open_locked(
    folder: PrivateDir, name: str, *, location: str, identities: StoreIdentities, adopt: bool, wal: bool
) -> tuple[Store, str | None]:
    for suffix in COMPANIONS:
        folder.file_state(name + suffix)
    info = folder.file_state(name)
    notice = None
    if info is not None and not adopt:
        store_id = _peek_id(folder.path / name, location)
        if not identities.knows(store_id, folder.path / name, info):
            aside = _move_aside(folder, name)
            notice = (
                f"{location} was not created by this user's kernels (it came with a clone or a copy, "
                f"or predates store ids): moved aside to {folder.shown}/{aside}; its sessions and undo "
                "records are not used, and a new store starts (docs/store.md)"
            )
            info = None
    created = info is None
    checked = folder.create_exclusive(name) if info is None else info
    store = _connect(folder, name, location, checked, wal=wal)
    try:
        if created or adopt:
            store_id = (None if created else store.store_id()) or new_store_id()
            store.set_store_id(store_id)
            try:
                identities.record(store_id, folder.path / name, checked)
            except OSError as exc:
                raise StoreUnavailableError(
                    f"cannot record the store's identity in {identities.describe()}: {exc.strerror}"
                ) from None
    except BaseException:
        store.close()
        raise
    return store, notice


def _open_viewer(
    folder: PrivateDir, name: str, *, location: str, identities: StoreIdentities, adopt: bool, wal: bool
) -> Store:
    for suffix in COMPANIONS:
        folder.file_state(name + suffix)
    info = folder.file_state(name)
    if info is None:
        raise StoreUnavailableError(f"{location} does not exist yet: no session was saved here")
    if not adopt and not identities.knows(_peek_id(folder.path / name, location), folder.path / name, info):
        raise StoreRefusedError(
            f"{location} was not created by this user's kernels (it came with a clone or a copy); "
            "a kernel here moves it aside and starts a new store (docs/store.md)"
        )
    return _connect(folder, name, location, info, wal=wal)


def _connect(folder: PrivateDir, name: str, location: str, checked: os.stat_result, *, wal: bool) -> Store:
    path = folder.path / name
    try:
        connection = connect(path, wal=wal)
    except StoreError:
        raise
    except (sqlite3.Error, OSError) as exc:
        raise translate(exc, location, "open") from exc
    now = folder.file_state(name)
    if now is None or (now.st_dev, now.st_ino) != (checked.st_dev, checked.st_ino):
        connection.close()
        raise StoreRefusedError(f"{location} was replaced while it was being opened; try again")
    return Store(path, connection=connection, location=location)


def _peek_id(path: Path, location: str) -> str | None:
    """The id written in the database, read without changing it; None for a database from
    before store ids. A file SQLite cannot read is damaged (StoreDamagedError); one from a
    newer blitz_kernel is refused untouched (SchemaTooNewError), whoever made it."""
    try:
        connection = sqlite3.connect(path, timeout=10.0, isolation_level=None)
    except sqlite3.Error as exc:
        raise translate(exc, location, "open") from exc
    try:
        refuse_newer(path, connection.execute("PRAGMA user_version").fetchone()[0])  # left as it is
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "meta" not in tables:
            return None
        row = connection.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
        return str(row[0]) if row else None
    except sqlite3.Error as exc:
        raise translate(exc, location, "read") from exc
    finally:
        connection.close()


def _move_aside(folder: PrivateDir, name: str) -> str:
    """Rename the database and its companions out of the way; the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = f"{name}.foreign-{stamp}"
    counter = 1
    while folder.file_state(aside) is not None:
        counter += 1
        aside = f"{name}.foreign-{stamp}-{counter}"
    for suffix in ("", *COMPANIONS):
        if folder.file_state(name + suffix) is not None:
            try:
                folder.rename(name + suffix, aside + suffix)
            except OSError as exc:
                raise StoreUnavailableError(
                    f"cannot move {folder.shown}/{name}{suffix} aside: {exc.strerror}"
                ) from None
    return aside
