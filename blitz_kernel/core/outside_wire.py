"""The wire between `blitz mcp` / `blitz acp` and the kernel (docs/mcp-server.md,
docs/acp.md): typed requests in, typed replies out, both JSON. Here, below both sides, so the
servers (cli/) and the kernel's endpoint (notebook/outside.py) read one definition and cannot
drift apart.

A request travels as a silent execute of `request_code(...)` over the kernel's own, signed
Jupyter connection; the reply comes back as one display of `REPLY_MIME` in that execute's
output. A streamed turn (`prompt`) also displays `EVENT_MIME` payloads while it runs (the
turn's events, permission requests, a plan to review); the client answers those, and stops or
steers the turn, with a comm_open to CONTROL_TARGET on the same signed connection: ipykernel
dispatches comm messages while the async execute still runs.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field

REPLY_MIME = "application/vnd.blitz.outside-reply+json"
EVENT_MIME = "application/vnd.blitz.outside-event+json"
CONTROL_TARGET = "blitz.outside"
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
    """One request from outside: list the tools, call one, run a whole turn (`turn`: its
    answer only; `prompt`: streamed, with permission requests going back to the client),
    read a session's history, ask a side question, or undo the session's newest turn."""

    kind: Literal["tools", "call", "turn", "prompt", "history", "aside", "undo"]
    client: str = Field(min_length=1, max_length=80)
    """Who asks, as the audit trail names it ("mcp:claude-code")."""
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    prompt: str | None = None
    session: str | None = None
    """The blitz session it runs in; None: the notebook's current session."""
    stream: str | None = None
    """The id a streamed turn's events and the client's controls carry (`prompt`)."""
    plan: bool = False
    """A plan-only turn (`prompt`)."""
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
    stop_reason: str | None = None
    """How a turn ended (`prompt`, `turn`): end_turn, stopped, max_turns, error, …"""
    history: list[OutsideMessage] = Field(default_factory=list)
    """The session's conversation as text (`history`)."""


class OutsideMessage(BaseModel):
    """One message of a session's history as an outside client replays it."""

    role: Literal["user", "assistant", "thought"]
    text: str


class OutsideEvent(BaseModel):
    """What a streamed turn shows while it runs: one engine event (its JSON, the engine's
    Event union) or a plan waiting for review."""

    stream: str
    event: dict[str, Any] | None = None
    plan_review: PlanToReview | None = None
    acked: str | None = None
    """The id of a control the turn has answered (a steering message is queued, Stop is asked)."""
    refused: str | None = None
    """Why the turn could not take that control (one line), when it could not."""
    settled: str | None = None
    """The id of a permission request answered in the notebook first: stop asking the client."""


class PlanToReview(BaseModel):
    request_id: str
    plan: str


class OutsideDecision(BaseModel):
    call_id: str
    decision: Literal["allow", "always", "deny"]
    reason: str | None = None


class OutsideControl(BaseModel):
    """The client's word to a running streamed turn: the answer to a permission request or a
    plan review, Stop, or a steering message (the `data` of a comm_open to CONTROL_TARGET)."""

    stream: str
    kind: Literal["answer", "plan", "stop", "steer"]
    id: str | None = None
    """When given, the kernel acknowledges a steer or a stop with an event `acked` = id."""
    request_id: str | None = None
    decisions: list[OutsideDecision] = Field(default_factory=list)
    approved: bool = False
    text: str | None = None


OutsideReply.model_rebuild()
OutsideEvent.model_rebuild()


def request_code(request: OutsideRequest) -> str:
    """The silent cell that carries `request` into the kernel (a JSON string literal: the
    request's text never becomes code)."""
    payload = json.dumps(request.model_dump_json())
    return f'await __import__("blitz_kernel.notebook.outside", fromlist=["serve"]).serve({payload})'
