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

import functools
import json
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

import psycopg
from psycopg import errors as pg_errors
from pydantic import ValidationError

from ..protocol import StoreBusyError, StoreDamagedError, StoreError, StoreUnavailableError

F = TypeVar("F", bound=Callable[..., Any])

BUSY = (pg_errors.QueryCanceled, pg_errors.LockNotAvailable, pg_errors.DeadlockDetected)
"""A statement timeout, a lock timeout, or a deadlock: the server is there but busy."""


class _Located(Protocol):
    location: str


def translate(exc: BaseException, location: str, doing: str) -> StoreError:
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, BUSY):
        return StoreBusyError(f"cannot {doing} the session store {location}: {detail}")
    if isinstance(exc, ValidationError | json.JSONDecodeError | UnicodeDecodeError):
        return StoreDamagedError(
            f"the session store {location} holds a record that does not parse: {detail}", what=location
        )
    return StoreUnavailableError(f"cannot {doing} the session store {location}: {detail}")


def edge(doing: str) -> Callable[[F], F]:
    """Translate what escapes a store method (`doing`: "read", "write to") into StoreError."""

    def wrap(method: F) -> F:
        @functools.wraps(method)
        def translated(self: _Located, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except StoreError:
                raise
            except (psycopg.Error, OSError, ValidationError, ValueError) as exc:
                raise translate(exc, self.location, doing) from exc

        return cast(F, translated)

    return wrap
