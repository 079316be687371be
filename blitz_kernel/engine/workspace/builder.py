"""Builds a turn's `TurnSetup` from the workspace's services: the resolved agent and model, its
instructions, tools (MCP's included), limits, approvals and observers. Everything a turn needs is
resolved here, once; the loop only reads the result.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ...core.budget_ledger import BudgetLedger
from ...core.usage import PriceBook
from ...mcp.manager import McpManager, server_entries
from ...mcp.toolset import Offer, offer
from ...models.base import Model, supports_response_schema, supports_vision
from ...tools.registry import KernelContext, ToolContext
from ...tools.skills import SKILL_TOOL, SkillBook, find_skills
from ..events import Event, NoticeEvent, ProgressEvent
from ..safety.approval import ApprovalGate, HeadlessApprover, PendingApprovals
from ..store.session import Session
from ..store.sessions import SessionBook
from ..turn.agents import AgentDefinition, agent_tools, check_tool_names
from ..turn.context import ContextWindows
from ..turn.instructions import MemoryFile, load_memory, memory_files, root_instructions
from ..turn.modes import MODE_INSTRUCTIONS, SUBAGENT_READ_ONLY, TurnMode
from ..turn.options import FrontEnd, RunOptions
from ..turn.setup import (
    ASIDE_SPAN,
    TURN_SPAN,
    Helpers,
    ModelChoice,
    Observers,
    SubagentLauncher,
    ToolRuntime,
    TurnLimits,
    TurnSetup,
    TurnWatcher,
)
from ..turn.structured import FINAL_RESULT, final_result_tool
from .configuration import Configuration
from .notices import NoticeBoard
from .resolution import Resolved, Resolver


@dataclass
class TurnBuilder:
    """Turns a session, the run's options and its front end into a `TurnSetup`."""

    configuration: Configuration
    resolver: Resolver
    sessions: SessionBook
    contexts: ContextWindows
    notices: NoticeBoard
    mcp: McpManager
    waiting_approvals: PendingApprovals
    kernel: KernelContext | None
    subagents: SubagentLauncher | None = None
    watchers: list[TurnWatcher] = field(default_factory=list)
    """Features' hooks into every turn at the loop's fixed points (docs/extending.md)."""

    async def build(
        self,
        state: Session,
        options: RunOptions,
        front_end: FrontEnd,
        depth: int = 0,
        resolved: Resolved | None = None,
    ) -> TurnSetup:
        """The setup of one turn. `depth` > 0 is a sub-agent's turn: its own instructions only,
        no workflow tools. `resolved` is the agent and model the pre-flight check looked at."""
        config = self.configuration.config
        if resolved is None:
            definition = self.resolver.agent(options.agent)
            # A sub-agent without a pin follows its caller's `-m`; a pinned one keeps its model.
            inherited = None if definition.model else options.inherited_model
            resolved = Resolved(definition, self.resolver.model_for(options.model or inherited, definition))
        definition, model = resolved.definition, resolved.model
        settings = config.model_settings(model.name)  # per-model settings beat the global ones
        mode = options.mode
        aside = mode is TurnMode.BTW
        mcp = await self._mcp_offer(definition, model, front_end if depth == 0 and not aside else None)
        output = options.output if depth == 0 and not aside else None  # a sub-agent answers in text
        if output is not None:  # the provider's own structured output where it has one
            output = output.for_model(await asyncio.to_thread(supports_response_schema, model))
        answer_tools = {FINAL_RESULT: final_result_tool(output)} if output is not None and not output.native else {}
        state.redactor = self.configuration.redactor  # what enters the history is redacted
        project = self.project()  # read once: the instructions and the notices both use it
        choice = ModelChoice(
            model=model,
            agent=definition.name,
            system=self.instructions(definition, model, depth, mode, options.tools, project)
            + mcp.system_note()
            + (output.instructions() if output is not None else ""),
            prices=PriceBook(dict(config.prices), model.price),
            # The model's context window may need its provider library loaded (litellm: seconds
            # on first use): looked up off the event loop so a widget stays responsive.
            context=await self.contexts.lookup(model, config),
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
            reasoning=options.reasoning or definition.reasoning or settings.reasoning,
            compaction=not aside,  # asides never compact
            retain_events=config.context.retain_events,
            override=options.model or options.inherited_model,
            output=output,
        )
        policy = self.configuration.policy
        tools = {**agent_tools(self.configuration.tools, definition, root=depth == 0), **mcp.tools}
        if policy is not None:  # a disabled tool is never offered (a call to it is refused, named)
            tools = {name: tool for name, tool in tools.items() if not policy.tool_disabled(name)}
        runtime = ToolRuntime(
            tools={**tools, **answer_tools},
            context=ToolContext(
                workspace=self.configuration.root,
                kernel=front_end.kernel or self.kernel,
                session=state.name,
                variable_values=config.privacy.variables == "full",
                transcript=self.sessions,  # search_session reads the transcript
                home=self.configuration.home,  # load_skill reads ~/.blitz/skills there
                web=config.web,
                vision=supports_vision(model),
            ),
            gate=ApprovalGate(
                front_end.approver or HeadlessApprover(),
                headless_policy=config.approval.headless,
                max_pending=config.approval.max_pending,
                timeout_s=config.approval.timeout_s,
                waiting=self.waiting_approvals,
            ),
            redactor=self.configuration.redactor,
            policies=dict(config.approval.tools),
            allowed_tools=_with(check_tool_names(self.configuration.tools, options.tools), [*answer_tools]),
            approve_override=options.approve,
            locked=policy.tool_policies() if policy is not None else {},
            locked_by=policy.path if policy is not None else None,
            hooks=self.configuration.hooks,
            max_parallel=config.tools.max_parallel,
            keep_turns=config.checkpoints.keep_turns,
            caller=front_end.caller,
        )
        observers = Observers(
            on_event=front_end.on_event,
            telemetry=self.configuration.telemetry,
            span_name=ASIDE_SPAN if aside else TURN_SPAN,
            notices=self._notices(depth, mode, project)
            + tuple(NoticeEvent(kind="mcp_server", message=p) for p in [*mcp.problems.values(), *mcp.notices]),
            watchers=tuple(self.watchers),
        )
        return TurnSetup(
            session=state,
            choice=choice,
            runtime=runtime,
            limits=self.limits(options),
            observers=observers,
            helpers=Helpers(plan_reviewer=front_end.plan_reviewer, subagents=self.subagents),
            mode=mode,
            depth=depth,
        )

    def limits(self, options: RunOptions) -> TurnLimits:
        """The run's limits: its own options, else the configuration's. Where the admin policy
        locks a limit, an option may only tighten it."""
        defaults = self.configuration.config.limits
        policy = self.configuration.policy

        def pick(name: str, option: float | None) -> Any:
            configured = getattr(defaults, name)
            if option is None:
                return configured
            if policy is not None and policy.holds(f"limits.{name}") and configured is not None:
                return min(option, configured)
            return option

        return TurnLimits(
            max_turns=pick("max_turns", options.max_turns),
            max_cost_usd=pick("max_cost_usd", options.max_cost_usd),
            timeout_s=pick("timeout_s", options.timeout_s),
            max_cost_usd_session=defaults.max_cost_usd_session,
            session_budget_locked=policy is not None and policy.holds("limits.max_cost_usd_session") is not None,
            repeat_warn=defaults.repeat_warn,
            repeat_stop=defaults.repeat_stop,
            shared_budget=BudgetLedger(defaults.shared_budget_file) if defaults.shared_budget_file else None,
        )

    def _notices(self, depth: int, mode: TurnMode, project: ProjectFiles) -> tuple[Event, ...]:
        """One-time notices, for turns the user started only."""
        if depth > 0 or mode is TurnMode.BTW:
            return ()
        configuration = self.configuration
        skipped = [*project.skipped_memory, *project.skills.skipped]
        return self.notices.take(configuration.trust, configuration.agents, self.sessions.take_notices(), skipped)

    async def _mcp_offer(self, definition: AgentDefinition, model: Model, front_end: FrontEnd | None) -> Offer:
        """The MCP tools the agent's list names (every enabled server's for an agent without a
        list), their servers started first; the servers that could not start are reported.
        The front end of a turn the user started hears which servers start, before they do."""
        if not self.configuration.config.mcp.servers and not self.mcp.connections:
            return Offer()
        on_event = front_end.on_event if front_end is not None else None

        async def starting(names: list[str]) -> None:
            if on_event is not None:
                waiting = on_event(ProgressEvent(message=starting_line(names)))
                if waiting is not None:
                    await waiting

        return await offer(self.mcp_servers(), definition.tools, vision=supports_vision(model), starting=starting)

    def mcp_servers(self) -> McpManager:
        """The MCP servers as the configuration says now (a changed server restarts on its
        next use), for a turn or `%blitz_mcp`."""
        configuration = self.configuration
        self.mcp.configure(server_entries(configuration.config.mcp, configuration.root, configuration.home))
        return self.mcp

    def instructions(
        self,
        definition: AgentDefinition,
        model: Model,
        depth: int,
        mode: TurnMode,
        allowed: tuple[str, ...] | None = None,
        project: ProjectFiles | None = None,
    ) -> str:
        """The agent's prompt with project memory, the skills (when the turn may call
        `load_skill`), language and image note — a sub-agent's too: it works on the same
        project and answers the same user — then the mode's text (a sub-agent's: only a note
        when it is read-only). `project`: the files as this turn read them (else read now)."""
        project = project if project is not None else self.project()
        base = root_instructions(
            definition.instructions,
            project.memory,
            language=self.configuration.config.language,
            vision=supports_vision(model),
            skills=project.skills.listing() if _offers(SKILL_TOOL, definition, allowed) else "",
        )
        if depth > 0:
            return base + (SUBAGENT_READ_ONLY if mode.read_only else "")
        return base + MODE_INSTRUCTIONS.get(mode, "")

    def skills(self) -> SkillBook:
        """The skills the next turn's instructions list (read afresh: an edit counts from the
        next turn), and the SKILL.md files skipped."""
        return find_skills(self.configuration.root, self.configuration.home)

    def memory(self) -> list[MemoryFile]:
        """The project-memory files the next turn's instructions include."""
        return memory_files(self.configuration.root, self.configuration.home)

    def project(self) -> ProjectFiles:
        """Project memory and skills as they are on disk now (an edit counts from the next
        turn), read once for a turn."""
        configuration = self.configuration
        memory, skipped = load_memory(configuration.root, configuration.home)
        return ProjectFiles(memory=memory, skipped_memory=skipped, skills=self.skills())


@dataclass(frozen=True)
class ProjectFiles:
    """What a turn read of the project's memory files and skills."""

    memory: list[MemoryFile]
    skipped_memory: list[str]
    """One line per memory file that is there but was not read, and why."""
    skills: SkillBook


def starting_line(names: list[str]) -> str:
    """`starting MCP server docs…`, or `starting MCP servers docs, fetch…`."""
    return f"starting MCP server{'s' if len(names) > 1 else ''} {', '.join(names)}…"


def _with(allowed: tuple[str, ...] | None, more: list[str]) -> tuple[str, ...] | None:
    """A run's allowed tools plus the ones the turn itself needs (`final_result`)."""
    return None if allowed is None else (*allowed, *more)


def _offers(name: str, definition: AgentDefinition, allowed: tuple[str, ...] | None) -> bool:
    """Whether a turn of this agent, with these allowed tools, can call tool `name`."""
    return (definition.tools is None or name in definition.tools) and (allowed is None or name in allowed)
