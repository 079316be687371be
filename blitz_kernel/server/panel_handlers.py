"""The side panel's HTTP endpoints (docs/interface.md), behind Jupyter Server's own
authentication like every `/api` call. Each is a `GET` with the notebook's `path` and answers
one JSON model of panel.py; a refused request (no such session, a path outside the root) is a
400 whose reason says why in one line.

The store is read on a worker thread, so a store that waits on a busy lock never holds up the
server's event loop (and with it inline completion).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from pydantic import BaseModel
from tornado import web

from ..errors import BlitzError
from .panel import Panel

VIEWS = ("sessions", "search", "transcript", "usage", "budget", "audit")


class PanelHandler(APIHandler):
    """`GET /blitz/panel/<view>?path=NOTEBOOK&…`."""

    def initialize(self, panel: Panel, pool: ThreadPoolExecutor) -> None:
        self.panel, self.pool = panel, pool

    @web.authenticated
    async def get(self, view: str) -> None:
        path = self.get_argument("path", "")
        read = self._view(view, path)
        try:
            reply = await asyncio.get_running_loop().run_in_executor(self.pool, read)
        except BlitzError as error:
            raise web.HTTPError(400, reason=_one_line(str(error))) from None
        self.set_header("Content-Type", "application/json")
        self.finish(reply.model_dump_json())

    def _view(self, view: str, path: str) -> Callable[[], BaseModel]:
        panel, arg = self.panel, self._optional
        if view == "sessions":
            return lambda: panel.sessions(path)
        if view == "search":
            query, session = self.get_argument("q", ""), arg("session")
            return lambda: panel.search(path, query, session)
        if view == "usage":
            session = arg("session")
            return lambda: panel.usage(path, session)
        name = self.get_argument("session", "")
        if not name:
            raise web.HTTPError(400, reason=f"{view}: the `session` argument is missing")
        if view == "transcript":
            return lambda: panel.transcript(path, name)
        if view == "budget":
            return lambda: panel.budget(path, name)
        tool, decision = arg("tool"), arg("decision")
        return lambda: panel.audit(path, name, tool, decision)

    def _optional(self, name: str) -> str | None:
        return self.get_argument(name, "") or None


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def install_panel(server_app: Any, panel: Panel) -> None:
    """Add the panel's endpoints to the server's web app."""
    base_url = server_app.web_app.settings["base_url"]
    route = url_path_join(base_url, "blitz", "panel", f"({'|'.join(VIEWS)})")
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="blitz-panel")
    server_app.web_app.add_handlers(".*$", [(route, PanelHandler, {"panel": panel, "pool": pool})])
    server_app.log.info("blitz_kernel: side panel at %s", url_path_join(base_url, "blitz", "panel"))
