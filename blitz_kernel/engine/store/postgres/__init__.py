"""The PostgreSQL backend of the session store: the only package that names `psycopg`."""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from .locks import PostgresLocks
from .schema import SCHEMA_VERSION
from .store import PostgresStore

__all__ = ["SCHEMA_VERSION", "PostgresLocks", "PostgresStore", "open_postgres", "owner", "workspace_identity"]


def owner(environ: dict[str, str] | None = None) -> str:
    """Whose sessions these are: the Hub's user, else the OS user (its uid when the system
    has no name for it, as in some containers)."""
    names = os.environ if environ is None else environ
    hub_user = names.get("JUPYTERHUB_USER")
    if hub_user:
        return hub_user
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return f"uid-{os.getuid()}"


def workspace_identity(workspace: Path) -> str:
    """The workspace's identity in a shared store: its absolute path (on a Hub the same on
    every host the user's pod lands on)."""
    return str(workspace.resolve())


def open_postgres(url: str, workspace: Path, viewer: bool = False) -> tuple[PostgresStore, PostgresLocks]:
    """The store and its locks for this user's sessions of `workspace`; StoreError if the
    server cannot be reached or its schema is newer (`viewer`: or not this version's)."""
    store = PostgresStore(url, owner=owner(), workspace=workspace_identity(workspace), viewer=viewer)
    return store, PostgresLocks(store)
