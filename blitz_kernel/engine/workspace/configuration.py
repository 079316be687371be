"""The workspace's configuration service: the layered settings, workspace trust, and what is
built from them (the session-wide model, telemetry, hooks, the redactor).

One owner for everything `%blitz_config`, `%blitz_model` and `%blitz_trust` change, so a change
is validated as a whole and applied as a whole: a value that fails, or a model that cannot be
built, changes nothing (docs/configuration.md).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...config.loading import OVERRIDE_SOURCE, check_policy_names, load_config, workspace_trust
from ...config.policy import AdminPolicy, load_policy
from ...config.settings import BlitzConfig
from ...config.trust import TrustState, TrustStore
from ...core.redact import Redactor
from ...errors import ConfigError
from ...models.base import Model
from ...models.factory import build_model, model_problem
from ...models.placeholder import PlaceholderModel
from ...tools.registry import ToolRegistry
from ..safety.hooks import HookRunner
from ..tracing import Telemetry
from ..turn.agents import AgentRegistry

MODEL_SETTINGS = (
    "model",
    "api_base",
    "api_key_env",
    "model_retries",
    "stall",
    "fallback_models",
    "breaker",
    "prompt_cache",
)
"""Settings the session-wide model is built from: changing one rebuilds it."""


class Configuration:
    """The settings of one workspace and what is built from them."""

    def __init__(
        self,
        root: Path,
        tools: ToolRegistry,
        overrides: Mapping[str, Any],
        *,
        model: Model | None,
        environ: Mapping[str, str] | None,
        home: Path | None,
    ) -> None:
        self.root = root
        self.tools = tools
        self.environ = environ
        self.home = home
        # read once, first: a broken policy fails the open (no turn runs), and a variable the
        # user unsets later in the kernel does not lift it
        self.policy: AdminPolicy | None = load_policy(os.environ if environ is None else environ)
        self._refuse_locked(overrides)
        self._overrides: dict[str, Any] = dict(overrides)
        self.agents = AgentRegistry.load(root)
        self.trust = self.trust_state()
        self.config = self._load(self._overrides)
        self._explicit_model = model
        self.model: Model = model or self.build(self.config.model)
        self.redactor = self._redactor(self.config)
        self.telemetry = self._telemetry(self.config)
        self.hooks = HookRunner(self.config.hooks, root, self.telemetry)

    @property
    def overrides(self) -> dict[str, Any]:
        return dict(self._overrides)

    def _load(self, overrides: Mapping[str, Any]) -> BlitzConfig:
        config = load_config(
            self.root,
            overrides=overrides,
            environ=self.environ,
            home=self.home,
            agent_pins=self.agents.pins(),
            policy=self.policy,
        )
        check_policy_names(config, self.tools.names(), overrides, self.policy)
        return config

    def build(self, name: str | None, config: BlitzConfig | None = None) -> Model:
        """The model `name` as the configuration says to reach it; a model (or fallback) the
        admin policy does not allow is a placeholder that says so."""
        config = config or self.config
        if self.policy is not None:
            for candidate in [name, *config.fallback_models] if name else []:
                refused = self.policy.model_refusal(candidate)
                if refused is not None:
                    return PlaceholderModel(refused, name=candidate)
        return build_model(
            name,
            workspace=self.root,
            api_base=config.api_base,
            api_key_env=config.api_key_env,
            retries=config.model_retries,
            stall_first_byte_s=config.stall.first_byte_s,
            stall_between_chunks_s=config.stall.between_chunks_s,
            fallback_models=config.fallback_models,
            breaker_failures=config.breaker.failures,
            breaker_cooldown_s=config.breaker.cooldown_s,
            prompt_caching=config.prompt_cache.enabled,
            cache_ttl_s=config.prompt_cache.gemini_ttl_s,
        )

    def configure(self, **dotted: Any) -> BlitzConfig:
        """Set configuration keys (`%blitz_config`). A value that fails to validate raises
        ConfigError and changes nothing; so does a model that cannot be built (a scripted file
        that is not there, an unset `api_key_env` variable), and so does a key the admin
        policy locks."""
        self._refuse_locked(dotted)
        candidate = {**self._overrides, **dotted}
        config = self._load(candidate)
        if config.store != self.config.store:  # the book and its locks were opened with the workspace
            raise ConfigError(
                "store",
                OVERRIDE_SOURCE,
                "is read when the workspace opens; set it in ~/.blitz/config.toml or BLITZ_STORE_URL and restart the kernel",
            )
        changed = [key for key in MODEL_SETTINGS if getattr(self.config, key) != getattr(config, key)]
        rebuild = "model" in dotted or (bool(changed) and self._explicit_model is None)
        # only when it matters: a rebuilt scripted model restarts its script
        model = self.build(config.model, config) if rebuild else self.model
        # a model named here must build; another setting must not break a model that worked
        must_build = "model" in dotted or not isinstance(self.model, PlaceholderModel)
        if rebuild and config.model and isinstance(model, PlaceholderModel) and must_build:
            key = "model" if "model" in dotted else changed[0]
            raise ConfigError(key, OVERRIDE_SOURCE, model.reason)
        if "model" in dotted and rebuild and not isinstance(model, PlaceholderModel):
            problem = model_problem(model)  # a name no provider serves: refused now, not at the turn
            if problem is not None:
                raise ConfigError("model", OVERRIDE_SOURCE, problem)
        if "fallback_models" in dotted:  # likewise each fallback, not when the model first fails
            self._check_fallbacks(config)
        self.trust = self.trust_state()
        telemetry = self._telemetry(config) if config.telemetry != self.config.telemetry else self.telemetry
        self._overrides, self.config, self.telemetry = candidate, config, telemetry
        self.hooks = HookRunner(config.hooks, self.root, telemetry)
        self.redactor = self._redactor(config)
        if rebuild:
            self._explicit_model, self.model = None, model
        return config

    def _refuse_locked(self, dotted: Mapping[str, Any]) -> None:
        if self.policy is not None:
            for key in dotted:
                if self.policy.holds(key) is not None:
                    raise self.policy.locked_error(key)

    def _check_fallbacks(self, config: BlitzConfig) -> None:
        alone = config.model_copy(update={"fallback_models": []})  # each one, not a chain
        for name in config.fallback_models:
            fallback = self.build(name, alone)
            problem = fallback.reason if isinstance(fallback, PlaceholderModel) else model_problem(fallback)
            if problem is not None:
                raise ConfigError("fallback_models", OVERRIDE_SOURCE, problem)

    # -- trust ----------------------------------------------------------------------------------

    def trust_state(self) -> TrustState:
        """What the workspace's own files ask for, and which of it waits for trust."""
        return workspace_trust(self.root, self.environ, self.home, self.agents.pins())

    def trust_workspace(self) -> TrustState:
        """Trust what this workspace's own config asks for now; it applies from the next turn."""
        state = self.trust_state()
        TrustStore(self.home).trust(self.root, state.held)
        self._reload_trust()
        return state

    def revoke_trust(self) -> bool:
        """Hold the workspace's settings back again."""
        removed = TrustStore(self.home).revoke(self.root)
        self._reload_trust()
        return removed

    def _reload_trust(self) -> None:
        self.trust = self.trust_state()
        self.configure()  # re-read the files with the new trust

    def reload_agents(self) -> AgentRegistry:
        """Read `.blitz/agents/*.md` again; a broken file is skipped and named in `skipped`."""
        self.agents = AgentRegistry.load(self.root)
        return self.agents

    # -- what is built from the settings --------------------------------------------------------

    def _telemetry(self, config: BlitzConfig) -> Telemetry:
        settings = config.telemetry
        return Telemetry(
            enabled=settings.enabled,
            exporter=settings.exporter,
            include_content=settings.include_content,
            redact=lambda text: self.redactor.redact(text),  # the one redactor: it learns
        )

    def _redactor(self, config: BlitzConfig) -> Redactor:
        """The secrets of this kernel's environment and the configured key variable, the
        secret assignments of the workspace's `.env`, and what the redactor learned so far."""
        environ = os.environ if self.environ is None else self.environ
        learned = self.redactor.learned if hasattr(self, "redactor") else ()
        redactor = Redactor.from_environment(environ, [config.api_key_env], learned=learned)
        redactor.learn_file(self.root / ".env")
        return redactor
