"""The SQLite backend's edge: its own failures become the store's typed errors here, so that
nothing outside this package names `sqlite3` (protocol.py).

- a corrupt page or a file that is not a database: StoreDamagedError naming the file;
- "database is locked" past the busy timeout: StoreBusyError;
- anything else of SQLite's, and OSError: StoreUnavailableError;
- a row whose JSON does not parse or has the wrong shape is named by the code that reads it
  (reads.py), which raises StoreDamagedError itself.
"""

from __future__ import annotations

import json
import sqlite3

from pydantic import ValidationError

from ..edge import edge_for
from ..protocol import StoreBusyError, StoreDamagedError, StoreError, StoreUnavailableError

DAMAGE_MARKERS = ("malformed", "not a database", "file is encrypted", "corrupt")


def damaged_file(location: str, detail: str) -> StoreDamagedError:
    return StoreDamagedError(
        f"the session store {location} is damaged ({detail}); move it aside "
        f"(mv {location} {location}.damaged) and blitz_kernel starts a new one",
        what=location,
    )


def damaged_row(location: str, table: str, row: int, session: str, detail: str) -> StoreDamagedError:
    what = f"row {row} of table {table} (session {session!r})"
    return StoreDamagedError(
        f"the session store {location} has a bad {what}: {detail}; "
        f"move the store aside (mv {location} {location}.damaged) and blitz_kernel starts a new one",
        what=f"{what} in {location}",
    )


def translate(exc: BaseException, location: str, doing: str) -> StoreError:
    """The typed store error for one of SQLite's (or the file system's) failures."""
    detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, sqlite3.DatabaseError) and any(marker in detail.lower() for marker in DAMAGE_MARKERS):
        return damaged_file(location, detail)
    if isinstance(exc, sqlite3.OperationalError) and "locked" in detail:
        return StoreBusyError(f"cannot {doing} the session store {location}: {detail}")
    if isinstance(exc, ValidationError | json.JSONDecodeError | UnicodeDecodeError):
        return damaged_file(location, f"a record does not parse: {_first_line(exc)}")
    return StoreUnavailableError(f"cannot {doing} the session store {location}: {detail}")


edge = edge_for((sqlite3.Error, OSError, ValidationError, ValueError), translate)
"""Wraps every public method of the backend: its errors leave it typed (store/edge.py)."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[:3]) if text else type(exc).__name__
