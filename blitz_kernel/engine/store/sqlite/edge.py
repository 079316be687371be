"""The SQLite backend's edge: its own failures become the store's typed errors here, so that
nothing outside this package names `sqlite3` (protocol.py).

- a corrupt page or a file that is not a database: StoreDamagedError naming the file;
- "database is locked" past the busy timeout: StoreBusyError;
- anything else of SQLite's, and OSError: StoreUnavailableError;
- a row whose JSON does not parse or has the wrong shape is named by the code that reads it
  (reads.py), which raises StoreDamagedError itself.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

from pydantic import ValidationError

from ..protocol import StoreBusyError, StoreDamagedError, StoreError, StoreUnavailableError

F = TypeVar("F", bound=Callable[..., Any])

DAMAGE_MARKERS = ("malformed", "not a database", "file is encrypted", "corrupt")


class _Located(Protocol):
    location: str


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


def edge(doing: str) -> Callable[[F], F]:
    """Translate what escapes a Store method (`doing`: "read", "write to") into StoreError."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def translated(self: _Located, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except StoreError:
                raise
            except (sqlite3.Error, OSError, ValidationError, ValueError) as exc:
                raise translate(exc, self.location, doing) from exc

        return cast(F, translated)

    return wrap


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[:3]) if text else type(exc).__name__
