"""`Workspace`: the engine's front door. Its services are built by the composition root
(composition.py); every public method is a thin delegation to one of them. Opening never fails
because of the model: a placeholder model explains what is wrong on every call.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Unpack

from ...config.settings import BlitzConfig
from ...config.trust import TrustState
from ...core.attachments import Attachment
from ...core.terms import Policy, Reasoning
from ...core.usage import UsageLedger
from ...mcp.manager import McpManager
from ...models.base import Model
from ...tools.registry import KernelContext
from ...tools.skills import SkillBook
from ..safety.approval import Approver
from ..safety.audit import AuditRecord
from ..safety.hooks import HookRunner
from ..store.session import Session
from ..tracing import Telemetry
from ..turn.agents import AgentRegistry
from ..turn.compaction import CompactionResult
from ..turn.instructions import MemoryFile
from ..turn.modes import PlanReviewer, TurnMode
from ..turn.options import EventHandler, FrontEnd, RunOptions
from ..turn.replay import ReplayReport
from ..turn.setup import TurnResult
from ..undo.undo import UndoReport
from .composition import Options, compose
from .delegated import Delegated
from .outside import OutsideResult, OutsideTool


class Workspace:
    """A directory, its configuration, agents, tools, model and sessions."""

    def __init__(self, root: Path, *, model: Model | None = None, **options: Unpack[Options]) -> None:
        """`model` replaces the configured one (a test's scripted model); `options`: see Options."""
        self.root = root.resolve()
        services = compose(self.root, model, **options)
        self.tools, self.configuration, self.resolver = services.tools, services.configuration, services.resolver
        self.notices, self.sessions, self.contexts = services.notices, services.sessions, services.contexts
        self.waiting_approvals, self.mcp, self.builder = services.waiting_approvals, services.mcp, services.builder
        self.subagents, self.turns, self.history = services.subagents, services.turns, services.history
        self.outside = services.outside

    @classmethod
    def open(cls, path: str | Path = ".", *, model: str | Model | None = None, **options: Unpack[Options]) -> Workspace:
        """Open `path` as a workspace; `model` is a litellm name, `scripted:PATH` or a Model."""
        overrides = dict(options.get("overrides") or {})
        if isinstance(model, str):
            overrides["model"] = model
        options["overrides"] = overrides
        return cls(Path(path), model=None if isinstance(model, str) else model, **options)

    config: Delegated[BlitzConfig] = Delegated("configuration", "config")
    model: Delegated[Model] = Delegated("configuration", "model", writable=True)
    """The session-wide model (`%blitz_model`); a turn may use another (`-m`, an agent pin)."""
    kernel: Delegated[KernelContext | None] = Delegated("builder", "kernel", writable=True)
    """The kernel the workspace's turns run in (None for a script)."""
    trust: Delegated[TrustState] = Delegated("configuration", "trust")
    agents: Delegated[AgentRegistry] = Delegated("configuration", "agents")
    telemetry: Delegated[Telemetry] = Delegated("configuration", "telemetry")
    hooks: Delegated[HookRunner] = Delegated("configuration", "hooks")
    overrides: Delegated[dict[str, Any]] = Delegated("configuration", "overrides")

    def configure(self, **dotted: Any) -> BlitzConfig:
        """Set configuration keys (`%blitz_config`); a bad value changes nothing."""
        return self.configuration.configure(**dotted)

    def set_model(self, name: str) -> Model:
        """Switch the session-wide model; takes effect on the next turn."""
        self.configuration.configure(model=name)
        return self.model

    def trust_workspace(self) -> TrustState:
        """Trust what this workspace's own config asks for now (`%blitz_trust`)."""
        return self.configuration.trust_workspace()

    def revoke_trust(self) -> bool:
        """`%blitz_trust --revoke`: hold the workspace's settings back again."""
        return self.configuration.revoke_trust()

    def reload_agents(self) -> AgentRegistry:
        """Read `.blitz/agents/*.md` again (an agent file written while the kernel runs)."""
        return self.configuration.reload_agents()

    def memory(self) -> list[MemoryFile]:
        """The project-memory files the next turn's instructions include."""
        return self.builder.memory()

    def skills(self) -> SkillBook:
        """The skills the next turn lists, and the SKILL.md files skipped (docs/skills.md)."""
        return self.builder.skills()

    async def replay(
        self,
        session: str = "default",
        turn: int | None = None,
        *,
        approve: Policy | None = None,
        approver: Approver | None = None,
        on_event: EventHandler | None = None,
        kernel: KernelContext | None = None,
    ) -> ReplayReport:
        """Run a recorded turn's tool calls again with no model call (`turn` counted from 1;
        None: the last) and compare the results (docs/replay.md)."""
        if turn is not None and turn < 1:
            raise ValueError(f"turn is counted from 1, got {turn}")
        front_end = FrontEnd(approver=approver, on_event=on_event, kernel=kernel)
        return await self.turns.replay(session, None if turn is None else turn - 1, front_end, approve)

    def mcp_servers(self) -> McpManager:
        """The MCP servers as the configuration says now, for a turn or `%blitz_mcp`."""
        return self.builder.mcp_servers()

    def session(self, name: str = "default") -> Session:
        return self.sessions.get(name)

    def usage(self, session: str = "default") -> UsageLedger:
        return self.history.usage(session)

    def add_budget(self, session: str, usd: float) -> float:
        """Add `usd` to the session's budget (lifting a trip); returns what is left."""
        return self.history.add_budget(session, usd)

    def context_of(self, session: str) -> str | None:
        """How full the session's context is ("ctx 42 % of 128K (litellm)"); None before a call."""
        return self.history.context_of(session)

    def audit(self, session: str = "default") -> list[AuditRecord]:
        """Every tool call of the session, with its decision and who made it."""
        return self.history.audit(session)

    async def undo(
        self,
        session: str = "default",
        turns: int = 1,
        files: bool = True,
        conversation: bool = True,
        force: bool = False,
        through_turn: int | None = None,
    ) -> UndoReport:
        """Undo the newest `turns` turns of `session` (or down to `through_turn`): files, cells and
        variables (`files`) and the history (`conversation`); see docs/undo.md."""
        return await self.history.undo(session, turns, files, conversation, force, through_turn)

    async def truncate(self, session: str, turns: int) -> UndoReport:
        """Drop the newest `turns` turns from the conversation only (files, cells and variables
        stay as they are); recorded as an append-only rewind marker, like an undo's."""
        return await self.history.undo(session, turns, False, True, False, None)

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
        think: Reasoning | None = None,
    ) -> TurnResult:
        """Run one turn in `session`; per-run options override the configuration for this turn
        only; `plan=True` is a plan-only turn; `think` is `--think` (docs/interface.md)."""
        options = RunOptions(
            agent=agent,
            model=model,
            mode=TurnMode.PLAN if plan else TurnMode.NORMAL,
            max_turns=max_turns,
            max_cost_usd=max_cost_usd,
            timeout_s=timeout,
            tools=tuple(tools) if tools is not None else None,
            approve=approve,
            reasoning=think,
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
        return await self.turns.run(prompt, session, options, front_end or FrontEnd(), attachments)

    def outside_tools(self) -> list[OutsideTool]:
        """The tools an outside client may call, with their schemas (docs/mcp-server.md)."""
        return self.outside.tools()

    async def call_tool(
        self, session: str, name: str, arguments: dict[str, Any], caller: str, front_end: FrontEnd | None = None
    ) -> OutsideResult:
        """One tool call from outside the notebook (`caller`, e.g. "mcp:claude-code"), run as a
        one-call turn of `session`: the same screening, approvals, hooks, redaction, audit and
        checkpoint as a call of the model; `undo` undoes it."""
        front = dataclasses.replace(front_end or FrontEnd(), caller=caller)
        return await self.outside.call_tool(session, name, arguments, caller, front)

    async def continue_turn(
        self, session: str, options: RunOptions | None = None, front_end: FrontEnd | None = None
    ) -> TurnResult:
        """A turn that stopped at `max_turns` goes on for `options.max_turns` more steps."""
        return await self.turns.continue_turn(session, options or RunOptions(), front_end or FrontEnd())

    async def aside(
        self, session: str, question: str, *, on_event: EventHandler | None = None, kernel: KernelContext | None = None
    ) -> TurnResult:
        """`%blitz_btw`: answer from a copy of the session; nothing reaches its history."""
        return await self.turns.aside(session, question, on_event, kernel)

    async def compact(self, session: str, focus: str | None = None, keep_turns: int = 1) -> CompactionResult:
        """`%blitz_compact`: summarise all but the last `keep_turns` turns."""
        return await self.turns.compact(session, focus, keep_turns)

    def steer(self, session: str, text: str, *, inbox: bool = True) -> None:
        """Queue `text` for the running turn, or (none running) in the session's inbox for its
        next prompt; SteerTooLateError while a turn is ending, or with no turn when `inbox` is
        False (a front end that sends it as its own follow-up prompt)."""
        self.turns.steer(session, text, inbox)

    def stop(self, session: str) -> bool:
        """Ask the running turn to stop after its current step (forced after `stop.grace_s`);
        False when none runs."""
        return self.turns.stop(session)
