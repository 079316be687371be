"""`%blitz_mcp [restart NAME]`: the MCP servers, their status and tools (docs/mcp.md).

Listing connects the enabled servers that are not running yet (each within its `timeout_s`),
so that their tools and policies show; `restart NAME` stops one server and starts it again.
Both await on the kernel's loop (the `await` transformer knows this magic).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

if TYPE_CHECKING:
    from ..engine.workspace import Workspace
    from ..mcp.manager import ServerConnection

NO_SERVERS = (
    "no MCP servers are configured: add a [mcp.servers.NAME] table (command/args or url) to "
    "~/.blitz/config.toml or the workspace's blitz.toml"
)


def _usage(magic: Any) -> str:
    return "usage: " + " ".join(magic.parser.format_usage().replace("::", " ").split())


@magics_class
class McpMagics(Magics):
    """`%blitz_mcp`; the workspace is the one `%%blitz` cells use."""

    def _workspace(self) -> Workspace:
        assert self.shell is not None
        blitz = self.shell.magics_manager.registry.get("BlitzMagics")
        if blitz is None:
            raise UsageError("the blitz_kernel extension is not loaded: run %load_ext blitz_kernel")
        workspace: Workspace = blitz.workspace()
        return workspace

    @magic_arguments()
    @argument("action", nargs="?", help="restart: stop the server NAME and start it again")
    @argument("name", nargs="?", help="the server to restart")
    @line_magic
    def blitz_mcp(self, line: str) -> Coroutine[Any, Any, None]:
        """List the MCP servers (transport, status, tool count, last error) and their tools
        with their approval policy; `restart NAME` restarts one server."""
        try:
            args = parse_argstring(self.blitz_mcp, line)
        except UsageError as exc:
            raise UsageError(f"{exc}\n{_usage(self.blitz_mcp)}") from None
        if args.action not in (None, "restart") or (args.action == "restart") != (args.name is not None):
            raise UsageError(_usage(self.blitz_mcp))
        workspace = self._workspace()
        workspace.mcp_servers()
        if args.action == "restart" and args.name not in workspace.mcp.connections:
            known = ", ".join(workspace.mcp.connections) or "none"
            raise UsageError(f"no MCP server named {args.name!r} (configured: {known})")
        return self._run(workspace, args.name)

    async def _run(self, workspace: Workspace, restart: str | None) -> None:
        from ..mcp.manager import McpUnavailable

        manager = workspace.mcp
        if restart is not None:
            try:
                await manager.restart(restart)
                print(f"restarted MCP server {restart!r}")
            except McpUnavailable as exc:
                print(f"⚠ {exc}")
        elif manager.connections:
            await manager.ensure(manager.enabled())
        print(describe_servers(workspace))


def describe_servers(workspace: Workspace) -> str:
    """One block per server: a status line, then its tools with their policy."""
    manager = workspace.mcp
    if not manager.connections:
        return NO_SERVERS
    lines = [f"MCP servers ({len(manager.connections)}):"]
    for connection in manager.connections.values():
        lines += _server_lines(workspace, connection)
    return "\n".join(lines)


def _server_lines(workspace: Workspace, connection: ServerConnection) -> list[str]:
    from ..engine.safety.approval import resolve_policy
    from ..mcp import RESOURCE_TOOLS
    from ..mcp.toolset import server_tools

    entry = connection.entry
    refusal = workspace.mcp.refusal(entry.name)
    if refusal is not None:  # held back until trusted: say that nothing of it runs
        details = ["refused", "not running (the workspace is not trusted)"]
    else:
        details = [
            connection.status,
            f"{len(connection.tools)} tools" if connection.status == "ready" else "tools unknown",
        ]
        if connection.pid is not None:
            details.append(f"pid {connection.pid}")
    if entry.origin == "workspace":
        details.append(f"defined in the workspace's {entry.source}")
    lines = [f"• {entry.name} — {entry.config.describe()} — {' · '.join(details)}"]
    if connection.last_error:
        lines.append(f"    last error: {connection.last_error}")
    if connection.status != "ready":
        return lines
    policies = dict(workspace.config.approval.tools)
    hints = {listed.name: listed.annotations for listed in connection.tools}
    for tool in server_tools(workspace.mcp, connection, vision=False):
        policy, _ = resolve_policy(tool.name, True, policies, None, set())
        original = tool.name.split("__", 2)[-1]
        hint = hints.get(original)
        note = (
            "  (the server says read-only; still asks)"
            if hint is not None and hint.read_only_hint and policy == "ask"
            else ""
        )
        lines.append(f"    {tool.name:<40} {policy}{note}")
    lines.append(f"    resources: {', '.join(RESOURCE_TOOLS)} (read-only)")
    return lines
