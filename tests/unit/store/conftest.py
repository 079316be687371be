"""The store conformance suite's backends: every test that takes `store_backend` runs once per
backend. A new backend is proven by adding one `Backend` to BACKENDS (docs/store.md).

The Postgres backend runs against a real server that this test session starts itself
(tests/helpers/postgres.py), once for all its tests; each test's workspace is its own
`tmp_path`, and the store keeps every workspace's sessions apart, so the tests share the
database without seeing each other's rows. Without PostgreSQL installed they fail, never skip."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.usage import Price
from blitz_kernel.engine.store.protocol import SessionStore
from blitz_kernel.engine.store.sessions import SessionBook
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel


@dataclass(frozen=True)
class Backend:
    """How the suite reaches one backend: the `store.url` a workspace is opened with (None:
    the default) and a bare store on the same data, for protocol-level tests."""

    name: str
    url: Callable[[Path], str | None]
    bare: Callable[[Path], SessionStore]

    def overrides(self, root: Path) -> dict[str, Any]:
        url = self.url(root)
        return {} if url is None else {"store.url": url}

    def book(self, root: Path) -> SessionBook:
        """A durable book of the workspace `root`, its home beside it (`root/home`)."""
        return SessionBook.for_workspace(root, url=self.url(root), home=root / "home")

    def workspace(self, root: Path, steps: list[Any], **overrides: Any) -> tuple[Workspace, ScriptedModel]:
        model = ScriptedModel(steps, price=Price(input=1.0, output=2.0))
        merged = {**self.overrides(root), **overrides}
        return Workspace.open(root, model=model, overrides=merged, environ={}, home=root / "home"), model


def _sqlite_bare(root: Path) -> SessionStore:
    from blitz_kernel.engine.store.sqlite import Store

    return Store.for_workspace(root)


def _unbound(root: Path) -> Any:
    raise AssertionError("the postgres backend is bound to its server by the store_backend fixture")


BACKENDS = [
    Backend("sqlite", url=lambda root: None, bare=_sqlite_bare),
    Backend("postgres", url=_unbound, bare=_unbound),
]


def postgres_backend(url: str) -> Backend:
    """The Postgres backend on the server at `url`."""

    def bare(root: Path) -> SessionStore:
        from blitz_kernel.engine.store.postgres import PostgresStore, owner, workspace_identity

        return PostgresStore(url, owner=owner(), workspace=workspace_identity(root))

    return replace(BACKENDS[1], url=lambda root: url, bare=bare)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server for the whole test session; its URL. Fails (never skips)
    when PostgreSQL is not installed."""
    from tests.helpers.postgres import PostgresMissing, PostgresServer

    try:
        server = PostgresServer().start()
    except PostgresMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
def store_backend(request: pytest.FixtureRequest) -> Backend:
    backend: Backend = request.param
    if backend.name == "postgres":
        return postgres_backend(request.getfixturevalue("postgres_url"))
    return backend
