"""The agent registry: the built-in `blitz` agent plus user agents from
`<workspace>/.blitz/agents/*.md` (front matter + instructions)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ...core.terms import Reasoning
from ...errors import BlitzError, ConfigError, UnknownAgentError
from ...mcp import is_mcp_name
from ...tools.confined import read_capped
from ...tools.paths import open_in_workspace
from ...tools.registry import Tool, ToolError, ToolKind, ToolRegistry

AGENTS_FOLDER = (".blitz", "agents")
SCRIPTED_PREFIX = "scripted:"

BLITZ_INSTRUCTIONS = """\
You are Blitz, a data and coding assistant working inside a live Jupyter (IPython) kernel.
The user's notebook, its files and its live variables are your workspace.

- Look before you act: use list_variables / describe_variable to see the user's data, and
  read_file / list_files / glob / grep to see files. Do not guess column names or file contents.
- run_python runs code in the user's own namespace: variables you create stay for the user's
  next cells, so name them well and do not overwrite the user's variables without saying so.
- Keep code small and readable; prefer pandas/numpy idioms; show results, not just code.
- File paths are relative to the workspace; you cannot leave it.
- Some tools need the user's approval; when a call is denied, read the reason and adapt.
- Answer concisely in Markdown. Say what you did and what you found; flag anything uncertain.
"""


class AgentDefinition(BaseModel):
    """One agent: its instructions, and optionally a model pin and a tool list."""

    name: str
    description: str = ""
    instructions: str
    model: str | None = None
    """A model pin: this agent always runs on it unless a run overrides the model."""
    tools: list[str] | None = None
    """The tools it gets; None means every built-in tool."""
    reasoning: Reasoning | None = None
    """How hard its model thinks; beats the config's `reasoning`, a run's `--think` beats it."""


BUILTIN_AGENT = AgentDefinition(
    name="blitz",
    description="General data and coding assistant in the notebook's kernel.",
    instructions=BLITZ_INSTRUCTIONS,
)


FolderState = tuple[tuple[str, int, int, int], ...]
"""(name, mode, size, mtime_ns) of every `*.md` entry: a changed file changes it, so an edit counts from the next turn."""
FOLDER_SHOWN = "/".join(AGENTS_FOLDER)
MAX_AGENT_BYTES = 1024 * 1024
"""An agent file larger than this is skipped, not read."""


def folder_state(workspace: Path) -> FolderState:
    """What `.blitz/agents` holds now, cheaply (one stat per entry, nothing read). The folder
    is opened with the file tools' confinement: a `.blitz` or `.blitz/agents` that is a
    symlink out of the workspace reads as empty (and `folder_problem` says why). Checked
    before every turn, so a workspace without the folder costs one `lstat`."""
    try:
        os.lstat(workspace.joinpath(*AGENTS_FOLDER))
    except FileNotFoundError:
        return ()
    except OSError:
        pass  # the confined open below words it
    try:
        fd, _path = open_in_workspace(workspace, FOLDER_SHOWN, directory=True)
    except ToolError:
        return ()
    entries: list[tuple[str, int, int, int]] = []
    try:
        for name in sorted(os.listdir(fd)):
            if not name.endswith(".md"):
                continue
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            entries.append((name, info.st_mode, info.st_size, info.st_mtime_ns))
    except OSError:
        return ()
    finally:
        os.close(fd)
    return tuple(entries)


def folder_problem(workspace: Path) -> str | None:
    """Why `.blitz/agents`, which is there, cannot be read; None when it can (or is absent)."""
    try:
        os.lstat(workspace.joinpath(*AGENTS_FOLDER))
    except OSError:
        try:
            os.lstat(workspace / AGENTS_FOLDER[0])
        except OSError:
            return None
    try:
        os.close(open_in_workspace(workspace, FOLDER_SHOWN, directory=True)[0])
    except ToolError as error:
        if str(error).startswith("no such file"):
            return None
        return f"skipped the agent folder {FOLDER_SHOWN}: {error}"
    return None


BUILTIN_SHOWN = "the built-in agent"
MAX_AGENT_FILE_BYTES = 100_000
"""An agent file is instructions sent with every turn; a larger one is not an agent file."""


class AgentRegistry:
    """Agents by name; the built-in `blitz` is always there unless a file overrides it.

    A file that cannot be read as an agent (not UTF-8, a directory or pipe named `*.md`, bad
    front matter) is skipped with one line in `skipped`, so one broken file never stops the
    others or the built-in agent."""

    def __init__(
        self, agents: list[AgentDefinition], skipped: dict[str, str] | None = None, state: FolderState = ()
    ) -> None:
        self._agents = {agent.name: agent for agent in agents}
        self.skipped: dict[str, str] = dict(skipped or {})
        """Agent name (the file's stem) → why its file was skipped."""
        self.state = state
        """The folder as it was when these were read (see `changed`)."""

    @classmethod
    def load(cls, workspace: Path) -> AgentRegistry:
        state = folder_state(workspace)
        agents = [BUILTIN_AGENT]
        skipped: dict[str, str] = {}
        problem = folder_problem(workspace)
        if problem is not None:
            skipped[FOLDER_SHOWN] = problem
        defined: dict[str, str] = {BUILTIN_AGENT.name: BUILTIN_SHOWN}
        for name, mode, size, _mtime in state:
            stem = name.removesuffix(".md")
            shown = f"{FOLDER_SHOWN}/{name}"
            if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                skipped[stem] = f"skipped agent file {shown}: not a regular file"
                continue
            if size > MAX_AGENT_FILE_BYTES:  # its text would go with every turn
                skipped[stem] = f"skipped agent file {shown}: {size:,} bytes, over {MAX_AGENT_FILE_BYTES:,}"
                continue
            try:
                agent = parse_agent_text(read_capped(workspace, shown, MAX_AGENT_BYTES), workspace / shown)
                outside = _scripted_outside(agent.model, workspace)
                if outside:
                    skipped[stem] = f"skipped agent file {shown}: {outside}"
                    continue
                # files are read in name order: the first one keeps a name; `blitz.md` may stand in
                # for the built-in agent (by its own file name only, never under another name)
                overrides_builtin = agent.name == BUILTIN_AGENT.name == stem and defined[stem] == BUILTIN_SHOWN
                if agent.name in defined and not overrides_builtin:
                    skipped[stem] = (
                        f"skipped agent file {shown}: the name {agent.name!r} is taken by {defined[agent.name]}"
                    )
                    continue
                defined[agent.name] = shown
                agents.append(agent)
            except ToolError as exc:
                reason = str(exc).removeprefix(f"{shown} ")
                skipped[stem] = f"skipped agent file {shown}: {_tool_reason(reason)}"
            except UnicodeDecodeError:
                skipped[stem] = f"skipped agent file {shown}: not UTF-8 text"
            except ConfigError as exc:
                reason = exc.problem if exc.key.startswith("(") else f"{exc.key}: {exc.problem}"
                skipped[stem] = f"skipped agent file {shown}: {reason}"
            except ValidationError as exc:
                skipped[stem] = f"skipped agent file {shown}: {exc.errors()[0]['msg']}"
        return cls(agents, skipped, state)

    def changed(self, workspace: Path) -> bool:
        """True when `.blitz/agents` no longer looks as it did when this was read."""
        return folder_state(workspace) != self.state

    def pins(self) -> dict[str, str]:
        """Agent name → model pin, on any name (a file named `blitz` overrides the built-in
        agent, pin included). They need trust unless the user's own config names that model
        (config/trust.py); a `scripted:` pin sends nothing anywhere, and one outside the
        workspace never loads (the file is skipped)."""
        return {
            name: agent.model
            for name, agent in self._agents.items()
            if agent.model and not agent.model.startswith(SCRIPTED_PREFIX)
        }

    def names(self) -> list[str]:
        return sorted(self._agents)

    def get(self, name: str) -> AgentDefinition:
        """An unknown name is an error here; the workspace falls back for the active agent."""
        try:
            return self._agents[name]
        except KeyError:
            if name in self.skipped:
                raise BlitzError(f"agent {name!r} is not available: {self.skipped[name]}") from None
            raise UnknownAgentError(name, list(self._agents)) from None


def _tool_reason(reason: str) -> str:
    """The confinement's wording, shortened for the "not UTF-8 text" case the notices name."""
    return "not UTF-8 text" if reason.endswith("is not UTF-8 text") else reason


def _scripted_outside(model: str | None, workspace: Path) -> str | None:
    """Why a `scripted:` pin may not load: its file is outside the workspace (a repository's
    agent file chose it, so it must stay inside, like the file tools' paths)."""
    if not model or not model.startswith(SCRIPTED_PREFIX):
        return None
    given = Path(model.removeprefix(SCRIPTED_PREFIX)).expanduser()
    root = workspace.resolve()
    try:
        resolved = (given if given.is_absolute() else root / given).resolve()
    except (OSError, RuntimeError):
        return f"its model pin {model!r} cannot be resolved"
    if resolved == root or root in resolved.parents:
        return None
    return f"its model pin {model!r} names a file outside the workspace"


def parse_agent_file(path: Path) -> AgentDefinition:
    """`parse_agent_text` of a file the caller trusts (tests, the user's own files)."""
    return parse_agent_text(path.read_text(encoding="utf-8"), path)


def parse_agent_text(text: str, path: Path) -> AgentDefinition:
    """`---` front matter with `key: value` lines (name, description, model, tools: a, b), then
    the instructions. A small parser on purpose: no YAML dependency for five keys."""
    if "\x00" in text:
        raise ConfigError("(file)", str(path), "the file holds NUL bytes; it is not an agent file")
    fields: dict[str, str] = {}
    body = text
    if text.startswith("---"):
        header, separator, rest = text[3:].partition("\n---")
        if not separator:
            raise ConfigError("(front matter)", str(path), "front matter opened with --- is never closed")
        body = rest.lstrip("\n")
        for line in header.strip().splitlines():
            key, colon, value = line.partition(":")
            if not colon:
                raise ConfigError("(front matter)", str(path), f"expected `key: value`, got {line!r}")
            fields[key.strip()] = value.strip()
    unknown = set(fields) - {"name", "description", "model", "tools"}
    if unknown:
        raise ConfigError(sorted(unknown)[0], str(path), "unknown agent field (name, description, model, tools)")
    tools = fields.get("tools")
    return AgentDefinition(
        name=fields.get("name") or path.stem,
        description=fields.get("description", ""),
        instructions=body.strip(),
        model=fields.get("model") or None,
        tools=[t.strip() for t in tools.strip("[]").split(",") if t.strip()] if tools else None,
    )


def agent_tools(registry: ToolRegistry, definition: AgentDefinition, *, root: bool = True) -> dict[str, Tool]:
    """Exactly the tools the agent names, plus the workflow tools for the root (a
    sub-agent gets none: plans and todo lists belong to the turn the user started). MCP tools
    come from their servers at the turn's setup, not from here."""
    names = registry.names()
    workflow = [n for n in names if registry.get(n).kind is ToolKind.WORKFLOW]  # type: ignore[union-attr]
    if definition.tools is not None:
        names = [*definition.tools, *(n for n in workflow if n not in definition.tools)]
    if not root:
        names = [n for n in names if n not in workflow]
    chosen: dict[str, Tool] = {}
    for name in names:
        if is_mcp_name(name):
            continue
        tool = registry.get(name)
        if tool is None:
            raise BlitzError(f"agent {definition.name!r} names an unknown tool {name!r}")
        chosen[name] = tool
    return chosen


def check_tool_names(registry: ToolRegistry, tools: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """A run's allowed tools must exist (MCP names are checked when servers answer)."""
    if tools is None:
        return None
    unknown = [name for name in tools if name not in registry and not is_mcp_name(name)]
    if unknown:
        raise BlitzError(
            f"unknown tool(s) {', '.join(unknown)} in the allowed tools; known: {', '.join(registry.names())}"
        )
    return tools
