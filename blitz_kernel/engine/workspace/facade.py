"""`Workspace`: the engine's front door, and the composition root that builds its services.

Opening a directory builds, once and in this order, the configuration (settings, trust, the
session-wide model), the resolver (agent and model per turn), the sessions, the turn builder
and the turns service; every public method is a thin delegation to one of them. Opening never
fails because of the model: a placeholder model explains what is wrong on every call. Where
each service lives and what it may import: docs/architecture.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...config.settings import BlitzConfig
from ...config.trust import TrustState
from ...core.attachments import Attachment
from ...core.terms import Policy
from ...core.usage import UsageLedger
from ...mcp.manager import McpManager
from ...models.base import Model
from ...tools import builtin_tools
from ...tools.notebook import NotebookAccess
from ...tools.registry import KernelContext, ToolRegistry
from ..safety.approval import Approver, PendingApprovals
from ..safety.audit import AuditRecord
from ..safety.hooks import HookRunner
from ..store.session import Session
from ..store.sessions import SessionBook
from ..tracing import Telemetry
from ..turn.agents import AgentRegistry
from ..turn.budget import add_session_budget
from ..turn.compaction import CompactionResult
from ..turn.context import ContextWindows
from ..turn.instructions import MemoryFile
from ..turn.modes import PlanReviewer, TurnMode
from ..turn.options import EventHandler, FrontEnd, RunOptions
from ..turn.setup import TurnResult
from ..turn.subagents import Subagents
from ..undo.undo import UndoReport, check_undo_request, undo_turns
from .builder import TurnBuilder
from .configuration import Configuration
from .notices import NoticeBoard
from .resolution import Resolver
from .turns import Turns


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
        self.tools = ToolRegistry(builtin_tools())
        self.configuration = Configuration(
            self.root, self.tools, overrides or {}, model=model, environ=environ, home=home
        )
        self.resolver = Resolver(self.configuration)
        self.notices = NoticeBoard(trust_due=self.configuration.trust.holding_back)
        # sessions live in <root>/.blitz/blitz.db; `durable=False` keeps them in memory
        self.sessions = SessionBook.for_workspace(self.root) if durable else SessionBook()
        self.contexts = ContextWindows()
        self.waiting_approvals = PendingApprovals()
        """Permission requests waiting now, over every turn and aside."""
        # a workspace's own servers reach the config only once it is trusted
        self.mcp = McpManager(self.root, trusted=lambda: self.configuration.trust.trusted)
        """The MCP servers, started when a turn first offers their tools."""
        self.builder = TurnBuilder(
            self.configuration, self.resolver, self.sessions, self.contexts, self.notices, self.mcp,
            self.waiting_approvals, kernel,
        )  # fmt: skip
        self.subagents = Subagents(self.builder.build, self.resolver.summaries)
        self.builder.subagents = self.subagents
        self.turns = Turns(self.configuration, self.resolver, self.builder, self.sessions)

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
        explicit = model if not isinstance(model, str) and model else None
        return cls(
            Path(path), overrides=merged, model=explicit, kernel=kernel, environ=environ, home=home, durable=durable
        )

    # -- configuration (Configuration) -----------------------------------------------------------

    @property
    def config(self) -> BlitzConfig:
        return self.configuration.config

    @property
    def model(self) -> Model:
        """The session-wide model (`%blitz_model`); a turn may use another (`-m`, an agent pin)."""
        return self.configuration.model

    @model.setter
    def model(self, model: Model) -> None:
        self.configuration.model = model

    @property
    def kernel(self) -> KernelContext | None:
        """The kernel the workspace's turns run in (None for a script)."""
        return self.builder.kernel

    @kernel.setter
    def kernel(self, kernel: KernelContext | None) -> None:
        self.builder.kernel = kernel

    @property
    def trust(self) -> TrustState:
        return self.configuration.trust

    @property
    def agents(self) -> AgentRegistry:
        return self.configuration.agents

    @property
    def telemetry(self) -> Telemetry:
        return self.configuration.telemetry

    @property
    def hooks(self) -> HookRunner:
        return self.configuration.hooks

    @property
    def overrides(self) -> dict[str, Any]:
        return self.configuration.overrides

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

    def mcp_servers(self) -> McpManager:
        """The MCP servers as the configuration says now, for a turn or `%blitz_mcp`."""
        return self.builder.mcp_servers()

    # -- sessions (SessionBook) ------------------------------------------------------------------

    def session(self, name: str = "default") -> Session:
        return self.sessions.get(name)

    def usage(self, session: str = "default") -> UsageLedger:
        return self.session(session).ledger

    def add_budget(self, session: str, usd: float) -> float:
        """Add `usd` to the session's budget (lifting a trip); returns what is left."""
        return add_session_budget(self.session(session), usd, self.config.limits.max_cost_usd_session)

    def context_of(self, session: str) -> str | None:
        """How full the session's context is ("ctx 42 % of 128K (litellm)"), from its last
        prompt; None before any model call. The window is the current model's."""
        return self.contexts.fill(self.session(session).ledger.last_prompt_tokens, self.model, self.config)

    def audit(self, session: str = "default") -> list[AuditRecord]:
        """Every tool call of the session, with its decision and who made it."""
        return list(self.session(session).audit)

    async def undo(
        self,
        session: str = "default",
        turns: int = 1,
        files: bool = True,
        conversation: bool = True,
        force: bool = False,
        through_turn: int | None = None,
    ) -> UndoReport:
        """Undo the last `turns` turns of `session`, newest first (docs/undo.md): files, cells
        and variables as they were before (`files`), and those turns' part of the history
        (`conversation`); a change made again since is skipped and named unless `force`.
        `through_turn` (0-based) undoes every turn from the newest down to that one."""
        check_undo_request(turns, files, conversation, through_turn)
        if session not in self.sessions.names():  # undoing must not create it
            return UndoReport(session=session, nothing_to_undo=True)
        bridge = getattr(self.kernel, "notebook", None) if self.kernel is not None else None
        notebook = bridge if isinstance(bridge, NotebookAccess) else None
        return await undo_turns(
            self.root, self.session(session), notebook, turns, files, conversation, force, through_turn
        )

    # -- turns (Turns) ---------------------------------------------------------------------------

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
        """Run one turn in `session`; per-run options override the configuration for this turn
        only. `plan=True` is a plan-only turn. The keyword arguments are the public contract
        (docs/interface.md); they build a RunOptions and a FrontEnd."""
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
        return await self.turns.run(prompt, session, options, front_end or FrontEnd(), attachments)

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

    def steer(self, session: str, text: str) -> None:
        """Queue `text` for the running turn, or raise SteerTooLateError."""
        self.turns.steer(session, text)

    def stop(self, session: str) -> bool:
        """Ask the running turn to stop after its current step; False when none runs."""
        return self.turns.stop(session)
