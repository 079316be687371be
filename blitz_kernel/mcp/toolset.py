"""MCP tools and resources as our `Tool`s (docs/mcp.md).

Each server tool becomes `mcp__<server>__<tool>` with the server's own JSON schema and
description; its arguments pass through as a dict. Every MCP tool is MUTATING whatever the
server claims: `ask` by default and refused in plan and read-only modes. A `readOnlyHint` is
shown in the description, never used as a permission. Resources are read with the read-only
tools `list_mcp_resources` and `read_mcp_resource`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from opentelemetry import trace
from pydantic import BaseModel, Field

from ..core.history import ImagePart
from ..tools.registry import PassthroughArgs, Tool, ToolContext, ToolError, ToolKind, ToolOutput
from . import MCP_PREFIX, RESOURCE_TOOLS, tool_name
from .manager import MalformedMessage, McpManager, McpUnavailable, ServerConnection, describe_error

MAX_NAME = 64
"""OpenAI-compatible providers refuse longer function names."""
_NOT_A_NAME_CHAR = re.compile(r"[^A-Za-z0-9_-]")
MAX_RESOURCE_CHARS = 100_000
UNAVAILABLE_NOTE = (
    "\n\n## MCP servers not available in this turn\n{lines}\nTheir tools are missing; do not try to call them."
)


@dataclass
class Offer:
    """The MCP tools one turn is offered, and what the user and the model are told about the
    servers that could not be used."""

    tools: dict[str, Tool] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    """Server name → one clear message (the front end shows it; the model gets a note)."""
    notices: list[str] = field(default_factory=list)
    """Tools renamed or left out (names that collide once sanitised, or empty ones): said
    once per server start."""

    def system_note(self) -> str:
        if not self.problems:
            return ""
        return UNAVAILABLE_NOTE.format(lines="\n".join(f"- {name}" for name in self.problems))


def wanted_servers(requested: list[str] | None, enabled: list[str]) -> tuple[list[str], list[str] | None, bool]:
    """Which servers a tool list asks for: (servers, patterns or None for all, resources?).

    `requested` None is the built-in agent: every enabled server, all tools, resources too.
    Otherwise `mcp__<server>__<tool>` and `mcp__<server>__*` (any `*` pattern) pick tools, and
    naming a resource tool or any MCP tool offers the resource tools."""
    if requested is None:
        return enabled, None, bool(enabled)
    patterns = [name for name in requested if name.startswith(MCP_PREFIX)]
    servers = [s for s in enabled if any(fnmatchcase(s, p[len(MCP_PREFIX) :].split("__", 1)[0]) for p in patterns)]
    resources = any(name in RESOURCE_TOOLS for name in requested) or bool(servers)
    return servers, patterns, resources


async def offer(
    manager: McpManager,
    requested: list[str] | None,
    *,
    vision: bool,
    starting: Callable[[list[str]], Awaitable[None]] | None = None,
) -> Offer:
    """Start the servers a turn's tool list asks for and build their tools (the turn's
    setup awaits this; each server is bounded by its own timeout). `starting` hears the names
    of the servers about to be launched first, so the cell can say so while they start."""
    servers, patterns, resources = wanted_servers(requested, manager.enabled())
    result = Offer()
    if not servers:
        return result
    launching = manager.to_start(servers)
    if launching and starting is not None:
        await starting(launching)
    result.problems = await manager.ensure(servers)
    for server in servers:
        if server in result.problems:
            continue
        connection = manager.connections[server]
        if not connection.names_noticed:
            connection.names_noticed = True
            result.notices.extend(tool_names(connection)[1])
        for built in server_tools(manager, connection, vision=vision):
            if patterns is None or any(fnmatchcase(built.name, p) for p in patterns):
                result.tools.setdefault(built.name, built)
    offered = [s for s in servers if s not in result.problems]
    if resources and offered:
        result.tools.update({t.name: t for t in resource_tools(manager, offered)})
    return result


def model_tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, with characters providers refuse replaced and at most 64 long."""
    return _NOT_A_NAME_CHAR.sub("_", tool_name(server, tool))[:MAX_NAME]


def tool_names(connection: ServerConnection) -> tuple[dict[int, str], list[str]]:
    """The name each listed tool gets (by its position in the server's list), and a notice
    for each one renamed or left out. Providers refuse a whole request whose function names
    repeat, and sanitising makes `a b` and `a_b` one name: the later ones get `_2`, `_3`; a
    tool without a name cannot be called and is left out."""
    names: dict[int, str] = {}
    notices: list[str] = []
    used: set[str] = set()
    server = connection.name
    for index, listed in enumerate(connection.tools):
        if not (listed.name or "").strip():
            notices.append(f"MCP server {server!r} lists a tool without a name (tool {index + 1}); it is left out")
            continue
        name = model_tool_name(server, listed.name)
        suffix = 2
        while name in used:
            tail = f"_{suffix}"
            name = model_tool_name(server, listed.name)[: MAX_NAME - len(tail)] + tail
            suffix += 1
        if name != model_tool_name(server, listed.name):
            notices.append(
                f"MCP server {server!r}: tool {listed.name!r} is offered as {name} "
                f"({model_tool_name(server, listed.name)} is taken by another of its tools)"
            )
        used.add(name)
        names[index] = name
    return names, notices


def server_tools(manager: McpManager, connection: ServerConnection, *, vision: bool) -> list[Tool]:
    """The server's tools that its `tools` allow-list lets through, each under its own name."""
    allow = connection.entry.config.tools
    names, _ = tool_names(connection)
    tools: list[Tool] = []
    for index, listed in enumerate(connection.tools):
        if index not in names:
            continue
        if allow is not None and not any(fnmatchcase(listed.name, pattern) for pattern in allow):
            continue
        tools.append(
            Tool(
                name=names[index],
                description=describe_tool(connection.name, listed),
                args_model=PassthroughArgs,
                kind=ToolKind.MUTATING,  # a server's own hints never loosen policy
                func=_caller(manager, connection.name, listed.name, vision),
                schema=_object_schema(listed.input_schema),
            )
        )
    return tools


def describe_tool(server: str, listed: Any) -> str:
    """The server's description, the server's name, and its read-only claim when it makes one."""
    text = " ".join((listed.description or listed.title or listed.name).split())
    notes = [f"MCP server {server}"]
    annotations = listed.annotations
    if annotations is not None and annotations.read_only_hint:
        notes.append("the server says it is read-only")
    return f"{text} ({'; '.join(notes)})"


def _object_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """Providers want an object schema with `properties`; servers may leave them out."""
    result = dict(schema or {})
    result.setdefault("type", "object")
    if result.get("type") == "object":
        result.setdefault("properties", {})
    return result


def _caller(manager: McpManager, server: str, tool: str, vision: bool) -> Any:
    async def call(args: BaseModel, ctx: ToolContext) -> str | ToolOutput:
        # the tool call's span (current here) names the server and its own tool name.
        trace.get_current_span().set_attributes({"blitz.mcp.server": server, "blitz.mcp.tool": tool})
        arguments = args.as_dict() if isinstance(args, PassthroughArgs) else args.model_dump()
        connection = await _connection(manager, server)
        timeout = _timeout(connection, ctx)
        result = await _guarded(
            connection, timeout, connection.client().call_tool(tool, arguments, read_timeout_seconds=timeout)
        )
        return render_result(result, vision=vision)

    return call


async def _connection(manager: McpManager, server: str) -> ServerConnection:
    try:
        return await manager.connection(server)
    except McpUnavailable as exc:
        raise ToolError(str(exc)) from None


def _timeout(connection: ServerConnection, ctx: ToolContext) -> float:
    """The server's timeout, cut to what is left of the turn's --timeout."""
    timeout = connection.entry.config.timeout_s
    if ctx.deadline is not None:
        timeout = max(0.05, min(timeout, ctx.deadline - time.monotonic()))
    return timeout


async def _guarded(connection: ServerConnection, limit_s: float, request: Any) -> Any:
    """Await an SDK request; its failures become errors the model reads. A cancelled call is
    cancelled on the server too: the SDK sends `notifications/cancelled` when its caller is
    cancelled."""
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    name = connection.name
    try:
        return await connection.answer_or_malformed(request)
    except MalformedMessage as exc:
        raise ToolError(f"MCP server {name!r} sent malformed JSON-RPC ({exc}); see the kernel log") from None
    except McpUnavailable as exc:
        raise ToolError(str(exc)) from None
    except MCPError as exc:
        if exc.code == REQUEST_TIMEOUT:
            raise ToolError(f"MCP server {name!r} did not answer within {limit_s:g} s") from None
        if exc.code == CONNECTION_CLOSED or not connection.alive:
            cause = f"the connection closed during the call ({exc.message})"
            connection.mark_dead(cause)
            raise ToolError(f"MCP server {name!r} stopped: {cause}; it is started again on its next use") from None
        raise ToolError(f"MCP server {name!r}: {exc.message}") from None
    except (ValueError, RuntimeError) as exc:  # a result the SDK could not accept
        raise ToolError(f"MCP server {name!r}: {describe_error(exc)}") from None
    except Exception as exc:
        # The transport failed (an HTTP server that went away, a pipe that broke): connect
        # afresh on the next use rather than reuse a broken session.
        cause = describe_error(exc)
        connection.mark_dead(cause)
        raise ToolError(f"MCP server {name!r} failed: {cause}; it is connected again on its next use") from None


def render_result(result: Any, *, vision: bool) -> str | ToolOutput:
    """A CallToolResult as what the model reads: text, images (for models that see them; the
    card shows them either way), and structured content as JSON when the text lacks it."""
    texts, images = _content(result.content)
    structured = result.structured_content
    if structured is not None and not _text_carries(texts, structured):
        texts.append(json.dumps(structured, ensure_ascii=False, indent=1))
    text = "\n".join(texts)
    if result.is_error:
        raise ToolError(text or "the tool reported an error")
    if not images:
        return text
    if not vision:
        note = f"[{len(images)} image(s) not shown: this model cannot see images]"
        return ToolOutput(text="\n".join(filter(None, (text, note))), display_images=images)
    return ToolOutput(text=text or f"{len(images)} image(s) follow", images=images, display_images=images)


def _content(blocks: list[Any]) -> tuple[list[str], list[ImagePart]]:
    texts: list[str] = []
    images: list[ImagePart] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "image":
            images.append(ImagePart(media_type=block.mime_type, data_base64=block.data))
        elif kind == "resource":
            texts.append(_resource_text(block.resource))
        elif kind == "resource_link":
            texts.append(f"[resource {block.uri}" + (f" ({block.name})" if block.name else "") + "]")
        else:
            texts.append(f"[{kind or 'unknown'} content omitted]")
    return texts, images


def _resource_text(contents: Any) -> str:
    text = getattr(contents, "text", None)
    if text is not None:
        return text if len(text) <= MAX_RESOURCE_CHARS else text[:MAX_RESOURCE_CHARS] + "\n[… truncated]"
    mime = contents.mime_type or "binary"
    return f"[{mime} content of {contents.uri}, {len(contents.blob) * 3 // 4} bytes, not shown]"


def _text_carries(texts: list[str], structured: Any) -> bool:
    """True when the text blocks already say everything the structured content says, so
    sending it too would only double the tokens: a text block is the structured content as
    JSON (servers SHOULD send both); or the structured content wraps one text block under a
    single key (the SDK's `{"result": …}`, the filesystem server's `{"content": …}`); or it
    holds only strings, each already in the text."""
    if isinstance(structured, dict) and len(structured) == 1:
        [value] = structured.values()
        if any(text == value or text == json.dumps(value, ensure_ascii=False) for text in texts):
            return True
    for text in texts:
        try:
            if json.loads(text) == structured:
                return True
        except ValueError:
            continue
    leaves = list(_leaves(structured))
    joined = "\n".join(texts)
    return bool(leaves) and all(isinstance(leaf, str) and leaf in joined for leaf in leaves)


def _leaves(value: Any) -> Iterator[Any]:
    """The scalar values inside nested dicts and lists."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


# -- resources ---------------------------------------------------------------------------------


class ListResourcesArgs(BaseModel):
    server: str | None = Field(default=None, description="one server's resources; all servers when left out")


class ReadResourceArgs(BaseModel):
    server: str = Field(description="the MCP server that has the resource")
    uri: str = Field(description="the resource's URI, as list_mcp_resources shows it")


def resource_tools(manager: McpManager, servers: list[str]) -> list[Tool]:
    """`list_mcp_resources` and `read_mcp_resource` over the offered servers (READ_ONLY)."""

    def check(server: str) -> None:
        if server not in servers:
            raise ToolError(f"no MCP server {server!r} in this turn; servers: {', '.join(servers) or 'none'}")

    async def list_resources(args: BaseModel, ctx: ToolContext) -> str:
        assert isinstance(args, ListResourcesArgs)
        if args.server is not None:
            check(args.server)
        lines: list[str] = []
        for server in [args.server] if args.server else servers:
            connection = await _connection(manager, server)
            client = connection.client()
            if client.server_capabilities.resources is None:
                lines.append(f"{server}: (no resources)")
                continue
            listed = await _guarded(connection, _timeout(connection, ctx), client.list_resources())
            for resource in listed.resources:
                extra = ", ".join(filter(None, (resource.mime_type, resource.description)))
                lines.append(f"{server}: {resource.uri} — {resource.name}" + (f" ({extra})" if extra else ""))
            if not listed.resources:
                lines.append(f"{server}: (no resources)")
        return "\n".join(lines) or "no resources"

    async def read_resource(args: BaseModel, ctx: ToolContext) -> str | ToolOutput:
        assert isinstance(args, ReadResourceArgs)
        check(args.server)
        connection = await _connection(manager, args.server)
        result = await _guarded(connection, _timeout(connection, ctx), connection.client().read_resource(args.uri))
        texts = [_resource_text(contents) for contents in result.contents]
        return "\n".join(texts) or "(empty resource)"

    return [
        Tool(
            name=RESOURCE_TOOLS[0],
            description="List the resources of the MCP servers offered in this turn (uri, name, type).",
            args_model=ListResourcesArgs,
            kind=ToolKind.READ_ONLY,
            func=list_resources,
        ),
        Tool(
            name=RESOURCE_TOOLS[1],
            description="Read one resource of an MCP server by its URI (see list_mcp_resources).",
            args_model=ReadResourceArgs,
            kind=ToolKind.READ_ONLY,
            func=read_resource,
        ),
    ]
