"""The kernel side of `blitz mcp` and `blitz acp` (docs/mcp-server.md, docs/acp.md): requests from clients outside the
notebook, run in the kernel through the engine, never beside it.

The MCP server sends each request over the kernel's own Jupyter connection (HMAC-signed
messages, the connection file's key) as a silent execute of `serve(...)`; the kernel runs it
on its loop between the user's cells, so an outside call never mutates the namespace while a
cell runs. The reply goes back as one display of `REPLY_MIME` in that execute's output, which a
notebook front end ignores (the request is not one of its cells).

A tool call runs as `Workspace.call_tool` in the notebook's current session: the same tool
batch as a `%%blitz` turn (policies, the headless policy, hooks, redaction, audit naming the
client, a checkpoint `%blitz_undo` undoes).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import ValidationError

from ..core.outside_wire import EXPIRED, NOT_LOADED, REPLY_MIME, OutsideMessage, OutsideReply, OutsideRequest
from ..engine.workspace.outside import OutsideResult, usage_line


async def serve(raw: str) -> None:
    """Answer one request (JSON of an OutsideRequest) with a display of its reply."""
    reply = await answer(raw)
    from IPython.display import publish_display_data

    publish_display_data({REPLY_MIME: reply.model_dump(mode="json"), "text/plain": reply.status})


async def answer(raw: str) -> OutsideReply:
    try:
        request = OutsideRequest.model_validate_json(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "request"
        return OutsideReply(status="error", text=f"malformed request: {where}: {first['msg']}")
    if request.expires_at is not None and time.time() > request.expires_at:
        return OutsideReply(status="error", text=EXPIRED)
    if request.kind == "tools":  # listing at start says nothing about what a client did
        return await _answer(request)
    from .clients import book

    refused = book.refusal(request.client)
    if refused is not None:
        return OutsideReply(status="denied", text=refused)
    reply = await _answer(request)
    book.seen(request.client, request.tool or request.kind, reply.status)
    return reply


async def _answer(request: OutsideRequest) -> OutsideReply:
    from .extension import loaded_magics

    magics = loaded_magics()
    if magics is None:
        return OutsideReply(status="error", text=NOT_LOADED)
    from IPython.core.error import UsageError

    from ..errors import BlitzError

    try:
        workspace = magics.workspace()
    except UsageError as error:  # the workspace's configuration cannot be read
        return OutsideReply(status="error", text=str(error))
    session = request.session or magics.current_session()
    try:
        if request.kind == "tools":
            return OutsideReply(status="ok", tools=workspace.outside.tools(), session=session)
        if request.kind == "call":
            if not request.tool:
                return OutsideReply(status="error", text="malformed request: a call needs `tool`")
            from ..engine.turn.options import FrontEnd
            from .outside_approval import notebook_approver

            front_end = FrontEnd(approver=notebook_approver(workspace, request.client))
            result = await workspace.outside.call_tool(
                session, request.tool, request.arguments, request.client, front_end
            )
            return _from_result(result, session)
        if request.kind == "history":
            return OutsideReply(status="ok", history=history_of(workspace, session), session=session)
        if request.kind == "undo":
            report = await workspace.undo(session)
            return OutsideReply(status="ok", text=report.text(), session=session)
        if not request.prompt or not request.prompt.strip():
            return OutsideReply(status="error", text=f"malformed request: a {request.kind} needs a non-empty `prompt`")
        if request.kind == "prompt":
            from .outside_stream import run_prompt

            return await run_prompt(workspace, session, request)
        if request.kind == "aside":
            result = await workspace.aside(session, request.prompt)
            return OutsideReply(status="ok" if not result.error else "error", text=result.error or result.text)
        return await _turn(workspace, session, request.prompt, request.client)
    except BlitzError as error:  # a session busy with a turn or a compaction
        return OutsideReply(status="error", text=str(error), session=session)


def history_of(workspace: Any, session: str) -> list[OutsideMessage]:
    """The session's conversation as text, for a client that loads it (`session/load`)."""
    from ..core.history import AssistantMessage, TextPart, UserMessage
    from ..engine.store.locks import check_session_name

    if check_session_name(session) not in workspace.sessions.names():
        return []
    messages: list[OutsideMessage] = []
    for message in workspace.session(session).history:
        if isinstance(message, UserMessage):
            text = "".join(part.text for part in message.parts if isinstance(part, TextPart))
            messages.append(OutsideMessage(role="user", text=text))
        elif isinstance(message, AssistantMessage):
            if message.thought:
                messages.append(OutsideMessage(role="thought", text=message.thought))
            if message.text:
                messages.append(OutsideMessage(role="assistant", text=message.text))
    return messages


def _from_result(result: OutsideResult, session: str) -> OutsideReply:
    return OutsideReply(status=result.status, text=result.text, images=result.images, session=session)


async def _turn(workspace: Any, session: str, prompt: str, client: str) -> OutsideReply:
    """A whole blitz turn for `client`: its text, stop reason and usage. Its calls that ask are
    asked in the notebook when its front end is connected, else the headless policy decides."""
    from ..engine.turn.options import FrontEnd, RunOptions
    from .outside_approval import notebook_approver

    front_end = FrontEnd(caller=client, approver=notebook_approver(workspace, client))
    result = await workspace.run_turn(prompt, session, RunOptions(), front_end)
    lines = [result.text] if result.text else []
    if result.error:
        lines.append(f"error: {result.error}")
    lines.append(f"stop: {result.stop_reason}; {usage_line(result.usage)}")
    status = "ok" if result.stop_reason == "end_turn" else "error"
    return OutsideReply(status=status, text="\n\n".join(lines), session=session)
