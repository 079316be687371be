"""Which agent and which model a turn uses, resolved once per turn into one value.

The pre-flight check (can this model ever answer?) and the turn's setup read the same
`Resolved`, so the model that was checked is the model that runs, and `-m NAME` builds the
model once.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from ...errors import ConfigError, UnknownAgentError
from ...models.base import Model
from ...models.factory import model_problem
from ...models.placeholder import PlaceholderModel
from ..turn.agents import AgentDefinition
from .configuration import Configuration


@dataclass(frozen=True)
class Resolved:
    """A turn's agent and model."""

    definition: AgentDefinition
    model: Model


class Resolver:
    """Resolves agents and models against the workspace's configuration."""

    def __init__(self, configuration: Configuration) -> None:
        self.configuration = configuration
        self._usable: dict[tuple[str, str, str | None], str | None] = {}

    def resolve(self, agent: str | None, model: str | Model | None) -> Resolved:
        """The turn's agent (a per-run name must exist) and its model: the per-run one, else
        the agent's pin (held back while the workspace is untrusted), else the session's."""
        definition = self.agent(agent)
        return Resolved(definition, self.model_for(model, definition))

    def agent(self, name: str | None) -> AgentDefinition:
        """A per-run agent must exist; the active one falls back to `blitz`."""
        configuration = self.configuration
        agents = configuration.agents
        if agents.changed(configuration.root):  # an agent file edited since the last turn counts
            agents = configuration.reload_agents()
        if name is not None:
            if name not in agents.names():
                agents = configuration.reload_agents()  # it may have been written since
            return agents.get(name)
        try:
            return agents.get(configuration.config.agent)
        except UnknownAgentError as exc:
            environ = os.environ if configuration.environ is None else configuration.environ
            if environ.get("BLITZ_AGENT", "").strip() == configuration.config.agent:  # asked for, by name
                raise ConfigError("agent", "environment variable BLITZ_AGENT", str(exc)) from None
            return agents.get("blitz")

    def model_for(self, model: str | Model | None, definition: AgentDefinition) -> Model:
        configuration = self.configuration
        if isinstance(model, str):
            return configuration.build(model)
        if model is not None:
            return model
        if definition.model and definition.name in configuration.agents.pins():
            configuration.trust = configuration.trust_state()  # read now: an agent file may have changed
            if configuration.trust.holding_back:  # a pin chooses where prompts go: held until trusted
                return configuration.model
        if definition.model:
            return configuration.build(definition.model)
        return configuration.model

    async def problem(self, model: Model) -> str | None:
        """Why `model` can never answer (see model_problem), looked up once per model name."""
        if isinstance(model, PlaceholderModel):
            return model.reason
        key = (type(model).__name__, model.name, getattr(model, "api_base", None))
        if key not in self._usable:  # litellm's provider table: loaded off the event loop
            self._usable[key] = await asyncio.to_thread(model_problem, model)
        return self._usable[key]

    def summaries(self) -> list[tuple[str, str]]:
        """(name, description) of every agent, for list_agents and invoke_agent."""
        agents = self.configuration.reload_agents()  # an agent file written since the last turn counts
        return [(name, agents.get(name).description) for name in agents.names()]
