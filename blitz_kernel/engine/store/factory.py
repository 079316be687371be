"""Which store a workspace uses: `store.url` / `BLITZ_STORE_URL` or `store.path` (docs/store.md).

- unset: SQLite at `<workspace>/.blitz/blitz.db`, with its locks in `.blitz/locks/`; the
  identity rule applies (identity.py), since a repository can ship that file;
- `sqlite:///PATH` or `store.path = PATH`: SQLite at PATH (relative to the workspace, `~`
  expanded), locks in `locks/` beside it; the user named it, so it is adopted as theirs;
- `postgresql://…`: the PostgreSQL backend (postgres/): this user's sessions of this workspace
  in a shared database, locked per session with advisory locks; nothing is written to
  `.blitz/blitz.db`. Any other scheme is a one-line error naming the key (the settings model
  checks it when the configuration loads).

SQLite on a network or FUSE file system is never run in WAL mode (sqlite/mounts.py): the
rollback journal on NFS and CIFS/SMB, no database (sessions in memory) on FUSE, with a notice.

A workspace's own `blitz.toml` cannot set either key until it is trusted (config/trust.py).
"""

from __future__ import annotations

from pathlib import Path

from ...core.store_url import StoreUrlError, is_postgres, sqlite_path
from .byte_locks import SUPPORTED as BYTE_RANGE_LOCKS
from .byte_locks import ByteRangeSessionLocks
from .identity import StoreIdentities
from .link import StoreLink
from .locks import SessionLocks
from .private import PrivateDir
from .protocol import StoreError
from .sqlite.mounts import placement
from .sqlite.opening import open_sqlite
from .sqlite.store import DB_NAME


def open_store(
    url: str | None,
    *,
    workspace: Path,
    home: Path | None = None,
    mountinfo: str | None = None,
    viewer: bool = False,
) -> StoreLink:
    """The store `url` names (None: the workspace's default) with its locks, or a link that
    says in one line why there is none; sessions then live in memory. `mountinfo`: the mount
    table to judge the SQLite folder by (None: this process's, mounts.py). `viewer`: for a
    reader that must change nothing (the side panel): a SQLite file that is missing or not
    this user's is refused, not created or moved aside (sqlite/opening.py)."""
    if is_postgres(url):
        assert url is not None
        return _open_postgres(url, workspace, viewer)
    identities = StoreIdentities(home)
    folder: PrivateDir | None = None
    notices: list[str] = []
    try:
        path = None if url is None else sqlite_path(url, workspace)
        place = placement(workspace / ".blitz" if path is None else path.parent, mountinfo)
        if place is not None:
            shown = ".blitz" if path is None else str(path.parent)
            if place.mode == "memory":
                return StoreLink.without_store(StoreError(place.notice(shown)))
            notices.append(place.notice(shown))
        if path is None:
            folder = PrivateDir(workspace, (".blitz",), ".blitz")
            locks = PrivateDir(workspace, (".blitz", "locks"), ".blitz/locks")
            location, adopt = f".blitz/{DB_NAME}", False
            name = DB_NAME
        else:
            if not viewer:
                _make_parent(path)
            folder = PrivateDir(path.parent, (), str(path.parent))
            locks = PrivateDir(path.parent, ("locks",), str(path.parent / "locks"))
            location, adopt, name = str(path), True, path.name
        store, notice = open_sqlite(
            folder, name, location=location, identities=identities, adopt=adopt, wal=place is None, viewer=viewer
        )
    except StoreUrlError as exc:
        return StoreLink.without_store(StoreError(f"store.url: {exc}"))
    except StoreError as exc:
        return StoreLink.without_store(exc)
    finally:
        if folder is not None:
            folder.close()  # the store keeps its own file open; the folder is not needed
    manager = ByteRangeSessionLocks(locks, store.holder_record) if BYTE_RANGE_LOCKS else SessionLocks(locks)
    return StoreLink(store, locks=manager, notices=[*notices, *([notice] if notice else [])])


def _open_postgres(url: str, workspace: Path, viewer: bool) -> StoreLink:
    try:
        from .postgres import open_postgres
    except ImportError as exc:  # psycopg is a dependency; a broken install says so
        return StoreLink.without_store(StoreError(f"store.url: postgresql:// needs psycopg 3 ({exc})"))
    try:
        store, locks = open_postgres(url, workspace, viewer)
    except StoreError as exc:
        return StoreLink.without_store(exc)
    return StoreLink(store, locks=locks)


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot create the folder {path.parent} for the session store: {exc.strerror}") from None
