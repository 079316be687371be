"""The wire between `blitz mcp` and the kernel (docs/mcp-server.md): typed requests in, typed
replies out, both JSON. Here, below both sides, so the server (cli/) and the kernel's endpoint
(notebook/outside.py) read one definition and cannot drift apart.

A request travels as a silent execute of `request_code(...)` over the kernel's own, signed
Jupyter connection; the reply comes back as one display of `REPLY_MIME` in that execute's
output.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

REPLY_MIME = "application/vnd.blitz.outside-reply+json"
EXPIRED = "not run: the client stopped waiting while the kernel was busy"
NOT_LOADED = "blitz_kernel is not loaded in this kernel: run %load_ext blitz_kernel in the notebook first"
OutsideStatus = Literal["ok", "error", "denied"]


class OutsideTool(BaseModel):
    """A tool as an outside client lists it."""

    name: str
    description: str
    parameters: dict[str, Any]
    read_only: bool


class OutsideImage(BaseModel):
    media_type: str
    data_base64: str


class OutsideRequest(BaseModel):
    """One request from outside: list the tools, call one, or run a whole turn."""

    kind: Literal["tools", "call", "turn"]
    client: str = Field(min_length=1, max_length=80)
    """Who asks, as the audit trail names it ("mcp:claude-code")."""
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    prompt: str | None = None
    expires_at: float | None = None
    """Unix time after which the client has stopped waiting: a request still queued behind a
    long cell then runs nothing (the client already reported "kernel busy")."""


class OutsideReply(BaseModel):
    """What the kernel answers: a result, or an error the client shows in one line."""

    status: OutsideStatus
    text: str = ""
    images: list[OutsideImage] = Field(default_factory=list)
    tools: list[OutsideTool] = Field(default_factory=list)
    session: str | None = None


def request_code(request: OutsideRequest) -> str:
    """The silent cell that carries `request` into the kernel (a JSON string literal: the
    request's text never becomes code)."""
    payload = json.dumps(request.model_dump_json())
    return f'await __import__("blitz_kernel.notebook.outside", fromlist=["serve"]).serve({payload})'
