"""Workspace: the engine's front door (WS-01).

Opening a directory loads the configuration, the agent registry, the tool registry and the
model; it never fails because of the model (a placeholder model explains what is wrong on
every call). `run` resolves one turn's agent, model, tools, limits and approval into a
TurnPlan and hands it to the TurnRunner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import BlitzConfig, load_config
from ..core.usage import PriceBook, UsageLedger
from ..errors import BlitzError, SessionBusyError, SteerTooLateError, UnknownAgentError
from ..models.base import Model
from ..models.factory import build_model
from ..tools import builtin_tools
from ..tools.registry import KernelContext, Tool, ToolContext, ToolKind, ToolRegistry
from ..tools.session_search import SEARCHER
from .agents import AgentDefinition, AgentRegistry
from .approval import ApprovalGate, Approver, HeadlessApprover, Policy
from .compaction import CompactionResult, Compactor, manual_window
from .loop import EventHandler, TurnLimits, TurnPlan, TurnResult, TurnRunner
from .modes import ASIDE_INSTRUCTIONS, ASIDE_MODE, PLAN_INSTRUCTIONS, PLAN_MODE, PlanReviewer
from .session import Session
from .sessions import SessionBook
from .steering import TurnControl
from .tracing import Telemetry


class Workspace:
    """A directory, its configuration, agents, tools, model and sessions."""

    def __init__(
        self,
        root: Path,
        *,
        overrides: Mapping[str, Any] | None = None,
        model: Model | None = None,
        kernel: KernelContext | None = None,
        environ: Mapping[str, str] | None = None,
        home: Path | None = None,
        durable: bool = True,
    ) -> None:
        self.root = root.resolve()
        self.kernel = kernel
        self._environ = environ
        self._home = home
        self._overrides: dict[str, Any] = dict(overrides or {})
        self.config: BlitzConfig = self._load(self._overrides)
        self.agents = AgentRegistry.load(self.root)
        self.tools = ToolRegistry(builtin_tools())
        self._explicit_model = model
        self.model: Model = model or self._build(self.config.model)
        self.telemetry = self._telemetry(self.config)
        self._thresholds: dict[tuple[str, int | None], int | None] = {}
        # WS-02: sessions live in <root>/.blitz/blitz.db; `durable=False` keeps them in memory.
        self.sessions = SessionBook.for_workspace(self.root) if durable else SessionBook()

    @classmethod
    def open(
        cls,
        path: str | Path = ".",
        *,
        model: str | Model | None = None,
        overrides: Mapping[str, Any] | None = None,
        kernel: KernelContext | None = None,
        environ: Mapping[str, str] | None = None,
        home: Path | None = None,
        durable: bool = True,
    ) -> Workspace:
        """Open `path` as a workspace; `model` is a litellm name, `scripted:PATH` or a Model."""
        merged = dict(overrides or {})
        if isinstance(model, str):
            merged["model"] = model
        return cls(
            Path(path), overrides=merged, model=model if not isinstance(model, str) and model else None,
            kernel=kernel, environ=environ, home=home, durable=durable,
        )

    # -- configuration ------------------------------------------------------------------------

    def _load(self, overrides: Mapping[str, Any]) -> BlitzConfig:
        return load_config(self.root, overrides=overrides, environ=self._environ, home=self._home)

    @staticmethod
    def _telemetry(config: BlitzConfig) -> Telemetry:
        settings = config.telemetry
        return Telemetry(enabled=settings.enabled, exporter=settings.exporter, include_content=settings.include_content)

    def _build(self, name: str | None) -> Model:
        config = self.config
        return build_model(
            name, workspace=self.root, api_base=config.api_base, api_key_env=config.api_key_env,
            retries=config.model_retries,
        )

    def configure(self, **dotted: Any) -> BlitzConfig:
        """Set configuration keys for this workspace (`%blitz_config`). A value that fails to
        validate raises ConfigError and changes nothing (ENG-06)."""
        candidate = {**self._overrides, **dotted}
        config = self._load(candidate)
        telemetry = self._telemetry(config) if config.telemetry != self.config.telemetry else self.telemetry
        previous, self._overrides, self.config, self.telemetry = self.config, candidate, config, telemetry
        model_settings = ("model", "api_base", "api_key_env", "model_retries")
        changed = any(getattr(previous, key) != getattr(config, key) for key in model_settings)
        if "model" in dotted or (changed and self._explicit_model is None):
            # only when it matters: a rebuilt scripted model restarts its script (ENG-06)
            self._explicit_model = None
            self.model = self._build(config.model)
        return config

    def set_model(self, name: str) -> Model:
        """Switch the session-wide model; takes effect on the next turn (ENG-06)."""
        self.configure(model=name)
        return self.model

    @property
    def overrides(self) -> dict[str, Any]:
        return dict(self._overrides)

    # -- sessions -----------------------------------------------------------------------------

    def session(self, name: str = "default") -> Session:
        return self.sessions.get(name)

    def usage(self, session: str = "default") -> UsageLedger:
        return self.session(session).ledger

    def steer(self, session: str, text: str) -> None:
        """ENG-40/42: queue `text` for the running turn, or raise SteerTooLateError."""
        control = self.session(session).running
        if control is None:
            raise SteerTooLateError(f"session {session!r} has no running turn; send it as a prompt")
        control.steer(text)

    def stop(self, session: str) -> bool:
        """Ask the running turn to stop after its current step; False when none runs."""
        control = self.session(session).running
        if control is None:
            return False
        control.request_stop()
        return True

    # -- turns --------------------------------------------------------------------------------

    async def run(
        self,
        prompt: str,
        *,
        session: str = "default",
        agent: str | None = None,
        model: str | Model | None = None,
        max_turns: int | None = None,
        max_cost_usd: float | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the contract's name; enforced by asyncio.timeout in the loop
        tools: list[str] | None = None,
        approve: Policy | None = None,
        approver: Approver | None = None,
        on_event: EventHandler | None = None,
        kernel: KernelContext | None = None,
        plan: bool = False,
        plan_reviewer: PlanReviewer | None = None,
    ) -> TurnResult:
        """Run one turn (ENG-10) in `session`; per-run options override the configuration for
        this turn only (ENG-16). `plan=True` is a plan-only turn (ENG-30..32)."""
        state = self.session(session)
        self._claim(state)
        context = kernel or self.kernel
        state.prepare_resume_note(context.user_ns if context is not None else None)  # WS-02 restart note
        control = TurnControl()
        state.running = control  # at once: a second run or a steer meanwhile sees this turn
        try:
            turn_plan = self._plan(
                state, agent=agent, model=model, tools=tools, approve=approve, approver=approver,
                on_event=on_event, kernel=kernel,
                limits=self._limits(max_turns, max_cost_usd, timeout),
            )
            if plan:
                turn_plan.mode = PLAN_MODE
                turn_plan.system += PLAN_INSTRUCTIONS
            turn_plan.plan_reviewer = plan_reviewer
            # The model's context window may need its provider library loaded (litellm: seconds
            # on first use): look it up off the event loop so a widget stays responsive.
            turn_plan.token_threshold = await self._threshold_for(turn_plan.model)
            return await TurnRunner(turn_plan, control).run(prompt)
        finally:
            state.running = None

    @staticmethod
    def _claim(state: Session) -> None:
        """One turn or compaction at a time per session (SessionBusyError otherwise)."""
        if state.running is not None:
            raise SessionBusyError(f"session {state.name!r} already has a running turn")
        if state.compacting:
            raise SessionBusyError(f"session {state.name!r} is being compacted")

    async def aside(
        self, session: str, question: str, *, on_event: EventHandler | None = None, kernel: KernelContext | None = None
    ) -> TurnResult:
        """ENG-50/51: answer `question` from a deep copy of the session in the read-only mode
        `btw`. Nothing reaches the session's history; the tokens count toward its usage. It may
        run while the session's own turn runs."""
        source = self.session(session)
        throwaway = Session(
            name=f"{session} (aside)",
            history=[message.model_copy(deep=True) for message in source.history],
            turns=source.turns,
        )
        aside_plan = self._plan(
            throwaway, agent=None, model=None, tools=None, approve=None, approver=None,
            on_event=on_event, kernel=kernel, limits=self._limits(None, None, None),
        )
        aside_plan.mode = ASIDE_MODE
        aside_plan.span_name = "blitz.aside"
        aside_plan.system += ASIDE_INSTRUCTIONS
        aside_plan.compaction = False
        result = await TurnRunner(aside_plan, TurnControl()).run(question)
        source.ledger.merge(throwaway.ledger)
        return result

    def _limits(self, max_turns: int | None, max_cost_usd: float | None, timeout: float | None) -> TurnLimits:
        defaults = self.config.limits
        return TurnLimits(
            max_turns=max_turns if max_turns is not None else defaults.max_turns,
            max_cost_usd=max_cost_usd if max_cost_usd is not None else defaults.max_cost_usd,
            timeout_s=timeout if timeout is not None else defaults.timeout_s,
        )

    def _plan(
        self,
        state: Session,
        *,
        agent: str | None,
        model: str | Model | None,
        tools: list[str] | None,
        approve: Policy | None,
        approver: Approver | None,
        on_event: EventHandler | None,
        kernel: KernelContext | None,
        limits: TurnLimits,
    ) -> TurnPlan:
        config = self.config
        definition = self._agent(agent)
        turn_model = self._turn_model(model, definition)
        return TurnPlan(
            session=state,
            model=turn_model,
            agent=definition.name,
            system=definition.instructions,
            tools=self._agent_tools(definition),
            tool_context=ToolContext(
                workspace=self.root, kernel=kernel or self.kernel, session=state.name,
                extras={SEARCHER: self.sessions},  # search_session reads the transcript (WS-02)
            ),
            gate=ApprovalGate(
                approver or HeadlessApprover(),
                headless_policy=config.approval.headless,
                max_pending=config.approval.max_pending,
                timeout_s=config.approval.timeout_s,
            ),
            prices=PriceBook(dict(config.prices), turn_model.price),
            limits=limits,
            allowed_tools=self._check_tool_names(tools),
            policies=dict(config.approval.tools),
            approve_override=approve,
            max_parallel=config.tools.max_parallel,
            retain_events=config.context.retain_events,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            on_event=on_event,
            telemetry=self.telemetry,
        )

    async def _threshold_for(self, model: Model) -> int | None:
        """The threshold, looked up once per model and configuration (a thread hop per turn
        is measurable in bench/overhead.py)."""
        key = (model.name, self.config.context.token_threshold)
        if key not in self._thresholds:
            self._thresholds[key] = await asyncio.to_thread(self._token_threshold, model)
        return self._thresholds[key]

    def _token_threshold(self, model: Model) -> int | None:
        """ENG-60: configured, else 80 % of the model's context window when it is known."""
        if self.config.context.token_threshold is not None:
            return self.config.context.token_threshold
        window = model.context_window()
        return int(window * 0.8) if window else None

    async def compact(self, session: str, focus: str | None = None, keep_turns: int = 1) -> CompactionResult:
        """ENG-61..64: summarise everything before the keep_turns-th most recent user turn with
        the current model. Raises NothingToCompactError or CompactionError (history unchanged)."""
        state = self.session(session)
        self._claim(state)
        state.compacting = True
        try:
            split = manual_window(state.history, keep_turns)
            definition = self._agent(None)
            model = self._turn_model(None, definition)
            attributes = {"blitz.session": session, "blitz.model": model.name, "blitz.keep_turns": keep_turns}
            with self.telemetry.root_span("blitz.compaction", attributes):
                summary, result = await Compactor(model, definition.instructions).summarise(state.history, split, focus)
        finally:
            state.compacting = False
        state.replace_window(split, summary)
        price = PriceBook(dict(self.config.prices), model.price).lookup(result.model)
        state.ledger.record(result.model, result.usage, price.cost(result.usage) if price else None)
        return result

    def reload_agents(self) -> AgentRegistry:
        """Read `.blitz/agents/*.md` again: an agent file written while the kernel runs counts
        from the next turn (ENG-06); a broken file raises ConfigError and changes nothing."""
        self.agents = AgentRegistry.load(self.root)
        return self.agents

    def _agent(self, name: str | None) -> AgentDefinition:
        """A per-run agent must exist (ENG-16); the active one falls back to `blitz` (ENG-01)."""
        if name is not None:
            if name not in self.agents.names():
                self.reload_agents()  # it may have been written since the workspace opened
            return self.agents.get(name)
        try:
            return self.agents.get(self.config.agent)
        except UnknownAgentError:
            return self.agents.get("blitz")

    def _turn_model(self, model: str | Model | None, definition: AgentDefinition) -> Model:
        if isinstance(model, str):
            return self._build(model)
        if model is not None:
            return model
        if definition.model:
            return self._build(definition.model)
        return self.model

    def _agent_tools(self, definition: AgentDefinition) -> dict[str, Tool]:
        """ENG-04: exactly the tools the agent names, plus the workflow tools for the root."""
        names = self.tools.names()
        if definition.tools is not None:
            workflow = [n for n in names if self.tools.get(n).kind is ToolKind.WORKFLOW]  # type: ignore[union-attr]
            names = [*definition.tools, *(n for n in workflow if n not in definition.tools)]
        chosen: dict[str, Tool] = {}
        for name in names:
            tool = self.tools.get(name)
            if tool is None:
                raise BlitzError(f"agent {definition.name!r} names an unknown tool {name!r}")
            chosen[name] = tool
        return chosen

    def _check_tool_names(self, tools: list[str] | None) -> list[str] | None:
        if tools is None:
            return None
        unknown = [name for name in tools if name not in self.tools]
        if unknown:
            raise BlitzError(
                f"unknown tool(s) {', '.join(unknown)} in the allowed tools; known: {', '.join(self.tools.names())}"
            )
        return tools
