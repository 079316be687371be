"""The admin policy: what an administrator fixes for every kernel, and users cannot loosen.

A TOML file named by `BLITZ_ADMIN_POLICY` (else `<sys.prefix>/etc/blitz/policy.toml` when it
exists) is read before any other configuration (docs/teams.md has an example):

    [locked]                       # values that win over every other layer
    approval.tools.run_python = "ask"
    limits.max_cost_usd_session = 5
    api_base = "https://llm.example.org"
    [tools]
    disabled = ["web_fetch"]       # never offered, a call is refused
    [mcp]
    commands = ["uvx mcp-server-fetch"]   # allowed server command lines (`*` patterns)
    urls = ["https://mcp.example.org/*"]  # allowed server URLs
    [models]
    allowed = ["litellm_proxy/*"]  # model names (`*` patterns)

A file that cannot be read or parsed fails closed: every load raises a ConfigError naming the
file (and the line), so the workspace never opens and no turn runs. Pure pydantic, like the
rest of `config/`: the engine asks this object, it never reads the file itself.
"""

from __future__ import annotations

import fnmatch
import shlex
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.terms import ToolPolicy
from ..errors import ConfigError
from .mcp_servers import McpServerConfig
from .settings import BlitzConfig

POLICY_ENV = "BLITZ_ADMIN_POLICY"
SECTIONS = ("locked", "tools", "mcp", "models")


def system_policy_path() -> Path:
    """Where an environment's own policy lives: the administrator who owns the Python
    environment owns this file, so a user cannot remove it as they can unset a variable."""
    return Path(sys.prefix) / "etc" / "blitz" / "policy.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class _Tools(_Strict):
    disabled: list[str] = []


class _Mcp(_Strict):
    commands: list[str] | None = None
    urls: list[str] | None = None


class _Models(_Strict):
    allowed: list[str] | None = None


class _PolicyFile(_Strict):
    locked: dict[str, Any] = {}
    tools: _Tools = _Tools()
    mcp: _Mcp = _Mcp()
    models: _Models = _Models()


@dataclass(frozen=True)
class AdminPolicy:
    """A parsed, checked policy file. `locked` is nested as TOML gives it; `locked_keys` are
    its leaves as dotted keys (`approval.tools.run_python`)."""

    path: str
    locked: Mapping[str, Any] = field(default_factory=dict)
    locked_keys: tuple[str, ...] = ()
    disabled_tools: tuple[str, ...] = ()
    mcp_commands: tuple[str, ...] | None = None
    mcp_urls: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None

    @property
    def source(self) -> str:
        """How errors and listings name the policy."""
        return f"admin policy {self.path}"

    def holds(self, key: str) -> str | None:
        """The locked key that `key` would change: the key itself, one under it, or the table
        it sits in (`approval` holds `approval.tools.run_python`); None when it is free."""
        for locked in self.locked_keys:
            if key == locked or locked.startswith(key + ".") or key.startswith(locked + "."):
                return locked
        return None

    def describe(self) -> str:
        """What the policy sets besides locked keys, for `%blitz_config` (empty: nothing)."""
        parts = []
        if self.disabled_tools:
            parts.append(f"tools disabled: {', '.join(self.disabled_tools)}")
        if self.mcp_commands is not None:
            parts.append(f"MCP commands allowed: {', '.join(self.mcp_commands) or 'none'}")
        if self.mcp_urls is not None:
            parts.append(f"MCP URLs allowed: {', '.join(self.mcp_urls) or 'none'}")
        if self.models is not None:
            parts.append(f"models allowed: {', '.join(self.models) or 'none'}")
        return "; ".join(parts)

    def locked_error(self, key: str) -> ConfigError:
        """The one-line refusal of a change to a locked key."""
        return ConfigError(key, self.source, "is locked by the administrator and cannot be changed from the kernel")

    def tool_policies(self) -> dict[str, ToolPolicy]:
        """Per-tool policies no per-turn option or "always allow" answer can change: the locked
        `approval.tools` and `deny` for every disabled tool."""
        approval = self.locked.get("approval")
        tools = approval.get("tools") if isinstance(approval, Mapping) else None
        policies = {str(k): cast(ToolPolicy, v) for k, v in (tools or {}).items()}
        policies.update({name: "deny" for name in self.disabled_tools})
        return policies

    def tool_disabled(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.disabled_tools)

    def disabled_text(self, name: str) -> str:
        return f"{name} is disabled by the admin policy ({self.path})"

    def model_refusal(self, name: str) -> str | None:
        """Why model `name` may not be used, or None."""
        if self.models is None or any(fnmatch.fnmatchcase(name, p) for p in self.models):
            return None
        return f"model {name!r} is not allowed by the admin policy ({self.path}); allowed: {', '.join(self.models)}"

    def mcp_refusal(self, name: str, server: McpServerConfig) -> str | None:
        """Why MCP server `name` may not start: its command line or URL is not on the list."""
        if server.command is not None:
            allowed, what = self.mcp_commands, shlex.join([server.command, *server.args])
        else:
            allowed, what = self.mcp_urls, str(server.url)
        if allowed is None or any(fnmatch.fnmatchcase(what, pattern) for pattern in allowed):
            return None
        listed = ", ".join(allowed) if allowed else "none"
        return f"MCP server {name!r} ({what}) is not on the admin policy's allowlist ({self.path}; allowed: {listed})"


def find_policy(environ: Mapping[str, str], system_path: Path | None = None) -> Path | None:
    """The policy file: the environment's own (`<sys.prefix>/etc/blitz/policy.toml`) whenever
    it exists, else `BLITZ_ADMIN_POLICY` (which must exist). A user can set a variable (in a
    kernelspec, with `%env`) but not edit that file, so the variable never replaces it."""
    path = system_path if system_path is not None else system_policy_path()
    if path.is_file():
        return path
    named = environ.get(POLICY_ENV, "").strip()
    return Path(named).expanduser() if named else None


def load_policy(environ: Mapping[str, str], system_path: Path | None = None) -> AdminPolicy | None:
    """The admin policy in force, or None. Raises ConfigError (naming the file, and the line
    for a syntax error) when it cannot be used: fail closed, never a policy half applied."""
    path = find_policy(environ, system_path)
    return None if path is None else read_policy(path)


def read_policy(path: Path) -> AdminPolicy:
    source = f"admin policy {path}"
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:  # its message carries the line and column
        raise ConfigError("(file)", source, f"{error}; no turn runs until it is fixed") from error
    except UnicodeDecodeError as error:
        raise ConfigError("(file)", source, f"not UTF-8 text: {error.reason}") from error
    except OSError as error:
        raise ConfigError("(file)", source, f"cannot be read: {error.strerror or error}") from error
    try:
        parsed = _PolicyFile.model_validate(document)
    except ValidationError as error:
        first = error.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        problem = first["msg"] if first["type"] != "extra_forbidden" else f"unknown key; known: {', '.join(SECTIONS)}"
        raise ConfigError(key, source, problem) from None
    locked = _headless_for_asks(_store_as_one(parsed.locked))
    try:  # the locked values must make a valid configuration on their own
        BlitzConfig.model_validate(locked)
    except ValidationError as error:
        first = error.errors()[0]
        key = "locked." + ".".join(str(part) for part in first["loc"])
        raise ConfigError(key, source, first["msg"]) from None
    return AdminPolicy(
        path=str(path),
        locked=locked,
        locked_keys=tuple(_leaves(locked, ())),
        disabled_tools=tuple(parsed.tools.disabled),
        mcp_commands=tuple(parsed.mcp.commands) if parsed.mcp.commands is not None else None,
        mcp_urls=tuple(parsed.mcp.urls) if parsed.mcp.urls is not None else None,
        models=tuple(parsed.models.allowed) if parsed.models.allowed is not None else None,
    )


def _headless_for_asks(locked: dict[str, Any]) -> dict[str, Any]:
    """A tool the policy holds on `ask` must be asked, never answered by the headless default
    when nobody can answer (`blitz run --approve allow` sets it to allow): such a policy holds
    `approval.headless = "deny"` too, unless it locks `approval.headless` itself."""
    approval = locked.get("approval")
    if not isinstance(approval, dict) or "headless" in approval:
        return locked
    tools = approval.get("tools")
    if not isinstance(tools, dict) or not any(value in ("ask", "ask-if-risky") for value in tools.values()):
        return locked
    return {**locked, "approval": {**approval, "headless": "deny"}}


def _store_as_one(locked: dict[str, Any]) -> dict[str, Any]:
    """`store.url` and `store.path` are two spellings of one choice: locking one locks the
    other as unset, so a user's `store.path` can neither redirect nor break a locked URL."""
    store = locked.get("store")
    if not isinstance(store, dict) or ("url" in store) == ("path" in store):
        return locked
    other = "path" if "url" in store else "url"
    return {**locked, "store": {**store, other: None}}


def _leaves(mapping: Mapping[str, Any], path: tuple[str, ...]) -> list[str]:
    keys: list[str] = []
    for name, value in mapping.items():
        here = (*path, str(name))
        if isinstance(value, Mapping) and value:
            keys += _leaves(value, here)
        else:
            keys.append(".".join(here))
    return keys
