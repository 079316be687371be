"""SQLite that knows where it is (docs/store.md, "Network file systems"): the mount of the
store's folder is read from a mount table (simulated here: the functions take its text), and
a network or FUSE file system never gets WAL silently."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from blitz_kernel.core.history import user_prompt
from blitz_kernel.engine.store.factory import open_store
from blitz_kernel.engine.store.sessions import SessionBook
from blitz_kernel.engine.store.sqlite.mounts import Mount, classify, mount_of, parse_mountinfo, placement

ROOT_LINE = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro\n"


def mounted(point: Path, fstype: str, source: str) -> str:
    """A mount table with the root on ext4 and `point` mounted as `fstype`."""
    escaped = str(point).replace(" ", "\\040")
    return ROOT_LINE + f"40 22 0:50 / {escaped} rw,relatime shared:30 - {fstype} {source} rw,vers=4.2\n"


def journal_mode(database: Path) -> str:
    with contextlib.closing(sqlite3.connect(database)) as connection:
        return str(connection.execute("PRAGMA journal_mode").fetchone()[0])


def test_the_mount_table_is_parsed_with_escapes_and_the_longest_mount_point_wins():
    text = mounted(Path("/home/my user"), "nfs4", "filer:/export/home") + "bad line\n"
    mounts = parse_mountinfo(text)
    assert mounts == [
        Mount(point="/", fstype="ext4", source="/dev/sda1"),
        Mount(point="/home/my user", fstype="nfs4", source="filer:/export/home"),
    ]
    assert mount_of(Path("/home/my user/project/.blitz"), mounts) == mounts[1]
    assert mount_of(Path("/home/my username"), mounts) == mounts[0]  # a prefix of a name is not inside
    assert [classify(kind) for kind in ("nfs", "nfs4", "cifs", "smb3", "fuse.sshfs", "fuseblk", "ext4", "overlay")] == [
        ("NFS", "journal"),
        ("NFS", "journal"),
        ("CIFS/SMB", "journal"),
        ("CIFS/SMB", "journal"),
        ("FUSE", "memory"),
        ("FUSE", "memory"),
        None,
        None,
    ]


def test_on_nfs_the_store_uses_the_rollback_journal_and_says_so_once(tmp_path):
    table = mounted(tmp_path, "nfs4", "filer:/export/home")
    link = open_store(None, workspace=tmp_path, home=tmp_path / "home", mountinfo=table)
    book = SessionBook(link, root=tmp_path)
    book.get("s").commit([user_prompt("kept on the filer")], 0)
    [notice] = book.take_notices()
    assert notice.startswith(f".blitz is on NFS (nfs4 filer:/export/home at {tmp_path}): ")
    assert "rollback journal there instead of WAL" in notice
    assert "store.url" in notice and "postgresql://" in notice and "store.path" in notice and "\n" not in notice
    assert book.take_notices() == []
    book.close()
    database = tmp_path / ".blitz" / "blitz.db"
    assert journal_mode(database) == "delete"
    assert not (tmp_path / ".blitz" / "blitz.db-wal").exists() and not (tmp_path / ".blitz" / "blitz.db-shm").exists()
    again = SessionBook(open_store(None, workspace=tmp_path, home=tmp_path / "home", mountinfo=table), root=tmp_path)
    assert [m.text for m in again.get("s").history] == ["kept on the filer"]
    again.close()


def test_a_wal_database_that_is_now_on_a_network_share_leaves_wal(tmp_path):
    local = SessionBook(
        open_store(None, workspace=tmp_path, home=tmp_path / "home", mountinfo=ROOT_LINE), root=tmp_path
    )
    local.get("s").commit([user_prompt("written locally")], 0)
    local.close()
    assert journal_mode(tmp_path / ".blitz" / "blitz.db") == "wal"
    table = mounted(tmp_path, "cifs", "//server/share")
    shared = SessionBook(open_store(None, workspace=tmp_path, home=tmp_path / "home", mountinfo=table), root=tmp_path)
    assert [m.text for m in shared.get("s").history] == ["written locally"]
    assert "is on CIFS/SMB (cifs //server/share" in shared.take_notices()[0]
    shared.close()
    assert journal_mode(tmp_path / ".blitz" / "blitz.db") == "delete"


def test_on_fuse_no_database_is_opened_and_sessions_stay_in_memory(tmp_path):
    table = mounted(tmp_path, "fuse.sshfs", "me@host:/data")
    book = SessionBook(open_store(None, workspace=tmp_path, home=tmp_path / "home", mountinfo=table), root=tmp_path)
    problem = book.store_problem
    assert problem is not None and "\n" not in problem
    assert problem.startswith(f".blitz is on FUSE (fuse.sshfs me@host:/data at {tmp_path}): ")
    assert "store.path" in problem and problem.endswith("will not survive a kernel restart")
    session = book.get("s")
    session.commit([user_prompt("in memory")], 0)
    assert not session.saved
    assert not (tmp_path / ".blitz").exists()


def test_a_store_path_on_a_local_disk_is_the_way_out(tmp_path):
    home = tmp_path / "nfs-home"
    scratch = tmp_path / "scratch"
    table = mounted(home, "nfs", "filer:/home")
    link = open_store(f"sqlite:///{scratch / 'blitz.db'}", workspace=home, home=tmp_path / "h", mountinfo=table)
    assert link.store is not None and link.notices == []
    link.store.close()
    assert journal_mode(scratch / "blitz.db") == "wal"


def test_a_local_disk_or_an_unknown_mount_table_changes_nothing(tmp_path):
    assert placement(tmp_path, ROOT_LINE) is None
    assert placement(tmp_path, "") is None
    link = open_store(None, workspace=tmp_path, home=tmp_path / "home", mountinfo=ROOT_LINE)
    assert link.store is not None and link.notices == []
    link.store.close()
    assert journal_mode(tmp_path / ".blitz" / "blitz.db") == "wal"
