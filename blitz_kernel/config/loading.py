"""Configuration: the settings model and where its values come from (docs/interface.md).

Precedence, highest first: the admin policy's locked values (config/policy.py: no layer,
magic or trust can loosen them) → overrides (`%blitz_config key=value`, or Python) → environment
(`BLITZ_*`) → `<workspace>/blitz.toml`, else `[tool.blitz]` in `<workspace>/pyproject.toml` →
`~/.blitz/config.toml` → the defaults below. (A magic's own options, e.g. `--model`, sit above
all of these; the front end applies them per run.)

Layers merge deeply: a table in a higher layer replaces only the keys it sets. While merging we
remember which layer set each key, so that a wrong value is reported against the file or
variable that holds it, not just "somewhere in your configuration".
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, time
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ValidationError,
)
from pydantic_core import ErrorDetails

from ..core.usage import Price
from ..errors import ConfigError
from .policy import AdminPolicy, load_policy
from .settings import BlitzConfig, TelemetryExporter
from .trust import TrustState, trust_state, without_held_back

OVERRIDE_SOURCE = "%blitz_config"
"""How errors name the override layer (the magic, or overrides passed from Python)."""

KeyPath = tuple[str, ...]


# -- dotted keys ---------------------------------------------------------------------------


def _split_key(key: str) -> KeyPath:
    """`limits.max_turns` → ("limits", "max_turns"). TOML quoting works, so a model name with
    dots can be addressed: `prices."gpt-4.1".input`."""
    try:
        parts = _single_path(tomllib.loads(f"{key} = 0"))
    except tomllib.TOMLDecodeError:
        parts = None
    if parts is None:  # not a TOML key (e.g. `prices.openai/gpt-4o`): split on dots
        parts = tuple(part.strip() for part in key.split("."))
    if not all(parts):
        raise ValueError(f"{key!r} is not a dotted key")
    return parts


def _single_path(document: dict[str, Any]) -> KeyPath | None:
    """The one path of a `key = 0` document, or None if the text held more than a key."""
    parts: list[str] = []
    node: Any = document
    while isinstance(node, dict):
        if len(node) != 1:
            return None
        ((name, node),) = node.items()
        parts.append(name)
    return tuple(parts) if node == 0 else None


def _join_key(path: tuple[str | int, ...]) -> str:
    """The reverse of `_split_key`; list indices show as `[i]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            segment = part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else json.dumps(part)
            text += f".{segment}" if text else segment
    return text


def set_dotted(mapping: dict[str, Any], key: str, value: Any) -> None:
    """Set `a.b.c` in a nested dict, making (or replacing non-table) intermediate tables."""
    *parents, last = _split_key(key)
    node = mapping
    for name in parents:
        child = node.get(name)
        if not isinstance(child, dict):
            child = node[name] = {}
        node = child
    node[last] = value


def flatten(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Nested tables → `{dotted key: value}`; an empty table stays visible as `{}`."""
    flat: dict[str, Any] = {}
    _flatten_into(flat, mapping, ())
    return flat


def _flatten_into(flat: dict[str, Any], mapping: Mapping[str, Any], path: KeyPath) -> None:
    for name, value in mapping.items():
        here = (*path, str(name))
        if isinstance(value, Mapping) and value:
            _flatten_into(flat, value, here)
        else:
            flat[_join_key(here)] = value


# -- layers --------------------------------------------------------------------------------


@dataclass
class _Layer:
    """Values from one place, nested as TOML gives them, and how errors name that place."""

    values: Mapping[str, Any]
    source: str


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as error:  # its message carries line and column
        raise ConfigError("(file)", str(path), str(error)) from error
    except UnicodeDecodeError as error:
        raise ConfigError("(file)", str(path), f"not UTF-8 text: {error.reason}") from error
    except OSError as error:
        raise ConfigError("(file)", str(path), f"cannot be read: {error}") from error


def _tool_blitz(document: Mapping[str, Any], path: Path) -> Mapping[str, Any] | None:
    tool = document.get("tool")
    table = tool.get("blitz") if isinstance(tool, Mapping) else None
    if table is not None and not isinstance(table, Mapping):
        raise ConfigError("tool.blitz", str(path), "must be a table ([tool.blitz])")
    return table


def _workspace_file(workspace: Path) -> Path | None:
    """blitz.toml; else pyproject.toml if it has `[tool.blitz]` (or is broken, so that the
    error is reported rather than the file silently skipped)."""
    blitz_toml = workspace / "blitz.toml"
    if blitz_toml.is_file():
        return blitz_toml
    pyproject = workspace / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        has_table = _tool_blitz(_read_toml(pyproject), pyproject) is not None
    except ConfigError:
        return pyproject
    return pyproject if has_table else None


def _home_file(home: Path | None) -> Path | None:
    path = (home if home is not None else Path.home()) / ".blitz" / "config.toml"
    return path if path.is_file() else None


def _file_layer(path: Path) -> _Layer:
    document = _read_toml(path)
    if path.name == "pyproject.toml":
        document = dict(_tool_blitz(document, path) or {})
    return _Layer(document, str(path))


_ENV_KEYS = {
    "BLITZ_MODEL": "model",
    "BLITZ_API_BASE": "api_base",
    "BLITZ_AGENT": "agent",
    "BLITZ_APPROVAL_HEADLESS": "approval.headless",
    "BLITZ_BUDGET_USD": "limits.max_cost_usd_session",
    "BLITZ_STORE_URL": "store.url",
    "BLITZ_SHARED_BUDGET": "limits.shared_budget_file",
}
_TRUTHY = {"1", "true", "yes", "on"}
_FALSY = {"0", "false", "no", "off"}
_EXPORTERS: tuple[str, ...] = get_args(TelemetryExporter)


def _environment_layers(environ: Mapping[str, str]) -> list[_Layer]:
    """One layer per variable, so an error names the variable. Empty counts as unset."""
    layers = []
    for name, key in _ENV_KEYS.items():
        value = environ.get(name, "").strip()
        if value:
            values: dict[str, Any] = {}
            set_dotted(values, key, value)
            layers.append(_Layer(values, f"environment variable {name}"))
    telemetry = environ.get("BLITZ_TELEMETRY", "").strip()
    if telemetry:
        source = "environment variable BLITZ_TELEMETRY"
        layers.append(_Layer({"telemetry": _telemetry_from_env(telemetry, source)}, source))
    return layers


def _telemetry_from_env(value: str, source: str) -> dict[str, Any]:
    """`BLITZ_TELEMETRY=1` turns telemetry on; `=otlp` turns it on with that exporter."""
    word = value.lower()
    if word in _TRUTHY:
        return {"enabled": True}
    if word in _FALSY:
        return {"enabled": False}
    if word in _EXPORTERS:
        return {"enabled": True, "exporter": word}
    raise ConfigError(
        "telemetry.enabled",
        source,
        f"expected 1/true/yes/on, 0/false/no/off or an exporter name ({', '.join(_EXPORTERS)}), got {value!r}",
    )


def _override_layers(overrides: Mapping[str, Any]) -> list[_Layer]:
    """One layer per override, in order, so a later key wins over an earlier one."""
    layers = []
    for key, value in overrides.items():
        plain = value.model_dump() if isinstance(value, BaseModel) else value
        values: dict[str, Any] = {}
        try:
            set_dotted(values, key, plain)
        except ValueError as error:
            raise ConfigError(key, OVERRIDE_SOURCE, str(error)) from error
        layers.append(_Layer(values, OVERRIDE_SOURCE))
    return layers


# -- merging with provenance ---------------------------------------------------------------


def _merge(layers: list[_Layer]) -> tuple[dict[str, Any], dict[KeyPath, str]]:
    """Deep-merge layers (lowest first) and record which layer last set each key path."""
    merged: dict[str, Any] = {}
    sources: dict[KeyPath, str] = {}
    for layer in layers:
        _merge_into(merged, layer.values, layer.source, sources, ())
    return merged, sources


def _merge_into(
    target: dict[str, Any],
    values: Mapping[str, Any],
    source: str,
    sources: dict[KeyPath, str],
    path: KeyPath,
) -> None:
    for name, value in values.items():
        here = (*path, name)
        if isinstance(value, Mapping):
            if not isinstance(target.get(name), dict):
                _forget_below(sources, here)
                target[name] = {}
            _merge_into(target[name], value, source, sources, here)
        else:
            _forget_below(sources, here)
            target[name] = value
        sources[here] = source


def _forget_below(sources: dict[KeyPath, str], path: KeyPath) -> None:
    """A replaced value takes its sub-keys' provenance with it."""
    for key in [key for key in sources if key[: len(path)] == path and len(key) > len(path)]:
        del sources[key]


def _source_of(path: KeyPath, sources: dict[KeyPath, str]) -> str:
    """The layer that set `path`, or the nearest enclosing table it set (a missing key)."""
    for end in range(len(path), 0, -1):
        if path[:end] in sources:
            return sources[path[:end]]
    return "defaults"


# -- validation errors ---------------------------------------------------------------------


def _config_error(error: ErrorDetails, sources: dict[KeyPath, str]) -> ConfigError:
    loc = tuple(error["loc"])
    ctx = error.get("ctx", {})
    if error["type"] == "unknown_key":  # from _no_unknown_price_keys: the key is in ctx
        loc = (*loc, ctx["key"])
    named = tuple(str(part) for part in loc if not isinstance(part, int))
    source = _source_of(named, sources)
    if error["type"] in ("extra_forbidden", "unknown_key"):
        problem = f"unknown key; known keys: {', '.join(_known_keys(named[:-1]))}"
    elif error["type"] == "value_error":
        problem = str(ctx.get("error", error["msg"]))
    else:
        problem = error["msg"]
    return ConfigError(_join_key(loc), source, problem)


def _known_keys(table: KeyPath) -> list[str]:
    """Field names of the section at `table` (a price entry under `prices.<model>`)."""
    section: type[BaseModel] = BlitzConfig
    for name in table:
        if section is BlitzConfig and name == "prices":
            return list(Price.model_fields)
        field = section.model_fields.get(name)
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        section = annotation
    return list(section.model_fields)


# -- public entry points -------------------------------------------------------------------


def load_config(
    workspace: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    agent_pins: Mapping[str, str] | None = None,
    policy: AdminPolicy | None | Literal["read"] = "read",
) -> BlitzConfig:
    """The workspace's configuration, all layers merged (module docstring for the order).
    `agent_pins` (the workspace's agent files' model pins) are part of what trust covers;
    what trust holds back or refuses never reaches the merged layers (config/trust.py).
    `policy` is the admin policy already read (the workspace reads it once, when it opens);
    by default it is read now, and a broken policy file fails the load.

    Raises ConfigError naming the key and the file, variable or `%blitz_config` that set it.
    Values overridden by a higher layer are not checked: the higher layer is the fix.
    """
    environ = os.environ if environ is None else environ
    if isinstance(policy, str):
        policy = load_policy(environ)
    trust = workspace_trust(workspace, environ, home, agent_pins)
    layers = []
    for path in reversed(config_source_paths(workspace, home)):
        layer = _file_layer(path)
        if path == _workspace_file(Path(workspace)) and trust.withheld:  # config/trust.py
            layer = _Layer(without_held_back(layer.values, trust.withheld), layer.source)
        layers.append(layer)
    layers += _environment_layers(environ)
    layers += _override_layers(overrides or {})
    if policy is not None:
        layers.append(_Layer(policy.locked, policy.source))
    merged, sources = _merge(layers)
    try:
        return BlitzConfig.model_validate(merged)
    except ValidationError as error:
        raise _config_error(error.errors()[0], sources) from None


def workspace_trust(
    workspace: Path,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    agent_pins: Mapping[str, str] | None = None,
) -> TrustState:
    """What the workspace's own config file (and its agent files' model pins) ask for that
    needs trust, and whether it has it."""
    path = _workspace_file(Path(workspace))
    layer = _file_layer(path) if path is not None else None
    return trust_state(
        Path(workspace),
        layer.source if layer else None,
        layer.values if layer else {},
        os.environ if environ is None else environ,
        home,
        agent_pins,
        user=_user_values(home),
    )


def file_values(path: Path) -> Mapping[str, Any]:
    """The settings one config file sets, as written (ConfigError when it cannot be read)."""
    return _file_layer(path).values


def _user_values(home: Path | None) -> Mapping[str, Any]:
    """What the user's own `~/.blitz/config.toml` sets: trust compares a workspace's values
    with these. A broken file compares with the defaults (load_config reports it anyway)."""
    path = _home_file(home)
    if path is None:
        return {}
    try:
        return _file_layer(path).values
    except ConfigError:
        return {}


def check_policy_names(
    config: BlitzConfig, tools: list[str], overrides: Mapping[str, Any], policy: AdminPolicy | None = None
) -> None:
    """A misspelled tool in `approval.tools` would silently drop a `deny`. Names
    must be known tools or `*` patterns (MCP tools are known only once their server answers,
    so `mcp__…` names pass); an unknown one is an error suggesting the closest, naming the
    admin policy when the policy set it."""
    for name in config.approval.tools:
        if name in tools or name.startswith("mcp__") or "*" in name or "?" in name:
            continue
        key = f"approval.tools.{name}"
        close = difflib.get_close_matches(name.lower(), tools, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known tools: {', '.join(tools)}"
        source = (
            OVERRIDE_SOURCE
            if any(k.startswith(key) or k == "approval.tools" or k == "approval" for k in overrides)
            else "configuration"
        )
        if policy is not None and policy.holds(key):
            source = policy.source
        raise ConfigError(key, source, f"unknown tool {name!r}{hint}")


def config_source_paths(workspace: Path, home: Path | None = None) -> list[Path]:
    """The configuration files load_config reads, highest precedence first."""
    found = [_workspace_file(Path(workspace)), _home_file(home)]
    return [path for path in found if path is not None]


def config_sources(workspace: Path, home: Path | None = None, policy: AdminPolicy | None = None) -> list[str]:
    """The configuration files found, highest precedence first, for `%blitz_config`."""
    files = [
        f"{path} [tool.blitz]" if path.name == "pyproject.toml" else str(path)
        for path in config_source_paths(workspace, home)
    ]
    return ([policy.source] if policy is not None else []) + files


def parse_assignment(text: str) -> tuple[str, Any]:
    """`key=value` from `%blitz_config`. The value is read as a TOML literal when it is one
    (`5`, `true`, `["a", "b"]`, `"quoted"`) and as plain text otherwise (`allow`, `gpt-4o`),
    so the common case needs no quotes."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        problem = "expected key=value, e.g. limits.max_turns=5"
        raise ConfigError(text.strip(), OVERRIDE_SOURCE, problem)
    try:
        _split_key(key)
    except ValueError as error:
        raise ConfigError(key, OVERRIDE_SOURCE, str(error)) from error
    return key, _parse_value(raw.strip())


def _parse_value(raw: str) -> Any:
    try:
        document = tomllib.loads(f"v = {raw}")
    except tomllib.TOMLDecodeError:
        return raw
    value = document.get("v")
    # More than one key means the text smuggled in a newline; a date is surely a name.
    if len(document) != 1 or isinstance(value, (date, time)):
        return raw
    return value


def describe_config(
    config: BlitzConfig, held_back: Mapping[str, Any] | None = None, policy: AdminPolicy | None = None
) -> str:
    """One `dotted.key = value` line per setting, in the model's order; the keys are valid
    `%blitz_config` input. No secrets: the config holds only the *name* of the key variable,
    and credentials in `api_base` are masked. Keys the admin policy holds are marked; settings
    the workspace file asks for but that are held back until `%blitz_trust` follow, marked."""
    values = flatten(config.model_dump())
    if config.api_base is not None:
        values["api_base"] = redact_url(config.api_base)
    locked = set(policy.locked_keys) if policy is not None else set()
    lines = [
        f"{key} = {_render(value)}" + ("   # locked by the admin policy" if key in locked else "")
        for key, value in values.items()
    ]
    for key, value in flatten_held(held_back or {}).items():
        shown = redact_url(value) if key == "api_base" and isinstance(value, str) else value
        lines.append(f"{key} = {_render(shown)}   # held back: this workspace is not trusted (%blitz_trust)")
    return "\n".join(lines)


def flatten_held(held: Mapping[str, Any]) -> dict[str, Any]:
    """Held-back settings as dotted keys (tables like `hooks` spread out)."""
    flat: dict[str, Any] = {}
    for key, value in held.items():
        if isinstance(value, Mapping):
            flat.update({f"{key}.{inner}": v for inner, v in flatten(value).items()})
        else:
            flat[key] = value
    return flat


def _render(value: Any) -> str:
    if value is None:
        return "(not set)"
    return json.dumps(value)


_SECRET_PARAM = re.compile(r"key|token|secret|password|sig", re.IGNORECASE)


def redact_url(url: str) -> str:
    """Mask a password in the URL and secret-looking query parameters."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", ":***@", 1)
    query = parts.query
    params = parse_qsl(query, keep_blank_values=True)
    if any(_SECRET_PARAM.search(name) for name, _ in params):
        masked = [(k, "***" if _SECRET_PARAM.search(k) else v) for k, v in params]
        query = urlencode(masked, safe="*")
    return urlunsplit(parts._replace(netloc=netloc, query=query))
