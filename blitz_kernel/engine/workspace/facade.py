"""`Workspace`: the engine's front door. Its services are built by the composition root
(composition.py); each public method is a thin delegation, and services with a concern of their
own are public: `turns` (replay), `history` (truncate), `outside` (outside clients), `builder`
(skills), `review` (keep). Opening never fails because of the model: a placeholder explains so.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
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
from ..turn.setup import TurnResult
from ..turn.structured import output_schema
from ..undo.review import RevertReport, TurnChanges
from ..undo.undo import UndoReport
from .composition import Options, compose
from .delegated import Delegated


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
        self.outside, self.review = services.outside, services.review

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

    configure: Delegated[Callable[..., BlitzConfig]] = Delegated("configuration", "configure")
    """Set configuration keys (`%blitz_config`); a bad value changes nothing."""

    def set_model(self, name: str) -> Model:
        """Switch the session-wide model; takes effect on the next turn."""
        self.configuration.configure(model=name)
        return self.model

    trust_workspace: Delegated[Callable[[], TrustState]] = Delegated("configuration", "trust_workspace")
    """Trust what this workspace's own config asks for now (`%blitz_trust`)."""
    revoke_trust: Delegated[Callable[[], bool]] = Delegated("configuration", "revoke_trust")
    """`%blitz_trust --revoke`: hold the workspace's settings back again."""
    reload_agents: Delegated[Callable[[], AgentRegistry]] = Delegated("configuration", "reload_agents")
    """Read `.blitz/agents/*.md` again (an agent file written while the kernel runs)."""
    memory: Delegated[Callable[[], list[MemoryFile]]] = Delegated("builder", "memory")
    """The project-memory files the next turn's instructions include."""
    mcp_servers: Delegated[Callable[[], McpManager]] = Delegated("builder", "mcp_servers")
    """The MCP servers as the configuration says now, for a turn or `%blitz_mcp`."""
    changes: Delegated[Callable[..., TurnChanges]] = Delegated("review", "changes")
    revert: Delegated[Callable[..., Awaitable[RevertReport]]] = Delegated("review", "revert")
    """`changes(turn=None, *, session)`: a turn's change list; `revert(ids, force)`: some of it back."""

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
        output_type: Any = None,
        think: Reasoning | None = None,
    ) -> TurnResult:
        """One turn in `session`; per-run options beat the configuration for this turn only:
        `plan` (`--plan`), `output_type` (`--schema`), `think` (`--think`); docs/interface.md."""
        options = RunOptions(
            agent=agent,
            model=model,
            mode=TurnMode.PLAN if plan else TurnMode.NORMAL,
            max_turns=max_turns,
            max_cost_usd=max_cost_usd,
            timeout_s=timeout,
            tools=tuple(tools) if tools is not None else None,
            approve=approve,
            output=output_schema(output_type) if output_type is not None else None,
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
        next prompt; SteerTooLateError while a turn ends, or with no turn and `inbox` False."""
        self.turns.steer(session, text, inbox)

    def stop(self, session: str) -> bool:
        """Ask the running turn to stop after its current step (forced after `stop.grace_s`);
        False when none runs."""
        return self.turns.stop(session)
