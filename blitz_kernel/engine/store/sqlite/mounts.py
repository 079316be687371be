"""Where the SQLite store's folder lives: a local disk, or a file system SQLite is not safe on
(docs/store.md, "Network file systems").

WAL needs shared memory between the processes that open the database (the `-shm` file,
mapped), which a network file system does not give across hosts; SQLite's own documentation
says not to use WAL there. Locking on network and FUSE file systems is only as good as the
server's lock support. So at open the store reads `/proc/self/mountinfo`, finds the mount that
holds its folder, and picks a mode:

- a local file system: WAL, as always;
- NFS or CIFS/SMB: the rollback journal (`journal_mode=DELETE`, `synchronous=FULL`), which
  needs no shared memory and relies only on the byte-range locks these servers provide;
- FUSE (sshfs, s3fs, gcsfuse, …): no database at all: sessions are kept in memory, with the
  "not saved" notice, since many FUSE file systems have no working locks.

Either way one notice says what was found and what to do: `store.url` to PostgreSQL, or
`store.path` to a local folder. Pure functions over the mountinfo text, so tests can simulate
any mount.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
NETWORK = {"nfs": "NFS", "nfs4": "NFS", "cifs": "CIFS/SMB", "smb3": "CIFS/SMB", "smbfs": "CIFS/SMB"}
"""File systems where the rollback journal is used instead of WAL."""


@dataclass(frozen=True)
class Mount:
    point: str
    fstype: str
    source: str


@dataclass(frozen=True)
class Placement:
    """What the store's folder is on, and how the store is kept there."""

    mount: Mount
    kind: str
    """"NFS", "CIFS/SMB" or "FUSE"."""
    mode: str
    """"journal" (rollback journal, no WAL) or "memory" (no database)."""

    def notice(self, folder: str) -> str:
        found = f"{folder} is on {self.kind} ({self.mount.fstype} {self.mount.source} at {self.mount.point})"
        if self.mode == "journal":
            kept = "the session store uses SQLite's rollback journal there instead of WAL, which needs shared memory"
        else:
            kept = "SQLite cannot lock safely there, so sessions are kept in memory only and are not saved"
        advice = (
            "to share sessions across hosts set store.url (or BLITZ_STORE_URL) to a postgresql:// server, "
            "or set store.path to a file on a local disk (docs/store.md)"
        )
        return f"{found}: {kept}; {advice}"


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a /proc/<pid>/mountinfo text; lines that do not parse are skipped."""
    mounts = []
    for line in text.splitlines():
        head, separator, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not separator or len(fields) < 5 or len(rest) < 2:
            continue
        mounts.append(Mount(point=_unescape(fields[4]), fstype=rest[0], source=_unescape(rest[1])))
    return mounts


def mount_of(path: Path, mounts: list[Mount]) -> Mount | None:
    """The mount that holds `path`: the longest mount point it lies under (the last mounted
    wins when one point is mounted twice)."""
    target = str(path)
    best: Mount | None = None
    for mount in mounts:
        point = mount.point.rstrip("/") or "/"
        inside = target == point or target.startswith(point + "/") or point == "/"
        if inside and (best is None or len(point) >= len(best.point.rstrip("/") or "/")):
            best = mount
    return best


def classify(fstype: str) -> tuple[str, str] | None:
    """(kind, mode) for a file system SQLite is not safe on with WAL; None for a local one."""
    if fstype in NETWORK:
        return NETWORK[fstype], "journal"
    if fstype == "fuse" or fstype == "fuseblk" or fstype.startswith("fuse."):
        return "FUSE", "memory"
    return None


def placement(folder: Path, mountinfo: str | None = None) -> Placement | None:
    """Where `folder` is, when that is not a local file system; None when it is (or when the
    mount table cannot be read: nothing is known, so nothing changes)."""
    if mountinfo is None:
        try:
            mountinfo = MOUNTINFO.read_text(errors="replace")
        except OSError:
            return None
    try:
        resolved = folder.resolve()
    except OSError:
        resolved = folder.absolute()
    mount = mount_of(resolved, parse_mountinfo(mountinfo))
    found = classify(mount.fstype) if mount is not None else None
    if mount is None or found is None:
        return None
    kind, mode = found
    return Placement(mount=mount, kind=kind, mode=mode)
