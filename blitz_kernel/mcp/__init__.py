"""MCP toolsets: the user's MCP servers as tools of a turn (docs/mcp.md).

Their settings live with the other settings (config/mcp_servers.py); `manager` keeps one connection per server for the kernel's life; `toolset` turns a server's
tools and resources into our `Tool`s. The `mcp` SDK is imported only when a server starts, so
`%load_ext` and opening a workspace stay fast.
"""

from __future__ import annotations

MCP_PREFIX = "mcp__"
"""Every MCP tool reaches the model as `mcp__<server>__<tool>`."""
RESOURCE_TOOLS = ("list_mcp_resources", "read_mcp_resource")
"""The read-only tools that reach every offered server's resources (allowed in read-only modes too)."""


def tool_name(server: str, tool: str) -> str:
    """The name the model, approvals and agent files use for `tool` of `server`."""
    return f"{MCP_PREFIX}{server}__{tool}"


def is_mcp_name(name: str) -> bool:
    """True for names (or patterns) that belong to the MCP toolsets, not the tool registry."""
    return name.startswith(MCP_PREFIX) or name in RESOURCE_TOOLS
