"""The store seam holds: nothing outside the SQLite backend's package names `sqlite3`, the
engine's link catches only the store's typed errors, and the backend's classes are what the
protocols say."""

from __future__ import annotations

import ast
from pathlib import Path

from blitz_kernel.engine.store.locks import SessionLocks
from blitz_kernel.engine.store.protocol import SessionLockManager, SessionStore
from blitz_kernel.engine.store.sqlite import Store

PACKAGE = Path(__file__).resolve().parents[3] / "blitz_kernel"
BACKEND = PACKAGE / "engine" / "store" / "sqlite"


def names_sqlite3(path: Path) -> list[str]:
    """Where a module imports or names sqlite3 (an import, an attribute, a bare name)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "sqlite3" for alias in node.names):
            found.append(f"line {node.lineno}: import sqlite3")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlite3" and not node.level:
            found.append(f"line {node.lineno}: from sqlite3 import")
        elif isinstance(node, ast.Name) and node.id == "sqlite3":
            found.append(f"line {node.lineno}: sqlite3")
    return found


def test_nothing_outside_the_sqlite_backend_names_sqlite3():
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if BACKEND not in path.parents and (found := names_sqlite3(path))
    }
    assert offenders == {}


def test_the_check_sees_an_import(tmp_path):
    """The check above can fail: a module that imports sqlite3 is caught."""
    module = tmp_path / "m.py"
    module.write_text("import sqlite3\n\ntry:\n    pass\nexcept sqlite3.Error:\n    pass\n")
    assert names_sqlite3(module) == ["line 1: import sqlite3", "line 5: sqlite3"]


def test_the_sqlite_backend_implements_the_protocols(tmp_path):
    store = Store(tmp_path / "s.db")
    try:
        assert isinstance(store, SessionStore)
        assert isinstance(SessionLocks(tmp_path / "locks"), SessionLockManager)
    finally:
        store.close()
