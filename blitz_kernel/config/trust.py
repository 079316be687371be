"""Workspace trust (WS-06): a cloned repository's own config cannot turn against its user.

A workspace's `blitz.toml` (or `[tool.blitz]` in its `pyproject.toml`) comes with the code, so
the settings in it that loosen safety or send data or commands elsewhere are held back until
the user trusts that workspace:
- `approval.*` values more permissive than the defaults (`approval.headless = "allow"`,
  `approval.tools.X = "allow"` or `"ask-if-risky"`);
- `api_base`, `api_key_env` (where prompts, data and the key would go);
- `hooks.*` (commands the repository chose);
- `mcp.*` (servers, i.e. commands or hosts the repository chose);
- an agent file's `model` pin (`.blitz/agents/*.md`): it chooses where that agent's prompts go,
  so a provider other than the user's own model's is a different host (`scripted:` pins, which
  send nothing anywhere, are exempt).

Everything else (limits, prices, context, agents' instructions) applies as before. Trust is
recorded in `~/.blitz/trusted.toml` with the workspace's path and a hash of exactly the
held-back settings, so changing them needs trust again (direnv's `allow` works the same way).
CI trusts with `BLITZ_TRUST_WORKSPACE=/path`, never through the workspace's own files. The
user's own config, environment variables, `%blitz_config` and magic options always apply.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

TRUST_ENV = "BLITZ_TRUST_WORKSPACE"
PERMISSIVE_TOOL_POLICIES = ("allow", "ask-if-risky")
HELD_TABLES = ("hooks", "mcp")
HELD_KEYS = ("api_base", "api_key_env")
AGENT_PIN_PREFIX = "agents."
"""Held-back agent model pins are named `agents.<name>.model` (they are not config keys: the
engine leaves the pin unused while it is held back)."""
ENFORCED_BY_OWNER = ("mcp",)
"""Held back, but not removed from the config: the MCP manager refuses an untrusted
workspace's servers itself, naming each one and the way out."""


def held_back(document: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a workspace file that need trust, as dotted key → value."""
    held: dict[str, Any] = {key: document[key] for key in HELD_KEYS if key in document}
    for table in HELD_TABLES:
        if table in document:
            held[table] = document[table]
    approval = document.get("approval")
    if isinstance(approval, Mapping):
        if approval.get("headless") == "allow":
            held["approval.headless"] = "allow"
        tools = approval.get("tools")
        if isinstance(tools, Mapping):
            for name, policy in tools.items():
                if policy in PERMISSIVE_TOOL_POLICIES:
                    held[f"approval.tools.{name}"] = policy
    return held


def without_held_back(document: Mapping[str, Any], held: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with the held-back settings removed (the rest applies)."""
    kept: dict[str, Any] = json.loads(json.dumps(document, default=str))
    for key in held:
        if key in ENFORCED_BY_OWNER or key.startswith(AGENT_PIN_PREFIX):
            continue
        parts = key.split(".", 2) if key.startswith("approval.tools.") else key.split(".")
        node: Any = kept
        for part in parts[:-1]:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    return kept


def settings_hash(held: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(held, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class TrustState:
    """What a workspace's own files ask for, and whether the user trusts it."""

    workspace: Path
    source: str | None
    """The workspace file that asks (None: it has none)."""
    held: dict[str, Any] = field(default_factory=dict)
    trusted: bool = False
    via: str | None = None
    """How it is trusted: `~/.blitz/trusted.toml` or the environment variable."""

    @property
    def holding_back(self) -> bool:
        return bool(self.held) and not self.trusted

    def notice(self) -> str:
        """The one notice an untrusted workspace's first turn shows."""
        keys = ", ".join(sorted(self.held))
        return (
            f"{self.source} asks for settings that need trust ({keys}); they are held back. "
            "Review them with %blitz_trust, which also trusts this workspace."
        )


class TrustStore:
    """`~/.blitz/trusted.toml`: trusted workspaces and the hash of what each was trusted with."""

    def __init__(self, home: Path | None = None) -> None:
        self.path = (home if home is not None else Path.home()) / ".blitz" / "trusted.toml"

    def entries(self) -> dict[str, str]:
        """Workspace path → settings hash. An unreadable file trusts nothing (fail-closed)."""
        try:
            document = tomllib.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return {}
        rows = document.get("workspace", [])
        return {
            str(row["path"]): str(row["hash"])
            for row in rows
            if isinstance(row, dict) and "path" in row and "hash" in row
        }

    def trust(self, workspace: Path, held: Mapping[str, Any]) -> None:
        entries = self.entries()
        entries[str(workspace.resolve())] = settings_hash(held)
        self._write(entries)

    def revoke(self, workspace: Path) -> bool:
        entries = self.entries()
        removed = entries.pop(str(workspace.resolve()), None) is not None
        if removed:
            self._write(entries)
        return removed

    def _write(self, entries: Mapping[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["# Workspaces trusted with %blitz_trust: the path and a hash of the settings trusted.", ""]
        for path, digest in sorted(entries.items()):
            lines += ["[[workspace]]", f"path = {json.dumps(path)}", f"hash = {json.dumps(digest)}", ""]
        temporary = self.path.with_suffix(".toml.tmp")
        temporary.write_text("\n".join(lines), encoding="utf-8")
        temporary.replace(self.path)


def trust_state(
    workspace: Path,
    source: str | None,
    document: Mapping[str, Any],
    environ: Mapping[str, str],
    home: Path | None,
    agent_pins: Mapping[str, str] | None = None,
) -> TrustState:
    """Whether the workspace's held-back settings apply: those of its config file and its
    agent files' model pins (`agent_pins`: agent name → pinned model)."""
    named = environ.get(TRUST_ENV, "").strip()
    if named and not Path(named).expanduser().is_absolute():  # `.` would trust any folder
        raise ConfigError(TRUST_ENV, f"environment variable {TRUST_ENV}", f"must be an absolute path, got {named!r}")
    held = held_back(document)
    held.update({f"{AGENT_PIN_PREFIX}{name}.model": model for name, model in (agent_pins or {}).items()})
    if source is None and held:
        source = "this workspace's agent files"
    state = TrustState(workspace=workspace, source=source, held=held)
    if not held:
        return state
    if named and Path(named).expanduser().resolve() == workspace.resolve():
        state.trusted, state.via = True, f"environment variable {TRUST_ENV}"
    elif TrustStore(home).entries().get(str(workspace.resolve())) == settings_hash(held):
        state.trusted, state.via = True, "~/.blitz/trusted.toml"
    return state
