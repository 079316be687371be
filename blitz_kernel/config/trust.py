"""Workspace trust: a cloned repository's own config cannot turn against its user.

A workspace's `blitz.toml` (or `[tool.blitz]` in its `pyproject.toml`) comes with the code, so
every setting in it that would be looser than the user's own layers (or the defaults) is held
back until the user trusts that workspace: approvals, limits and budgets, prices, models, where
prompts and the key go, hooks, MCP servers, the store, what web_fetch may reach,
agents' model pins (docs/cloned-repositories.md has the list). A `scripted:` model file outside the workspace is
refused outright. Trust is recorded in `~/.blitz/trusted.toml` with a hash of exactly the
held-back settings and the scripts they name, so changing them needs trust again (as direnv's
`allow`); CI trusts with `BLITZ_TRUST_WORKSPACE`. The user's own config, environment,
`%blitz_config` and magic options always apply.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import os
import shlex
import stat
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .settings import LimitsConfig

TRUST_ENV = "BLITZ_TRUST_WORKSPACE"
HELD_TABLES = ("hooks", "mcp", "store", "completion", "web")
HELD_KEYS = ("api_base", "api_key_env")
AGENT_PIN_PREFIX = "agents."
"""Held-back agent model pins are named `agents.<name>.model` (they are not config keys: the
engine leaves the pin unused while it is held back)."""
ENFORCED_BY_OWNER = ("mcp",)
"""Held back, but not removed from the config: the MCP manager refuses an untrusted
workspace's servers itself, naming each one and the way out."""
SCRIPTED_PREFIX = "scripted:"
POLICY_RANK = {"deny": 0, "ask": 1, "ask-if-risky": 2, "allow": 3}
UNSET_POLICY = "ask"
"""What a tool the user's layers do not name is compared against (mutating tools' default)."""
HIGHER_IS_LOOSER = ("max_turns", "repeat_warn", "repeat_stop")
CEILINGS = ("max_cost_usd", "max_cost_usd_session", "timeout_s")
"""Unset means no ceiling: a workspace value can only be looser than a value the user set."""
MAX_SCRIPT_HASH_BYTES = 64 * 1024 * 1024


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _table(document: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = document.get(name)
    return value if isinstance(value, Mapping) else {}


def _user_policy(user_tools: Mapping[str, Any], name: str) -> str:
    """The user's policy for tool `name`: theirs for that name, else the strictest of their
    patterns that match it, else UNSET_POLICY."""
    if user_tools.get(name) in POLICY_RANK:
        return str(user_tools[name])
    matching = [str(p) for key, p in user_tools.items() if p in POLICY_RANK and fnmatch.fnmatchcase(name, str(key))]
    return min(matching, key=POLICY_RANK.__getitem__) if matching else UNSET_POLICY


def _approvals(document: Mapping[str, Any], user: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    approval, mine = _table(document, "approval"), _table(user, "approval")
    if approval.get("headless") == "allow" and mine.get("headless") != "allow":
        yield "approval.headless", "allow"
    user_tools = _table(mine, "tools")
    for name, policy in _table(approval, "tools").items():
        if policy in POLICY_RANK and POLICY_RANK[policy] > POLICY_RANK[_user_policy(user_tools, str(name))]:
            yield f"approval.tools.{name}", policy


def _limits(document: Mapping[str, Any], user: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    limits, mine = _table(document, "limits"), _table(user, "limits")
    for key, value in limits.items():
        if key == "shared_budget_file":  # a file the kernel rewrites: not for a cloned repo to name
            yield f"limits.{key}", value
            continue
        given = _number(value)
        if given is None:
            continue
        if key in HIGHER_IS_LOOSER:
            baseline = _number(mine.get(key, LimitsConfig.model_fields[key].default))
        elif key in CEILINGS:
            baseline = _number(mine.get(key))
        else:
            continue
        if baseline is not None and given > baseline:
            yield f"limits.{key}", value


def _prices(document: Mapping[str, Any], user: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    mine = _table(user, "prices")
    for model, price in _table(document, "prices").items():
        theirs = mine.get(model)
        if not isinstance(theirs, Mapping) or not isinstance(price, Mapping):
            yield f"prices.{model}", price
            continue
        for part, value in price.items():
            given, baseline = _number(value), _number(theirs.get(part))
            if given is not None and (baseline is None or given < baseline):
                yield f"prices.{model}", price
                break


def _models(document: Mapping[str, Any], user: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """`model` and `fallback_models` that replace the user's own choice."""
    mine = user.get("model")
    chosen = {m for m in (mine, *(user.get("fallback_models") or ())) if isinstance(m, str) and m}
    if not chosen:
        return
    model = document.get("model")
    if isinstance(model, str) and model not in chosen and not model.startswith(SCRIPTED_PREFIX):
        yield "model", model
    fallbacks = document.get("fallback_models")
    if isinstance(fallbacks, list) and any(
        isinstance(f, str) and f not in chosen and not f.startswith(SCRIPTED_PREFIX) for f in fallbacks
    ):
        yield "fallback_models", fallbacks


def scripted_outside(model: Any, workspace: Path) -> bool:
    """A `scripted:` model name whose file is not inside the workspace."""
    if not isinstance(model, str) or not model.startswith(SCRIPTED_PREFIX):
        return False
    given = Path(model.removeprefix(SCRIPTED_PREFIX)).expanduser()
    root = workspace.resolve()
    try:
        resolved = (given if given.is_absolute() else root / given).resolve()
    except (OSError, RuntimeError):
        return True
    return not (resolved == root or root in resolved.parents)


def refused(document: Mapping[str, Any], workspace: Path) -> dict[str, Any]:
    """Settings a workspace file may never set, trusted or not (module docstring)."""
    found: dict[str, Any] = {}
    if scripted_outside(document.get("model"), workspace):
        found["model"] = document["model"]
    fallbacks = document.get("fallback_models")
    if isinstance(fallbacks, list) and any(scripted_outside(f, workspace) for f in fallbacks):
        found["fallback_models"] = fallbacks
    return found


def held_back(document: Mapping[str, Any], user: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The settings of a workspace file that need trust, as dotted key → value; `user` is
    what the user's own layers (`~/.blitz/config.toml`) set, nested as in TOML."""
    mine = user or {}
    held: dict[str, Any] = {key: document[key] for key in HELD_KEYS if key in document}
    for table in HELD_TABLES:
        if table in document:
            held[table] = document[table]
    for part in (_approvals, _limits, _prices, _models):
        held.update(part(document, mine))
    privacy, my_privacy = _table(document, "privacy"), _table(mine, "privacy")
    if privacy.get("variables") == "full" and my_privacy.get("variables") == "schema":
        held["privacy.variables"] = "full"
    return held


def held_pins(pins: Mapping[str, str], user: Mapping[str, Any]) -> dict[str, str]:
    """Agent pins that need trust: any but the user's own model and fallbacks."""
    chosen = {m for m in (user.get("model"), *(user.get("fallback_models") or ())) if isinstance(m, str)}
    return {f"{AGENT_PIN_PREFIX}{name}.model": model for name, model in pins.items() if model not in chosen}


def without_held_back(document: Mapping[str, Any], held: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with the held-back settings removed (the rest applies)."""
    kept: dict[str, Any] = json.loads(json.dumps(document, default=str))
    for key in held:
        if key in ENFORCED_BY_OWNER or key.startswith(AGENT_PIN_PREFIX):
            continue
        if key.startswith("approval.tools."):
            parts = key.split(".", 2)
        elif key.startswith("prices."):  # a model name may hold dots
            parts = key.split(".", 1)
        else:
            parts = key.split(".")
        node: Any = kept
        for part in parts[:-1]:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    return kept


def settings_hash(held: Mapping[str, Any], workspace: Path | None = None) -> str:
    """The hash trust is recorded with: the held-back settings and, when they name scripts
    inside the workspace (hooks, MCP servers), those scripts' content."""
    scripts = script_digests(held, workspace) if workspace is not None else {}
    payload: Any = {"settings": held, "scripts": scripts} if scripts else held
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def script_digests(held: Mapping[str, Any], workspace: Path) -> dict[str, str]:
    """Workspace-relative path → SHA-256 of every regular file inside the workspace that a
    held-back hook command or MCP server command line names (a word of it, or what follows
    `=` in one), relative to the workspace or the server's `cwd`."""
    root = workspace.resolve()
    digests: dict[str, str] = {}
    for words, folder in _command_lines(held, root):
        for word in words:
            for candidate in {word, word.partition("=")[2]} - {""}:
                path = Path(candidate).expanduser()
                path = path if path.is_absolute() else folder / path
                try:
                    resolved = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    continue
                if root in resolved.parents and resolved.is_file():
                    digests[resolved.relative_to(root).as_posix()] = _digest(resolved)
    return digests


def _command_lines(held: Mapping[str, Any], root: Path) -> Iterator[tuple[list[str], Path]]:
    hooks = held.get("hooks")
    for specs in hooks.values() if isinstance(hooks, Mapping) else ():
        for spec in specs if isinstance(specs, list) else ():
            command = spec.get("command") if isinstance(spec, Mapping) else None
            if isinstance(command, str):
                try:
                    words = shlex.split(command)
                except ValueError:
                    words = command.split()
                yield words, root
    servers = _table(_table(held, "mcp"), "servers")
    for server in servers.values():
        if not isinstance(server, Mapping):
            continue
        words = [w for w in (server.get("command"), *(server.get("args") or ())) if isinstance(w, str)]
        cwd = server.get("cwd")
        yield words, (root / cwd) if isinstance(cwd, str) else root


def _digest(path: Path) -> str:
    """SHA-256 of the file; size and mtime for one too large to read whole."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SCRIPT_HASH_BYTES:
            return f"{info.st_size}:{info.st_mtime_ns}"
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return "unreadable"


@dataclass
class TrustState:
    """What a workspace's own files ask for, and whether the user trusts it."""

    workspace: Path
    source: str | None
    """The workspace file that asks (None: it has none)."""
    held: dict[str, Any] = field(default_factory=dict)
    refused: dict[str, Any] = field(default_factory=dict)
    """Settings of the workspace file that never apply (module docstring)."""
    trusted: bool = False
    via: str | None = None
    """How it is trusted: `~/.blitz/trusted.toml` or the environment variable."""

    @property
    def holding_back(self) -> bool:
        return bool(self.held) and not self.trusted

    @property
    def withheld(self) -> dict[str, Any]:
        """What is kept out of the configuration now: the refused settings, and the held-back
        ones while the workspace is not trusted."""
        return {**(self.held if self.holding_back else {}), **self.refused}

    @property
    def due(self) -> bool:
        """Something the user should be told about once."""
        return self.holding_back or bool(self.refused)

    def notice(self) -> str:
        """The one notice a workspace's first turn shows, when it holds anything back."""
        parts = []
        if self.holding_back:
            keys = ", ".join(sorted(self.held))
            parts.append(
                f"{self.source} asks for settings that need trust ({keys}); they are held back. "
                "Review them with %blitz_trust, which also trusts this workspace."
            )
        if self.refused:
            keys = ", ".join(sorted(self.refused))
            parts.append(
                f"{self.source} names a scripted model file outside the workspace ({keys}); that is never used."
            )
        return " ".join(parts)


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
        entries[str(workspace.resolve())] = settings_hash(held, workspace)
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
    user: Mapping[str, Any] | None = None,
) -> TrustState:
    """Whether the workspace's held-back settings apply: those of its config file and its
    agent files' model pins (`agent_pins`: agent name → pinned model), each compared with
    what the user's own layers set (`user`)."""
    named = environ.get(TRUST_ENV, "").strip()
    if named and not Path(named).expanduser().is_absolute():  # `.` would trust any folder
        raise ConfigError(TRUST_ENV, f"environment variable {TRUST_ENV}", f"must be an absolute path, got {named!r}")
    mine = user or {}
    held = held_back(document, mine)
    held.update(held_pins(agent_pins or {}, mine))
    if source is None and held:
        source = "this workspace's agent files"
    state = TrustState(workspace=workspace, source=source, held=held, refused=refused(document, workspace))
    if not held:
        return state
    if named and Path(named).expanduser().resolve() == workspace.resolve():
        state.trusted, state.via = True, f"environment variable {TRUST_ENV}"
    elif TrustStore(home).entries().get(str(workspace.resolve())) == settings_hash(held, workspace):
        state.trusted, state.via = True, "~/.blitz/trusted.toml"
    return state
