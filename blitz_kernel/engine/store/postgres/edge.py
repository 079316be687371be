"""The PostgreSQL backend's edge: psycopg's failures become the store's typed errors here, so
nothing outside this package names `psycopg` (protocol.py).

- the server unreachable, the connection lost, a statement timeout or a lock that could not
  be had: StoreUnavailableError (StoreBusyError for the last two), naming the server without
  its password;
- a row that does not parse: StoreDamagedError (the replay, shared with SQLite, names it);
- anything else of psycopg's (a permission the role lacks, a constraint): StoreUnavailableError
  with the server's own first line.
"""

from __future__ import annotations

import json

import psycopg
from psycopg import errors as pg_errors
from pydantic import ValidationError

from ..edge import edge_for
from ..protocol import StoreBusyError, StoreDamagedError, StoreError, StoreUnavailableError

BUSY = (pg_errors.QueryCanceled, pg_errors.LockNotAvailable, pg_errors.DeadlockDetected)
"""A statement timeout, a lock timeout, or a deadlock: the server is there but busy."""


def translate(exc: BaseException, location: str, doing: str) -> StoreError:
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, BUSY):
        return StoreBusyError(f"cannot {doing} the session store {location}: {detail}")
    if isinstance(exc, ValidationError | json.JSONDecodeError | UnicodeDecodeError):
        return StoreDamagedError(
            f"the session store {location} holds a record that does not parse: {detail}", what=location
        )
    return StoreUnavailableError(f"cannot {doing} the session store {location}: {detail}")


edge = edge_for((psycopg.Error, OSError, ValidationError, ValueError), translate)
"""Wraps every public method of the backend: its errors leave it typed (store/edge.py)."""
