"""Workspace: the engine's front door (WS-01).

Opening a directory loads the configuration, the agent registry, the tool registry and the
model; it never fails because of the model (a placeholder model explains what is wrong on
every call). `run` resolves one turn's agent, model, tools, limits and approval into a
TurnSetup and hands it to the TurnRunner.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...config.loading import OVERRIDE_SOURCE, BlitzConfig, check_policy_names, load_config, workspace_trust
from ...config.trust import TrustState, TrustStore
from ...core.attachments import Attachment
from ...core.redact import Redactor
from ...core.terms import StopReason
from ...core.usage import PriceBook, UsageLedger
from ...errors import BlitzError, ConfigError, SessionBusyError, SteerTooLateError, UnknownAgentError
from ...mcp.manager import McpManager, server_entries
from ...mcp.toolset import Offer, offer
from ...models.base import Model, supports_vision
from ...models.factory import build_model, model_problem
from ...models.placeholder import PlaceholderModel
from ...tools import builtin_tools
from ...tools.notebook import NotebookAccess
from ...tools.registry import KernelContext, Tool, ToolContext, ToolRegistry
from ...tools.session_search import SEARCHER
from ..events import ErrorEvent
from ..safety.approval import ApprovalGate, Approver, HeadlessApprover, PendingApprovals, Policy
from ..safety.audit import AuditRecord
from ..safety.hooks import HookRunner
from ..steering import TurnControl
from ..store.session import Session
from ..store.sessions import SessionBook
from ..tracing import Telemetry
from ..turn.agents import AgentDefinition, AgentRegistry, agent_tools, check_tool_names
from ..turn.budget import add_session_budget
from ..turn.compaction import CompactionResult, Compactor, manual_window
from ..turn.context import ContextWindows
from ..turn.instructions import MemoryFile, memory_files, root_instructions
from ..turn.loop import TurnRunner
from ..turn.modes import MODE_INSTRUCTIONS, SUBAGENT_READ_ONLY, PlanReviewer, TurnMode
from ..turn.options import EventHandler, FrontEnd, RunOptions
from ..turn.setup import ASIDE_SPAN, TURN_SPAN, ContextWindow, TurnLimits, TurnResult, TurnSetup, refused_before_start
from ..turn.subagents import Subagents
from ..undo.undo import UndoReport, check_undo_request, undo_turns
from .notices import NoticeBoard


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
        self.tools = ToolRegistry(builtin_tools())
        self.agents = AgentRegistry.load(self.root)
        self.trust = self._trust_state()
        self.notices = NoticeBoard(trust_due=self.trust.holding_back)
        self.config: BlitzConfig = self._load(self._overrides)
        self._explicit_model = model
        self.model: Model = model or self._build(self.config.model)
        self.redactor = self._redactor(self.config)
        self.telemetry = self._telemetry(self.config)
        self.hooks = HookRunner(self.config.hooks, self.root, self.telemetry)
        self.contexts = ContextWindows()
        self._usable: dict[tuple[str, str, str | None], str | None] = {}
        # WS-02: sessions live in <root>/.blitz/blitz.db; `durable=False` keeps them in memory.
        self.sessions = SessionBook.for_workspace(self.root) if durable else SessionBook()
        self.subagents = Subagents(self._setup, self._agent_summaries)
        self.waiting_approvals = PendingApprovals()
        """Permission requests waiting now, over every turn and aside (ENG-26)."""
        # a workspace's own servers reach the config only once it is trusted (WS-06)
        self.mcp = McpManager(self.root, trusted=lambda: self.trust.trusted)
        """The MCP servers, started when a turn first offers their tools (issue 13)."""

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
            Path(path),
            overrides=merged,
            model=model if not isinstance(model, str) and model else None,
            kernel=kernel,
            environ=environ,
            home=home,
            durable=durable,
        )

    # -- configuration ------------------------------------------------------------------------

    def _load(self, overrides: Mapping[str, Any]) -> BlitzConfig:
        config = load_config(
            self.root, overrides=overrides, environ=self._environ, home=self._home, agent_pins=self.agents.pins()
        )
        check_policy_names(config, self.tools.names(), overrides)
        return config

    # -- trust (WS-06) ----------------------------------------------------------------------

    def trust_workspace(self) -> TrustState:
        """Trust what this workspace's own config asks for now (`%blitz_trust`); it applies
        from the next turn. Returns what was trusted."""
        state = self._trust_state()
        TrustStore(self._home).trust(self.root, state.held)
        self._reload_trust()
        return state

    def revoke_trust(self) -> bool:
        """`%blitz_trust --revoke`: hold the workspace's settings back again."""
        removed = TrustStore(self._home).revoke(self.root)
        self._reload_trust()
        return removed

    def _reload_trust(self) -> None:
        self.trust = self._trust_state()
        self.configure()  # re-read the files with the new trust

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
        environ = os.environ if self._environ is None else self._environ
        learned = self.redactor.learned if hasattr(self, "redactor") else ()
        redactor = Redactor.from_environment(environ, [config.api_key_env], learned=learned)
        redactor.learn_file(self.root / ".env")
        return redactor

    def _build(self, name: str | None, config: BlitzConfig | None = None) -> Model:
        config = config or self.config
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
        )

    def configure(self, **dotted: Any) -> BlitzConfig:
        """Set configuration keys for this workspace (`%blitz_config`). A value that fails to
        validate raises ConfigError and changes nothing (ENG-06); so does a model that cannot
        be built (a scripted file that is not there, an unset `api_key_env` variable)."""
        candidate = {**self._overrides, **dotted}
        config = self._load(candidate)
        model_settings = ("model", "api_base", "api_key_env", "model_retries", "stall", "fallback_models", "breaker")
        changed = [key for key in model_settings if getattr(self.config, key) != getattr(config, key)]
        rebuild = "model" in dotted or (bool(changed) and self._explicit_model is None)
        # only when it matters: a rebuilt scripted model restarts its script (ENG-06)
        model = self._build(config.model, config) if rebuild else self.model
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
        self.trust = self._trust_state()
        telemetry = self._telemetry(config) if config.telemetry != self.config.telemetry else self.telemetry
        self._overrides, self.config, self.telemetry = candidate, config, telemetry
        self.hooks = HookRunner(config.hooks, self.root, telemetry)
        self.redactor = self._redactor(config)
        if rebuild:
            self._explicit_model, self.model = None, model
        return config

    def _check_fallbacks(self, config: BlitzConfig) -> None:
        alone = config.model_copy(update={"fallback_models": []})  # each one, not a chain
        for name in config.fallback_models:
            fallback = self._build(name, alone)
            problem = fallback.reason if isinstance(fallback, PlaceholderModel) else model_problem(fallback)
            if problem is not None:
                raise ConfigError("fallback_models", OVERRIDE_SOURCE, problem)

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

    def add_budget(self, session: str, usd: float) -> float:
        """GR-05: add `usd` to the session's budget (lifting a trip); returns what is left."""
        return add_session_budget(self.session(session), usd, self.config.limits.max_cost_usd_session)

    def context_of(self, session: str) -> str | None:
        """How full the session's context is ("ctx 42 % of 128K (litellm)"), from its last
        prompt; None before any model call. The window is the current model's."""
        return self.contexts.fill(self.session(session).ledger.last_prompt_tokens, self.model, self.config)

    def audit(self, session: str = "default") -> list[AuditRecord]:
        """WS-07: every tool call of the session, with its decision and who made it."""
        return list(self.session(session).audit)

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
        attachments: list[Attachment] | None = None,
    ) -> TurnResult:
        """Run one turn (ENG-10) in `session`; per-run options override the configuration for
        this turn only (ENG-16). `plan=True` is a plan-only turn (ENG-30..32). The keyword
        arguments are the public contract; they build a RunOptions and a FrontEnd."""
        options = RunOptions(
            agent=agent,
            model=model,
            mode=TurnMode.PLAN if plan else TurnMode.NORMAL,
            max_turns=max_turns,
            max_cost_usd=max_cost_usd,
            timeout_s=timeout,
            tools=tuple(tools) if tools is not None else None,
            approve=approve,
        )
        front_end = FrontEnd(approver=approver, plan_reviewer=plan_reviewer, on_event=on_event, kernel=kernel)
        return await self.run_turn(prompt, session, options, front_end, attachments=attachments)

    async def run_turn(
        self,
        prompt: str,
        session: str,
        options: RunOptions,
        front_end: FrontEnd | None = None,
        *,
        attachments: list[Attachment] | None = None,
    ) -> TurnResult:
        """`run` for callers that hold typed options already (the notebook front end)."""
        front_end = front_end or FrontEnd()
        # --timeout covers the lookups before the first model call too (issue 15 #9): they may
        # load a provider library or start MCP servers; the turn then gets what is left
        limit = options.timeout_s if options.timeout_s is not None else self.config.limits.timeout_s
        started = time.monotonic()
        try:
            async with asyncio.timeout(limit):
                # a model that can never answer (or an unknown agent): the turn ends in error before
                # anything is recorded: no session created, no prompt in the history, no turn counted
                problem = await self._model_problem(self._turn_model(options.model, self._agent(options.agent)))
        except TimeoutError:
            return await self._refused_before_start(_setup_timeout(limit), session, front_end, "timeout")
        if problem is not None:
            return await self._refused_before_start(problem, session, front_end)
        state = self.session(session)
        self._claim(state)
        context = front_end.kernel or self.kernel
        state.prepare_resume_note(context.user_ns if context is not None else None)  # WS-02 restart note
        control = TurnControl()
        state.running = control  # at once: a second run or a steer meanwhile sees this turn
        try:
            try:
                async with asyncio.timeout(limit - (time.monotonic() - started) if limit else None):
                    setup = await self._setup(state, options, front_end)
            except TimeoutError:
                return await self._refused_before_start(_setup_timeout(limit), session, front_end, "timeout")
            spent = dataclasses.replace(setup.limits, spent_before_s=time.monotonic() - started)
            setup = dataclasses.replace(setup, limits=spent)
            return await TurnRunner(setup, control).run(prompt, attachments)
        finally:
            state.running = None

    async def continue_turn(
        self, session: str, options: RunOptions | None = None, front_end: FrontEnd | None = None
    ) -> TurnResult:
        """Issue 12 §5: a turn that stopped at `max_turns` goes on for `options.max_turns` more
        steps in the same context: no new prompt, the model takes the next step."""
        state = self.session(session)
        if not state.history or state.history[-1].kind != "tool_result":
            raise BlitzError(f"session {session!r} has no turn to continue: its last turn ended with an answer")
        self._claim(state)
        control = TurnControl()
        state.running = control
        try:
            setup = await self._setup(state, options or RunOptions(), front_end or FrontEnd())
            return await TurnRunner(setup, control).run(None)
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
        setup = await self._setup(throwaway, RunOptions(mode=TurnMode.BTW), FrontEnd(on_event=on_event, kernel=kernel))
        result = await TurnRunner(setup, TurnControl()).run(question)
        source.ledger.merge(throwaway.ledger)
        if source.running is not None:  # its tokens count toward the running turn's --max-cost
            source.running.charged_usd += throwaway.ledger.total.cost_usd
        return result

    def _limits(self, options: RunOptions) -> TurnLimits:
        defaults = self.config.limits
        return TurnLimits(
            max_turns=options.max_turns if options.max_turns is not None else defaults.max_turns,
            max_cost_usd=options.max_cost_usd if options.max_cost_usd is not None else defaults.max_cost_usd,
            timeout_s=options.timeout_s if options.timeout_s is not None else defaults.timeout_s,
            max_cost_usd_session=defaults.max_cost_usd_session,
            repeat_warn=defaults.repeat_warn,
            repeat_stop=defaults.repeat_stop,
        )

    def _notices(self, depth: int, mode: TurnMode) -> tuple[ErrorEvent, ...]:
        """One-time notices, for turns the user started only."""
        return () if depth > 0 or mode is TurnMode.BTW else self.notices.take(self.trust, self.agents)

    def _agent_summaries(self) -> list[tuple[str, str]]:
        """(name, description) of every agent, for list_agents and invoke_agent (ENG-70)."""
        self.reload_agents()  # an agent file written since the last turn counts (ENG-06)
        return [(name, self.agents.get(name).description) for name in self.agents.names()]

    async def _setup(self, state: Session, options: RunOptions, front_end: FrontEnd, depth: int = 0) -> TurnSetup:
        """Everything the turn needs, resolved once; nothing patches it afterwards. `depth` >
        0 is a sub-agent's turn: its own instructions only, no workflow tools (ENG-02/04)."""
        config = self.config
        definition = self._agent(options.agent)
        turn_model = self._turn_model(options.model, definition)
        settings = config.model_settings(turn_model.name)  # ENG-05: per-model beats global
        mode = options.mode
        aside = mode is TurnMode.BTW
        mcp = await self._mcp_offer(definition, turn_model)
        state.redactor = self.redactor
        return TurnSetup(
            session=state,
            model=turn_model,
            agent=definition.name,
            system=self._instructions(definition, turn_model, depth, mode) + mcp.system_note(),
            tools={**self._agent_tools(definition, root=depth == 0), **mcp.tools},
            notices=self._notices(depth, mode)
            + tuple(ErrorEvent(kind="mcp", message=p) for p in [*mcp.problems.values(), *mcp.notices]),
            tool_context=ToolContext(
                workspace=self.root,
                kernel=front_end.kernel or self.kernel,
                session=state.name,
                variable_values=config.privacy.variables == "full",
                extras={SEARCHER: self.sessions},  # search_session reads the transcript (WS-02)
            ),
            gate=ApprovalGate(
                front_end.approver or HeadlessApprover(),
                headless_policy=config.approval.headless,
                max_pending=config.approval.max_pending,
                timeout_s=config.approval.timeout_s,
                waiting=self.waiting_approvals,
            ),
            prices=PriceBook(dict(config.prices), turn_model.price),
            limits=self._limits(options),
            allowed_tools=self._check_tool_names(options.tools),
            policies=dict(config.approval.tools),
            approve_override=options.approve,
            max_parallel=config.tools.max_parallel,
            mode=mode,
            compaction=not aside,  # asides never compact (ENG-51)
            # The model's context window may need its provider library loaded (litellm: seconds
            # on first use): looked up off the event loop so a widget stays responsive.
            context=await self._context_for(turn_model),
            retain_events=config.context.retain_events,
            plan_reviewer=front_end.plan_reviewer,
            telemetry=self.telemetry,
            span_name=ASIDE_SPAN if aside else TURN_SPAN,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            on_event=front_end.on_event,
            hooks=self.hooks,
            redactor=self.redactor,
            depth=depth,
            subagents=self.subagents,
            keep_turns=config.checkpoints.keep_turns,
        )

    async def _mcp_offer(self, definition: AgentDefinition, model: Model) -> Offer:
        """The MCP tools the agent's list names (every enabled server's for an agent without a
        list), their servers started first; the servers that could not start are reported."""
        if not self.config.mcp.servers and not self.mcp.connections:
            return Offer()
        return await offer(self.mcp_servers(), definition.tools, vision=supports_vision(model))

    def mcp_servers(self) -> McpManager:
        """The MCP servers as the configuration says now (a changed server restarts on its
        next use), for a turn or `%blitz_mcp`."""
        self.mcp.configure(server_entries(self.config.mcp, self.root, self._home))
        return self.mcp

    def _instructions(self, definition: AgentDefinition, model: Model, depth: int, mode: TurnMode) -> str:
        """ENG-02/03: the root agent's prompt with project memory, language and image note,
        then the mode's text; a sub-agent's own prompt and, when read-only, a note saying so."""
        if depth > 0:
            return definition.instructions + (SUBAGENT_READ_ONLY if mode.read_only else "")
        base = root_instructions(
            definition.instructions, self.memory(), language=self.config.language, vision=supports_vision(model)
        )
        return base + MODE_INSTRUCTIONS.get(mode, "")

    def memory(self) -> list[MemoryFile]:
        """The project-memory files the next turn's instructions include (ENG-02)."""
        return memory_files(self.root, self._home)

    async def _model_problem(self, model: Model) -> str | None:
        """Why `model` can never answer (see model_problem), looked up once per model name."""
        if isinstance(model, PlaceholderModel):
            return model.reason
        key = (type(model).__name__, model.name, getattr(model, "api_base", None))
        if key not in self._usable:  # litellm's provider table: loaded off the event loop
            self._usable[key] = await asyncio.to_thread(model_problem, model)
        return self._usable[key]

    async def _refused_before_start(
        self, reason: str, session: str, front_end: FrontEnd, stop: StopReason = "error"
    ) -> TurnResult:
        """A turn that could not start: the front end shows why, nothing is recorded."""
        turns = self.sessions.get(session).turns if session in self.sessions.names() else 0
        return await refused_before_start(reason, session, turns, front_end.on_event, stop)

    async def _context_for(self, model: Model) -> ContextWindow:
        return await self.contexts.lookup(model, self.config)

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
        state.record_usage(result.model, result.usage, price.cost(result.usage) if price else None)
        return result

    async def undo(
        self,
        session: str = "default",
        turns: int = 1,
        files: bool = True,
        conversation: bool = True,
        force: bool = False,
        through_turn: int | None = None,
    ) -> UndoReport:
        """WS-03: undo the last `turns` turns of `session`, newest first: files, notebook cells
        and variables as they were before (`files`), and those turns' part of the history
        (`conversation`). Something changed again since the agent changed it is skipped and
        named unless `force`. Refused while a turn or a compaction runs (SessionBusyError).
        `through_turn` (a 0-based turn index, e.g. a widget's "Undo this turn" on an older
        turn's card) undoes every turn from the newest down to that one instead of `turns`."""
        check_undo_request(turns, files, conversation, through_turn)
        if session not in self.sessions.names():  # undoing must not create it
            return UndoReport(session=session, nothing_to_undo=True)
        bridge = getattr(self.kernel, "notebook", None) if self.kernel is not None else None
        notebook = bridge if isinstance(bridge, NotebookAccess) else None
        return await undo_turns(
            self.root, self.session(session), notebook, turns, files, conversation, force, through_turn
        )

    def reload_agents(self) -> AgentRegistry:
        """Read `.blitz/agents/*.md` again: an agent file written while the kernel runs counts
        from the next turn (ENG-06); a broken file is skipped and named in `agents.skipped`."""
        self.agents = AgentRegistry.load(self.root)
        return self.agents

    def _agent(self, name: str | None) -> AgentDefinition:
        """A per-run agent must exist (ENG-16); the active one falls back to `blitz` (ENG-01)."""
        if self.agents.changed(self.root):  # an agent file edited since the last turn counts (ENG-06)
            self.reload_agents()
        if name is not None:
            if name not in self.agents.names():
                self.reload_agents()  # it may have been written since the workspace opened
            return self.agents.get(name)
        try:
            return self.agents.get(self.config.agent)
        except UnknownAgentError as exc:
            environ = os.environ if self._environ is None else self._environ
            if environ.get("BLITZ_AGENT", "").strip() == self.config.agent:  # asked for, by name
                raise ConfigError("agent", "environment variable BLITZ_AGENT", str(exc)) from None
            return self.agents.get("blitz")

    def _trust_state(self) -> TrustState:
        return workspace_trust(self.root, self._environ, self._home, self.agents.pins())

    def _turn_model(self, model: str | Model | None, definition: AgentDefinition) -> Model:
        if isinstance(model, str):
            return self._build(model)
        if model is not None:
            return model
        if definition.model and definition.name in self.agents.pins():
            self.trust = self._trust_state()  # read now: an agent file may have changed (WS-06)
            if self.trust.holding_back:  # a pin chooses where prompts go: held back until trusted
                return self.model
        if definition.model:
            return self._build(definition.model)
        return self.model

    def _agent_tools(self, definition: AgentDefinition, *, root: bool = True) -> dict[str, Tool]:
        return agent_tools(self.tools, definition, root=root)

    def _check_tool_names(self, tools: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return check_tool_names(self.tools, tools)


def _setup_timeout(limit: float | None) -> str:
    return f"turn timed out after {limit or 0:g} s, before its first model call (looking up the model)"
