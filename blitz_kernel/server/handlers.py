"""The server extension's HTTP endpoints, behind Jupyter Server's own authentication (the
same token or cookie as every other `/api` call; nothing listens anywhere new).

`GET  /blitz/completion?path=NOTEBOOK` → the workspace's completion settings (JSON).
`POST /blitz/completion` with a `CompletionRequest` → newline-delimited JSON chunks, flushed
as the model streams. A client that goes away (the user typed on) cancels the model call.
`GET  /blitz/panel/<view>` → the side panel's reads (panel_handlers.py, docs/panel.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from pydantic import ValidationError
from tornado import web
from tornado.iostream import StreamClosedError

from .completion import Completer, CompletionRequest
from .panel import Panel
from .panel_handlers import install_panel


class CompletionHandler(APIHandler):
    """Settings (GET) and one streamed suggestion (POST)."""

    def initialize(self, completer: Completer) -> None:
        self.completer = completer
        self._task: asyncio.Task[None] | None = None

    @web.authenticated
    def get(self) -> None:
        settings = self.completer.settings(self.get_argument("path", ""))
        reply: dict[str, Any] = settings.model_dump()
        reply["usage"] = self.completer.usage.total.model_dump()
        self.finish(json.dumps(reply))

    @web.authenticated
    async def post(self) -> None:
        try:
            request = CompletionRequest.model_validate_json(self.request.body or b"{}")
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(body)"
            raise web.HTTPError(400, reason=f"bad completion request: {where}: {first['msg']}") from None
        self.set_header("Content-Type", "application/x-ndjson")
        self.set_header("Cache-Control", "no-cache")
        self._task = asyncio.current_task()  # type: ignore[assignment]
        with contextlib.suppress(StreamClosedError, asyncio.CancelledError):
            async for chunk in self.completer.stream(request):
                self.write(chunk.model_dump_json(exclude_none=True) + "\n")
                await self.flush()
        self._task = None

    def on_connection_close(self) -> None:
        """The front end dropped the request (a new keystroke): stop the model call too."""
        if self._task is not None:
            self._task.cancel()


def install(server_app: Any) -> None:
    """Add the endpoints to the server's web app."""
    completer = Completer(Path(server_app.root_dir))
    base_url = server_app.web_app.settings["base_url"]
    route = url_path_join(base_url, "blitz", "completion")
    server_app.web_app.add_handlers(".*$", [(route, CompletionHandler, {"completer": completer})])
    server_app.log.info("blitz_kernel: inline completion at %s", route)
    install_panel(server_app, Panel(completer.workspaces))  # the side panel (docs/panel.md)
