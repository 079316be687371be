"""The agent registry (ENG-01, ENG-04): the built-in `blitz` agent plus user agents from
`<workspace>/.blitz/agents/*.md` (front matter + instructions)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from ..errors import ConfigError, UnknownAgentError

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


class AgentRegistry:
    """Agents by name; the built-in `blitz` is always there unless a file overrides it."""

    def __init__(self, agents: list[AgentDefinition]) -> None:
        self._agents = {agent.name: agent for agent in agents}

    @classmethod
    def load(cls, workspace: Path) -> AgentRegistry:
        agents = [BUILTIN_AGENT]
        folder = workspace / ".blitz" / "agents"
        if folder.is_dir():
            agents += [parse_agent_file(path) for path in sorted(folder.glob("*.md"))]
        return cls(agents)

    def names(self) -> list[str]:
        return sorted(self._agents)

    def get(self, name: str) -> AgentDefinition:
        """ENG-01: an unknown name is an error here; the workspace falls back for the active agent."""
        try:
            return self._agents[name]
        except KeyError:
            raise UnknownAgentError(name, list(self._agents)) from None


def parse_agent_file(path: Path) -> AgentDefinition:
    """`---` front matter with `key: value` lines (name, description, model, tools: a, b), then
    the instructions. A small parser on purpose: no YAML dependency for five keys."""
    text = path.read_text(encoding="utf-8")
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
