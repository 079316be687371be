"""The SQLite backend of the session store: the only package that names `sqlite3`."""

from __future__ import annotations

from ..protocol import SchemaTooNewError, StoreError
from ..records import SessionInfo, SpanLink, StoredHit, StoredSession, TurnOutcome, role_and_text
from .schema import SCHEMA_VERSION
from .store import DB_NAME, Store

__all__ = [
    "DB_NAME",
    "SCHEMA_VERSION",
    "SchemaTooNewError",
    "SessionInfo",
    "SpanLink",
    "Store",
    "StoreError",
    "StoredHit",
    "StoredSession",
    "TurnOutcome",
    "role_and_text",
]
