"""A real MCP server for the tests, written with the SDK's server side.

    python tests/mcp_server.py                      # stdio
    python tests/mcp_server.py --http               # streamable HTTP on 127.0.0.1, a free port;
                                                    # prints "PORT <n>" once it listens
    python tests/mcp_server.py --mute               # never answers (reads stdin, says nothing)
    python tests/mcp_server.py --garble             # stdio; `garble`'s reply is broken JSON

Tools: `echo` (text, read-only hint), `slow` (sleeps), `garble` (with `--garble`, its reply
reaches the client as a line that is not JSON-RPC), `fail` (raises), `image` (a small PNG),
`crash` (the process exits mid-call), `structured` (structured content), `read_text` (the
text again as `structuredContent` `{"content": text}`, as the reference filesystem server's
`read_text_file` answers). One resource:
`notes://readme`. With BLITZ_TEST_MCP_LOG set, `slow` writes there when it starts and when it
is cancelled. `--pid-file PATH` writes the server's pid there (the kernel test checks that
it is gone after shutdown).
"""

import argparse
import asyncio
import base64
import os
import socket
import sys
import time

from mcp.server.mcpserver import Image, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
README = "The warehouse holds 3 tables: orders, customers, items."
GARBLED = "GARBLED-REPLY"


def note(text: str) -> None:
    """Append a line to the file named by BLITZ_TEST_MCP_LOG (what the tests read)."""
    path = os.environ.get("BLITZ_TEST_MCP_LOG")
    if path:
        with open(path, "a") as file:
            file.write(text + "\n")


def build_server() -> MCPServer:
    server = MCPServer("blitz-test-server", log_level="WARNING")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str, times: int = 1) -> str:
        """Echo the text back, `times` times."""
        return " ".join([text] * times)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep for `seconds`, then say so."""
        note("slow started")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            note("slow cancelled")  # the client's notifications/cancelled reached the server
            raise
        return f"slept {seconds:g} s"

    @server.tool()
    def garble() -> str:
        """Answer with a marker that `--garble` turns into a line that is not JSON-RPC."""
        return GARBLED

    @server.tool()
    def fail(reason: str = "boom") -> str:
        """Always fails."""
        raise ValueError(f"fail tool failed: {reason}")

    @server.tool()
    def image() -> Image:
        """A 1×1 PNG."""
        return Image(data=PNG_1X1, format="png")

    @server.tool()
    def crash() -> str:
        """Exits the server process in the middle of the call."""
        sys.stderr.write("crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)

    @server.tool()
    def structured(city: str) -> dict[str, float | str]:
        """Weather as structured content."""
        return {"city": city, "celsius": 21.5}

    @server.tool()
    def read_text(text: str) -> CallToolResult:
        """The text, and the same text as structured content (the filesystem server's way)."""
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"content": text})

    @server.resource("notes://readme", name="readme", mime_type="text/plain", description="what is in the warehouse")
    def readme() -> str:
        return README

    return server


def serve_http(server: MCPServer) -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    print(f"PORT {port}", flush=True)
    uv.run(sockets=[sock])


class _Garbling:
    """The server's stdout, writing any message that carries GARBLED as broken JSON."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    async def write(self, text: str) -> None:
        if GARBLED in text:
            text = '{"jsonrpc": "2.0", "id": 2, "result": {"content": [\n'
        await self.inner.write(text)  # type: ignore[attr-defined]

    async def flush(self) -> None:
        await self.inner.flush()  # type: ignore[attr-defined]


def serve_garbling(server: MCPServer) -> None:
    import io

    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        wire = io.TextIOWrapper(os.fdopen(os.dup(1), "wb"), encoding="utf-8")
        async with stdio_server(stdout=_Garbling(anyio.wrap_file(wire))) as (read, write):  # type: ignore[arg-type]
            lowlevel = server._lowlevel_server
            await lowlevel.run(read, write, lowlevel.create_initialization_options())

    anyio.run(run)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--mute", action="store_true")
    parser.add_argument("--garble", action="store_true")
    parser.add_argument("--pid-file")
    args = parser.parse_args()
    if args.pid_file:
        with open(args.pid_file, "a") as file:
            file.write(f"{os.getpid()}\n")
    if args.mute:
        sys.stdin.read()  # never answers; exits when its stdin closes
        time.sleep(0.1)
        return
    server = build_server()
    if args.http:
        serve_http(server)
    elif args.garble:
        serve_garbling(server)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
