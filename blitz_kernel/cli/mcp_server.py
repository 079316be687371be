"""`blitz mcp`: the live kernel as an MCP server for outside agents (docs/mcp-server.md).

The server never runs a tool itself: every call goes into the kernel (kernel_link.py), where
the extension runs it through the same tool batch as a `%%blitz` turn — approvals and the
headless policy, hooks, redaction, the audit trail (naming `mcp:<client>`) and a checkpoint
that `%blitz_undo` undoes. The tool list, with schemas, is asked of the kernel once at start.
"""

from __future__ import annotations

import argparse
import ipaddress
import secrets
import sys
from pathlib import Path
from typing import Any

from ..core.outside_wire import OutsideReply, OutsideRequest, OutsideTool
from .kernel_link import KernelLink, KernelLinkError, add_kernel_options, check_server_kernel, find_connection_file

TURN_TOOL = "blitz_turn"
TURN_DESCRIPTION = (
    "Run a whole blitz agent turn in the notebook's kernel with the notebook's own model and "
    "session, and return its answer, stop reason and usage."
)
TURN_SCHEMA = {
    "type": "object",
    "properties": {"prompt": {"type": "string", "description": "what to ask the blitz agent"}},
    "required": ["prompt"],
}
CELLS_URI = "blitz://notebook/cells"
CELL_TEMPLATE = "blitz://notebook/cells/{index}"
DEFAULT_CALL_TIMEOUT_S = 600.0
TOKEN_ENV = "BLITZ_MCP_TOKEN"


def parser(prog: str) -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog=f"{prog} mcp",
        description="Serve the live kernel's blitz tools over MCP (stdio by default). Every call runs "
        "in the kernel with the notebook's approvals, audit and undo. See docs/mcp-server.md.",
    )
    add_kernel_options(command, DEFAULT_CALL_TIMEOUT_S, "a call waits for a busy kernel and runs")
    command.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP on a loopback address instead of stdio")
    return command


def main(argv: list[str], prog: str = "blitz") -> int:
    args = parser(prog).parse_args(argv)
    try:
        address = loopback_address(args.http) if args.http else None
        connection = connection_file(args)
        if args.call_timeout <= 0:
            raise KernelLinkError("--call-timeout must be a positive number of seconds")
        link = KernelLink(connection, args.call_timeout)
    except KernelLinkError as error:
        print(f"blitz mcp: {error}", file=sys.stderr)
        return 1
    try:
        listed = link.ask(OutsideRequest(kind="tools", client="mcp:blitz-mcp"))
        if listed.status != "ok":
            raise KernelLinkError(listed.text)
        bridge = McpBridge(link, listed.tools)
        if address is None:
            import anyio

            anyio.run(bridge.serve_stdio)
        else:
            bridge.serve_http(*address)
    except KernelLinkError as error:
        print(f"blitz mcp: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    finally:
        link.close()
    return 0


def connection_file(args: argparse.Namespace) -> Path:
    if args.connection_file and args.kernel_id:
        raise KernelLinkError("give --connection-file or --kernel-id, not both")
    if args.server_url and not args.kernel_id:
        raise KernelLinkError("--server-url goes with --kernel-id")
    if args.connection_file:
        return Path(args.connection_file).expanduser()
    if args.kernel_id:
        if args.server_url:
            check_server_kernel(args.server_url, args.kernel_id)
        return find_connection_file(args.kernel_id)
    raise KernelLinkError(
        "no kernel given: pass --connection-file F (in a notebook: `%connect_info` names it) or --kernel-id ID"
    )


def loopback_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        raise KernelLinkError(f"--http needs HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}") from None
    if not loopback:
        raise KernelLinkError(f"--http listens on the loopback only (127.0.0.1, ::1 or localhost), not {host}")
    if not 0 < number < 65536:
        raise KernelLinkError(f"--http: port {port} is out of range")
    return host, number


class McpBridge:
    """The MCP side: lists the kernel's tools and forwards each call into the kernel."""

    def __init__(self, link: KernelLink, tools: list[OutsideTool]) -> None:
        self.link = link
        self.tools = tools

    def server(self) -> Any:
        import mcp_types as types
        from mcp.server.lowlevel import Server

        async def list_tools(ctx: Any, params: Any) -> Any:
            listed = [
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.parameters,
                    annotations=types.ToolAnnotations(
                        read_only_hint=tool.read_only, destructive_hint=not tool.read_only
                    ),
                )
                for tool in self.tools
            ]
            listed.append(
                types.Tool(
                    name=TURN_TOOL,
                    description=TURN_DESCRIPTION,
                    input_schema=TURN_SCHEMA,
                    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
                )
            )
            return types.ListToolsResult(tools=listed)

        async def call_tool(ctx: Any, params: Any) -> Any:
            import anyio

            client = f"mcp:{client_name(ctx)}"
            arguments = dict(params.arguments or {})
            if params.name == TURN_TOOL:
                prompt = arguments.get("prompt")
                if not isinstance(prompt, str) or not prompt.strip():
                    return error_result("blitz_turn needs a non-empty string `prompt`")
                request = OutsideRequest(kind="turn", client=client, prompt=prompt)
            else:
                request = OutsideRequest(kind="call", client=client, tool=params.name, arguments=arguments)
            try:
                reply = await anyio.to_thread.run_sync(self.link.ask, request)
            except KernelLinkError as error:
                return error_result(str(error))
            return call_result(reply)

        async def list_resources(ctx: Any, params: Any) -> Any:
            cells = types.Resource(
                uri=CELLS_URI,
                name="notebook cells",
                description="The notebook's cells with their outputs (text, errors; images listed)",
                mime_type="text/plain",
            )
            return types.ListResourcesResult(resources=[cells])

        async def list_templates(ctx: Any, params: Any) -> Any:
            cell = types.ResourceTemplate(
                uri_template=CELL_TEMPLATE,
                name="notebook cell",
                description="One cell of the notebook (0-based index) with its outputs",
                mime_type="text/plain",
            )
            return types.ListResourceTemplatesResult(resource_templates=[cell])

        async def read_resource(ctx: Any, params: Any) -> Any:
            import anyio
            from mcp.shared.exceptions import MCPError

            uri = str(params.uri)
            arguments = resource_arguments(uri)
            if arguments is None:
                raise MCPError(code=-32602, message=f"unknown resource {uri!r}: {CELLS_URI} or {CELL_TEMPLATE}")
            request = OutsideRequest(
                kind="call", client=f"mcp:{client_name(ctx)}", tool="notebook_read", arguments=arguments
            )
            try:
                reply = await anyio.to_thread.run_sync(self.link.ask, request)
            except KernelLinkError as error:
                raise MCPError(code=-32603, message=str(error)) from None
            if reply.status != "ok":
                raise MCPError(code=-32603, message=reply.text or reply.status)
            contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=reply.text)
            return types.ReadResourceResult(contents=[contents])

        return Server(
            "blitz-kernel",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_list_resources=list_resources,
            on_list_resource_templates=list_templates,
            on_read_resource=read_resource,
        )

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        server = self.server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    def serve_http(self, host: str, port: int) -> None:
        """Streamable HTTP at http://HOST:PORT/mcp, each request with the bearer token (from
        BLITZ_MCP_TOKEN, else a fresh one printed on stderr): nothing reachable without it."""
        import os

        import uvicorn

        token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
        app = BearerGate(self.server().streamable_http_app(host=host), token)
        shown = f"[{host}]" if ":" in host else host
        print(f"blitz mcp: serving http://{shown}:{port}/mcp", file=sys.stderr)
        if TOKEN_ENV not in os.environ:
            print(f"blitz mcp: bearer token {token}", file=sys.stderr)
        uvicorn.run(app, host=host, port=port, log_level="warning")


class BearerGate:
    """An ASGI wrapper that lets through only requests with `Authorization: Bearer <token>`."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not secrets.compare_digest(given, self.expected):
                await send(
                    {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await self.app(scope, receive, send)


def resource_arguments(uri: str) -> dict[str, Any] | None:
    """notebook_read's arguments for a resource URI; None for a URI that is not one of ours."""
    if uri == CELLS_URI:
        return {}
    prefix = CELLS_URI + "/"
    if uri.startswith(prefix) and uri[len(prefix) :].isdigit():
        return {"cells": [int(uri[len(prefix) :])]}
    return None


def client_name(ctx: Any) -> str:
    """The MCP client's own name (Claude Code says "claude-code"), for the audit trail."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    name = getattr(info, "name", None)
    if not name and isinstance(getattr(ctx, "meta", None), dict):
        name = (ctx.meta.get("clientInfo") or {}).get("name")
    text = "".join(c for c in str(name or "client") if c.isalnum() or c in "-_.")[:60]
    return text or "client"


def call_result(reply: OutsideReply) -> Any:
    import mcp_types as types

    content: list[Any] = [types.TextContent(type="text", text=reply.text or reply.status)]
    content += [types.ImageContent(type="image", data=i.data_base64, mime_type=i.media_type) for i in reply.images]
    return types.CallToolResult(content=content, is_error=reply.status != "ok")


def error_result(text: str) -> Any:
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
