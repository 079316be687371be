"""The agent registry (ENG-01, ENG-04): the built-in `blitz` agent plus user agents from
`<workspace>/.blitz/agents/*.md` (front matter + instructions)."""

from __future__ import annotations

import stat
from pathlib import Path

from pydantic import BaseModel, ValidationError

from ...errors import BlitzError, ConfigError, UnknownAgentError
from ...mcp import is_mcp_name
from ...tools.registry import Tool, ToolKind, ToolRegistry

AGENTS_FOLDER = (".blitz", "agents")

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
    """The tools it gets (ENG-04); None means every built-in tool."""


BUILTIN_AGENT = AgentDefinition(
    name="blitz",
    description="General data and coding assistant in the notebook's kernel.",
    instructions=BLITZ_INSTRUCTIONS,
)


FolderState = tuple[tuple[str, int, int, int], ...]
"""(name, mode, size, mtime_ns) of every `*.md` entry: a changed file changes it (ENG-06)."""


def folder_state(workspace: Path) -> FolderState:
    """What `.blitz/agents` holds now, cheaply (one stat per entry, nothing read)."""
    folder = workspace.joinpath(*AGENTS_FOLDER)
    entries: list[tuple[str, int, int, int]] = []
    try:
        paths = sorted(folder.glob("*.md"))
    except OSError:
        return ()
    for path in paths:
        try:
            info = path.lstat()
        except OSError:
            continue
        entries.append((path.name, info.st_mode, info.st_size, info.st_mtime_ns))
    return tuple(entries)


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
        folder = workspace.joinpath(*AGENTS_FOLDER)
        defined: dict[str, str] = {BUILTIN_AGENT.name: "the built-in agent"}
        for name, mode, size, _mtime in state:
            path = folder / name
            shown = "/".join((*AGENTS_FOLDER, name))
            if not stat.S_ISREG(mode) and not (stat.S_ISLNK(mode) and path.is_file()):
                skipped[path.stem] = f"skipped agent file {shown}: not a regular file"
                continue
            if size > MAX_AGENT_FILE_BYTES:  # its text would go with every turn
                skipped[path.stem] = f"skipped agent file {shown}: {size:,} bytes, over {MAX_AGENT_FILE_BYTES:,}"
                continue
            try:
                agent = parse_agent_file(path)
                if agent.name in defined:  # files are read in name order: the first one keeps it
                    skipped[path.stem] = (
                        f"skipped agent file {shown}: the name {agent.name!r} is taken by {defined[agent.name]}"
                    )
                    continue
                defined[agent.name] = shown
                agents.append(agent)
            except UnicodeDecodeError:
                skipped[path.stem] = f"skipped agent file {shown}: not UTF-8 text"
            except ConfigError as exc:
                reason = exc.problem if exc.key.startswith("(") else f"{exc.key}: {exc.problem}"
                skipped[path.stem] = f"skipped agent file {shown}: {reason}"
            except (ValidationError, OSError) as exc:
                reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
                skipped[path.stem] = f"skipped agent file {shown}: {reason}"
        return cls(agents, skipped, state)

    def changed(self, workspace: Path) -> bool:
        """True when `.blitz/agents` no longer looks as it did when this was read."""
        return folder_state(workspace) != self.state

    def pins(self) -> dict[str, str]:
        """Agent name → model pin, for pins that send prompts somewhere (WS-06: they need
        trust); `scripted:` pins send nothing anywhere."""
        return {
            name: agent.model
            for name, agent in self._agents.items()
            if agent.model and not agent.model.startswith("scripted:") and name != BUILTIN_AGENT.name
        }

    def names(self) -> list[str]:
        return sorted(self._agents)

    def get(self, name: str) -> AgentDefinition:
        """ENG-01: an unknown name is an error here; the workspace falls back for the active agent."""
        try:
            return self._agents[name]
        except KeyError:
            if name in self.skipped:
                raise BlitzError(f"agent {name!r} is not available: {self.skipped[name]}") from None
            raise UnknownAgentError(name, list(self._agents)) from None


def parse_agent_file(path: Path) -> AgentDefinition:
    """`---` front matter with `key: value` lines (name, description, model, tools: a, b), then
    the instructions. A small parser on purpose: no YAML dependency for five keys."""
    text = path.read_text(encoding="utf-8")
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
    """ENG-04: exactly the tools the agent names, plus the workflow tools for the root (a
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
    """ENG-17: a run's allowed tools must exist (MCP names are checked when servers answer)."""
    if tools is None:
        return None
    unknown = [name for name in tools if name not in registry and not is_mcp_name(name)]
    if unknown:
        raise BlitzError(
            f"unknown tool(s) {', '.join(unknown)} in the allowed tools; known: {', '.join(registry.names())}"
        )
    return tools
