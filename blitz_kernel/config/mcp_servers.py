"""`[mcp.servers.NAME]`: the settings of the user's MCP servers (docs/cloned-repositories.md says where they start).

A server is either a command run over stdio (`command`, `args`, `env`, `cwd`) or a streamable
HTTP endpoint (`url`, `headers`). Header values are the *names* of environment variables,
read when the server starts, so a token is never written into a file that gets committed or
shown. Pure pydantic: `blitz_kernel.config.loading` imports this, and it must stay cheap.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Transport = Literal["stdio", "http"]

_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")
_ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_STDIO_KEYS = ("command", "args", "env", "cwd")
_HTTP_KEYS = ("url", "headers")


class McpServerConfig(BaseModel):
    """One MCP server; exactly one transport."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    command: str | None = Field(default=None, min_length=1)
    """stdio: the program to run (`npx`, `uvx`, a path)."""
    args: list[str] = []
    """stdio: its arguments."""
    env: dict[str, str] = {}
    """stdio: extra environment variables for the server (on top of PATH, HOME and the like);
    `${VAR}` in a value is read from the kernel's environment when the server starts."""
    cwd: str | None = None
    """stdio: its working directory; relative paths are relative to the workspace. Unset, a
    server starts in a private empty temporary folder, not the workspace (whose own
    `node_modules` or Python packages would otherwise shadow what `npx pkg` or `python -m pkg`
    runs); it finds the workspace in the environment variable BLITZ_WORKSPACE."""
    url: str | None = None
    """Streamable HTTP: the endpoint, e.g. `https://example.com/mcp`."""
    headers: dict[str, str] = {}
    """HTTP: header name → the name of the environment variable that holds its value."""
    enabled: bool = True
    """False keeps the server configured but never started."""
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    """Seconds the server may take to start (connect and list its tools) and to answer a call."""
    tools: list[str] | None = None
    """Allow-list of the server's tool names (`*` patterns work); unset offers all of them."""

    @model_validator(mode="before")
    @classmethod
    def _known_keys_only(cls, data: Any) -> Any:
        # Named here rather than left to `extra="forbid"`: the loader's message for an unknown
        # key cannot list the known ones below a table of servers.
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in cls.model_fields)
            if unknown:
                raise ValueError(f"unknown key {unknown[0]!r}; known keys: {', '.join(cls.model_fields)}")
        return data

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        given = self.model_fields_set
        if self.command is None and self.url is None:
            raise ValueError("needs either `command` (a stdio server) or `url` (a streamable HTTP server)")
        if self.command is not None and self.url is not None:
            raise ValueError("has both `command` and `url`; a server uses exactly one transport")
        if self.command is not None and "headers" in given:
            raise ValueError("`headers` are for HTTP servers (`url`), not for a `command`")
        if self.url is not None:
            stray = [key for key in _STDIO_KEYS[1:] if key in given]
            if stray:
                raise ValueError(f"`{stray[0]}` is for stdio servers (`command`), not for a `url`")
            if not re.match(r"https?://", self.url):
                raise ValueError(f"url must start with http:// or https://, got {self.url!r}")
        return self

    @field_validator("headers")
    @classmethod
    def _values_name_variables(cls, headers: dict[str, str]) -> dict[str, str]:
        for header, variable in headers.items():
            if not _ENV_VAR_NAME.fullmatch(variable):
                # Never echo the value: it is probably the secret itself.
                raise ValueError(
                    f"header {header!r} must name an environment variable that holds its value "
                    "(e.g. WAREHOUSE_TOKEN), not the value itself"
                )
        return headers

    @property
    def transport(self) -> Transport:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """`stdio: npx -y pkg` or `http: https://…`, for listings (no header values)."""
        if self.command is not None:
            return " ".join(["stdio:", self.command, *self.args])
        return f"http: {self.url}"


class McpConfig(BaseModel):
    """The `[mcp]` table."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    servers: dict[str, McpServerConfig] = {}
    """Servers by name; the name appears in tool names (`mcp__<name>__<tool>`)."""

    @field_validator("servers")
    @classmethod
    def _usable_names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not _SERVER_NAME.fullmatch(name) or "__" in name:
                raise ValueError(
                    f"server name {name!r} may use only letters, digits, '-' and single '_' "
                    "(it becomes part of tool names: mcp__<server>__<tool>)"
                )
        return servers
