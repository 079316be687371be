"""Which stores this user's kernels created: kept outside every workspace, in `~/.blitz/stores/`.

A repository can ship a `.blitz/blitz.db` with crafted sessions (a history that instructs the
model, checkpoint rows that point anywhere). So the kernel that creates a store writes a random
id into it and records, in the user's home, that id with the file's device and inode. The rule
(docs/store.md): a database at the default place, `<workspace>/.blitz/blitz.db`, is used only
when its id is recorded here with the same device and inode. Anything else — a clone, a copy,
a file written before store ids existed — is moved aside (`.blitz/blitz.db.foreign-<time>`)
with a notice, its rows are never read as sessions, and a new store starts. A store the user
names with `store.url` / `store.path` is the user's choice and is adopted (recorded) as it is.

One small file per store (`<id>.json`): creating one never rewrites another's record, so two
kernels creating stores at once cannot lose each other's.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pydantic import BaseModel, ValidationError

ID_BYTES = 16


class StoreRecord(BaseModel):
    """What the home keeps of one store."""

    path: str
    device: int
    inode: int


def new_store_id() -> str:
    return secrets.token_hex(ID_BYTES)


class StoreIdentities:
    """`~/.blitz/stores/`: the stores this user's kernels created or adopted."""

    def __init__(self, home: Path | None = None) -> None:
        self.folder = (home if home is not None else Path.home()) / ".blitz" / "stores"

    def _file(self, store_id: str) -> Path | None:
        if len(store_id) != 2 * ID_BYTES or any(c not in "0123456789abcdef" for c in store_id):
            return None  # not an id a kernel wrote: no file name is built from it
        return self.folder / f"{store_id}.json"

    def knows(self, store_id: str | None, path: Path, info: os.stat_result) -> bool:
        """True when `store_id` was recorded for this very file (device and inode). A store
        that moved with its folder (same inode) is known; its new path is recorded."""
        file = self._file(store_id) if store_id else None
        if file is None:
            return False
        try:
            record = StoreRecord.model_validate_json(file.read_bytes())
        except (OSError, ValidationError, ValueError):
            return False
        if (record.device, record.inode) != (info.st_dev, info.st_ino):
            return False
        if record.path != str(path):
            self.record(store_id or "", path, info)
        return True

    def record(self, store_id: str, path: Path, info: os.stat_result) -> None:
        """Remember the store (atomically: a temporary file renamed into place)."""
        file = self._file(store_id)
        if file is None:
            raise ValueError(f"not a store id: {store_id!r}")
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = StoreRecord(path=str(path), device=info.st_dev, inode=info.st_ino).model_dump_json()
        temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")
        temporary.write_text(body, encoding="utf-8")
        temporary.replace(file)

    def describe(self) -> str:
        return str(self.folder)
