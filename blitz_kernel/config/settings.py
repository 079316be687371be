"""The settings model: every configuration key, its type, default and range (docs/interface.md).

Where values come from and how layers merge is `config.py`'s business; this module only says
what a valid configuration is. Every section forbids unknown keys (a typo is an error that
names it) and non-finite numbers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ..core.store_url import StoreUrlError, check_store_url
from ..core.terms import HeadlessPolicy, Reasoning, ToolPolicy
from ..core.usage import Price
from ..core.web_access import WebAccess
from .mcp_servers import McpConfig

TelemetryExporter = Literal["console", "otlp", "memory"]


class _Section(BaseModel):
    # A typo in a key must be an error that names it, never a silently ignored setting; a NaN
    # or infinite number compares false or overflows wherever it is used.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class ToolsConfig(_Section):
    """How tools run."""

    max_parallel: int = Field(default=8, ge=1)
    """Tool calls of one model response that run at once; the rest wait their turn."""


class ApprovalConfig(_Section):
    """Who may let a tool call run."""

    headless: HeadlessPolicy = "deny"
    """What `ask` becomes when nobody can answer; deny by default so nothing runs unseen."""
    tools: dict[str, ToolPolicy] = {}
    """Policy per tool name or `*` pattern (`mcp__warehouse__*`); tools not listed get their
    kind's default (read-only allow, mutating ask), which the tool registry knows and the
    config does not. The workspace checks the names against the known tools."""

    @field_validator("tools")
    @classmethod
    def _risky_only_for_code(cls, value: dict[str, ToolPolicy]) -> dict[str, ToolPolicy]:
        for name, policy in value.items():
            if policy == "ask-if-risky" and name != "run_python":
                raise ValueError(f"ask-if-risky is for run_python only, not {name!r}")
        return value

    max_pending: int = Field(default=4, ge=1)
    """Permission requests that may wait at once before the turn stops."""
    timeout_s: float | None = Field(default=None, gt=0)
    """Seconds a permission request waits for an answer before it counts as denied."""


class ContextConfig(_Section):
    """When and how history is compacted."""

    token_threshold: int | None = Field(default=None, ge=1)
    """Context size that triggers auto-compaction; unset means 80% of the model's window,
    which only the model adapter knows."""
    retain_events: int = Field(default=20, ge=0)
    """Most recent events kept verbatim when older ones are summarised."""


class LimitsConfig(_Section):
    """Per-turn ceilings; a run's own options override them."""

    max_turns: int = Field(default=50, ge=1)
    """Model calls one turn may make, so a looping agent stops on its own."""
    max_cost_usd: float | None = Field(default=None, ge=0)
    """Spend ceiling for one turn in USD; unset means no ceiling."""
    timeout_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    """Wall-clock seconds one turn may take; unset means no limit."""
    max_cost_usd_session: float | None = Field(default=None, gt=0)
    """Spend ceiling for a whole session: once passed, later turns are refused before
    any model call until `%blitz_usage --add-budget USD`."""
    shared_budget_file: Path | None = None
    """A budget ledger several runs spend from together (`blitz run -j`, `blitz eval` set it
    with BLITZ_SHARED_BUDGET): each model call is refused when its estimate would pass
    what is left of it."""
    repeat_warn: int = Field(default=3, ge=2)
    """Identical consecutive tool calls after which the result tells the model it is
    repeating itself."""
    repeat_stop: int = Field(default=5, ge=2)
    """Identical consecutive tool calls that end the turn with stop reason `watchdog`."""
    max_concurrent_turns: int = Field(default=8, ge=1, le=1000)
    """Turns that may run at once in one workspace, and in one kernel across its workspaces
    (sub-agents and side questions are part of their turn); one more is refused as busy."""

    @model_validator(mode="after")
    def _warn_before_stop(self) -> LimitsConfig:
        if self.repeat_stop < self.repeat_warn:
            raise ValueError(f"repeat_stop ({self.repeat_stop}) must not be below repeat_warn ({self.repeat_warn})")
        return self


class ModelSettings(_Section):
    """Generation settings for models whose name starts with a key of `models`."""

    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    reasoning: Reasoning | None = None
    context_window: int | None = Field(default=None, ge=1024)
    """Tokens the model can read; needed for auto-compaction of models litellm does not know
    (local `openai/<name>` servers)."""


class StallConfig(_Section):
    """Stall detection: how long a provider may send nothing before the attempt fails
    with a retryable `ModelStallError` (then the fallback chain may act on it). Two budgets,
    because a model may think a while before its first token but should not pause mid-answer."""

    first_byte_s: float = Field(default=120, gt=0, allow_inf_nan=False)
    """Seconds from sending the request to the first streamed chunk."""
    between_chunks_s: float = Field(default=60, gt=0, allow_inf_nan=False)
    """Seconds between two streamed chunks."""


class PromptCacheConfig(_Section):
    """Prompt caching where the provider must be asked for it: Anthropic's cache marks and
    Gemini's context cache (docs/providers.md#prompt-caching). On by default: it lowers the
    input cost of every step after the first."""

    enabled: bool = True
    """Mark prompts for the provider's cache; off sends every prompt uncached."""
    gemini_ttl_s: int = Field(default=300, ge=60, le=86400)
    """Seconds Gemini keeps a context cache after it is made; Google bills its storage by the hour."""


class StopConfig(_Section):
    """How Stop ends a turn: gracefully after the current step, and by force (the running step
    cancelled) when that has not happened within the grace, so a stalled stream or a long tool
    call cannot keep a stopping turn alive."""

    grace_s: float = Field(default=3, gt=0, le=3600, allow_inf_nan=False)
    """Seconds a graceful stop may take before it becomes a force stop."""


class BreakerConfig(_Section):
    """Circuit breakers of the fallback chain, one per model name in the kernel."""

    failures: int = Field(default=3, ge=1)
    """Consecutive failures that open a model's breaker: it is skipped until the cool-down ends."""
    cooldown_s: float = Field(default=60, gt=0, allow_inf_nan=False)
    """Seconds an open breaker waits before one trial call (half-open); a success closes it."""


class TelemetryConfig(_Section):
    """OpenTelemetry spans."""

    enabled: bool = False
    """Off by default: nothing leaves the kernel unless asked for."""
    exporter: TelemetryExporter = "console"
    """Where spans go; `memory` is for tests."""
    include_content: bool = False
    """Put prompts, replies and tool content in spans; off because they may be private."""


class NotebookConfig(_Section):
    """The notebook front end (the live turn widget)."""

    render_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    """Seconds a permission request or a plan waits for a displayed widget to render before
    nobody is taken to be there (fail-closed: the headless policy answers)."""


HookPoint = Literal["prompt_submit", "pre_tool", "post_tool"]
_CALLABLE_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


class HookSpec(_Section):
    """One hook: a shell command that reads the event as JSON on stdin (exit 2 blocks,
    stderr is the reason), or a Python callable `package.module:function` that returns None or
    a reason (it may be async)."""

    command: str | None = None
    callable: str | None = None
    match: str | None = None
    """Tool-name pattern (`run_python`, `mcp__*`); unset: every tool. Ignored for prompt_submit."""
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    """A hook that takes longer blocks (fail-closed) and says so."""

    @model_validator(mode="after")
    def _one_kind(self) -> HookSpec:
        if (self.command is None) == (self.callable is None):
            raise ValueError("a hook needs exactly one of `command` or `callable`")
        if self.callable is not None and not _CALLABLE_PATH.fullmatch(self.callable):
            raise ValueError(f"callable must look like package.module:function, got {self.callable!r}")
        return self


class HooksConfig(_Section):
    """Hooks by point."""

    prompt_submit: list[HookSpec] = []
    """May block a prompt before anything is recorded."""
    pre_tool: list[HookSpec] = []
    """May block a tool call; the model reads the reason."""
    post_tool: list[HookSpec] = []
    """Observes a finished call; never delays the turn."""


class CheckpointsConfig(_Section):
    """Per-turn checkpoints for undo."""

    keep_turns: int = Field(default=5, ge=1, le=100)
    """Turns whose replaced or deleted variables stay referenced (not copied) for undo."""


class PrivacyConfig(_Section):
    """What variable descriptions may carry to the model."""

    variables: Literal["full", "schema"] = "full"
    """`schema`: names, types, shapes, column names and dtypes only; no values (no head,
    describe or reprs)."""


class CompletionConfig(_Section):
    """Inline completion in JupyterLab's code cells (docs/completion.md). Off until a model is
    named: nothing is sent anywhere before the user chooses one. A workspace's own file cannot
    set any of it without trust (it would choose where the user's code goes)."""

    model: str | None = Field(default=None, min_length=1)
    """A fast litellm model name (`openai/gpt-4.1-nano`, `ollama/qwen2.5-coder`); unset: off."""
    max_tokens: int = Field(default=64, ge=1, le=1024)
    """The longest suggestion, in tokens."""
    debounce_ms: int = Field(default=250, ge=0, le=5000)
    """How long typing must pause before a suggestion is asked for."""


class StoreConfig(_Section):
    """Where sessions are kept (docs/store.md). Read when the workspace opens; a workspace's
    own file cannot set it without trust."""

    url: str | None = None
    """`sqlite:///PATH` (relative to the workspace; `~` expanded); unset: `.blitz/blitz.db`.
    `postgresql://USER@HOST/DATABASE`: a shared PostgreSQL store for a team."""
    path: str | None = Field(default=None, min_length=1)
    """The SQLite file's path: the same as `url = "sqlite:///PATH"`."""

    @field_validator("url")
    @classmethod
    def _known_backend(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_store_url(value)
            except StoreUrlError as exc:
                raise ValueError(str(exc)) from None
        return value

    @model_validator(mode="after")
    def _one_of(self) -> StoreConfig:
        if self.url is not None and self.path is not None:
            raise ValueError("set store.url or store.path, not both")
        return self


def _no_unknown_price_keys(value: Any) -> Any:
    """`Price` ignores unknown keys, so a typo (`inptu`) would vanish silently; refuse it here."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(Price.model_fields))
        if unknown:
            raise PydanticCustomError("unknown_key", "unknown key {key}", {"key": str(unknown[0])})
    return value


ConfiguredPrice = Annotated[Price, BeforeValidator(_no_unknown_price_keys)]

_ENV_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_MODEL_RETRIES = 20
"""More retries than this is a turn that never ends on a provider that is down."""


def _http_url(value: str | None) -> str | None:
    """`api_base` is where prompts go: an http(s) URL with a host, nothing else."""
    if value is None:
        return None
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PydanticCustomError(
            "url", "expected an http:// or https:// URL with a host, got '{value}'", {"value": value}
        )
    return value.strip()


HttpUrl = Annotated[str | None, AfterValidator(_http_url)]


class BlitzConfig(_Section):
    """All settings of one workspace; docs/configuration.md has the table."""

    # `model_retries` starts with pydantic's reserved `model_` prefix; the name is ours to keep.
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), allow_inf_nan=False)

    model: str | None = None
    """litellm model name or `scripted:PATH`; unset opens on a placeholder that explains how
    to set one."""
    api_base: HttpUrl = None
    """Base URL for OpenAI-compatible servers or Ollama; unset means the provider default."""
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key; the key itself never lives in
    a config file, where it would be committed or displayed."""
    fallback_models: list[str] = []
    """Models tried in order when the model fails after its retries or its breaker is open;
    each is built like `model`, with the same api_base and api_key_env."""
    temperature: float | None = Field(default=None, ge=0)
    """Sampling temperature; unset means the provider default."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Completion token cap per call; unset means the provider default."""
    reasoning: Reasoning | None = None
    """How hard models think (off, low, medium, high); unset means the provider default."""
    model_retries: int = Field(default=3, ge=0, le=MAX_MODEL_RETRIES)
    """Retries of a retryable model failure (rate limit, 5xx, timeout, stall) before it surfaces."""
    stall: StallConfig = StallConfig()
    """Stall detection budgets."""
    prompt_cache: PromptCacheConfig = PromptCacheConfig()
    """Prompt caching the provider must be asked for (Anthropic, Gemini)."""
    breaker: BreakerConfig = BreakerConfig()
    """Circuit breaker settings of the fallback chain."""
    stop: StopConfig = StopConfig()
    """How long a graceful stop may take before it is forced."""
    agent: str = "blitz"
    """The active (root) agent."""
    tools: ToolsConfig = ToolsConfig()
    """Tool execution settings."""
    approval: ApprovalConfig = ApprovalConfig()
    """Approval policies."""
    context: ContextConfig = ContextConfig()
    """Compaction settings."""
    limits: LimitsConfig = LimitsConfig()
    """Per-turn limits."""
    prices: dict[str, ConfiguredPrice] = {}
    """USD per 1M tokens by model name or prefix; checked before litellm's map."""
    telemetry: TelemetryConfig = TelemetryConfig()
    """OpenTelemetry settings."""
    models: dict[str, ModelSettings] = {}
    """Per-model settings by model name or prefix; the longest matching key wins."""
    notebook: NotebookConfig = NotebookConfig()
    """Notebook front end settings."""
    mcp: McpConfig = McpConfig()
    """MCP servers whose tools the agents are offered (`[mcp.servers.NAME]`)."""
    hooks: HooksConfig = HooksConfig()
    """Hooks around prompts and tool calls; from workspace files only once trusted."""
    privacy: PrivacyConfig = PrivacyConfig()
    """What variable descriptions send."""
    checkpoints: CheckpointsConfig = CheckpointsConfig()
    """Per-turn checkpoints for undo."""
    store: StoreConfig = StoreConfig()
    completion: CompletionConfig = CompletionConfig()
    """Where sessions are kept (`store.url`, `store.path`)."""
    web: WebAccess = WebAccess()
    """Where `web_fetch` may go and how much it may read (`web.allow_domains`, …)."""
    language: str | None = Field(default=None, min_length=1, max_length=40)
    """Reply language, added to the root agent's instructions."""

    def model_settings(self, model: str) -> ModelSettings:
        """The settings for `model`: the longest key of `models` it starts with, each field
        falling back to the global value (a per-model value beats the global one)."""
        matches = [key for key in self.models if model == key or model.startswith(key)]
        chosen = self.models[max(matches, key=len)] if matches else ModelSettings()
        return ModelSettings(
            temperature=chosen.temperature if chosen.temperature is not None else self.temperature,
            max_tokens=chosen.max_tokens if chosen.max_tokens is not None else self.max_tokens,
            reasoning=chosen.reasoning if chosen.reasoning is not None else self.reasoning,
            context_window=chosen.context_window,
        )

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        # A pasted key (`sk-...`) is not a variable name; refuse it without echoing it back.
        if value is not None and not _ENV_VAR_NAME.fullmatch(value):
            raise ValueError("must be the name of an environment variable (e.g. OPENAI_API_KEY), not the key itself")
        return value
