"""The store conformance suite's backends: every test that takes `store_backend` runs once per
backend. A new backend is proven by adding one `Backend` to BACKENDS (docs/store.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


BACKENDS = [Backend("sqlite", url=lambda root: None, bare=_sqlite_bare)]


@pytest.fixture(params=BACKENDS, ids=lambda backend: backend.name)
def store_backend(request: pytest.FixtureRequest) -> Backend:
    return request.param
