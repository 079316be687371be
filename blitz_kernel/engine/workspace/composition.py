"""The composition root: builds one workspace's services, once, in dependency order, and hands
each its dependencies explicitly. Adding a service means adding it here (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ...core.store_url import store_url
from ...mcp.manager import McpManager
from ...models.base import Model
from ...tools import builtin_tools
from ...tools.registry import KernelContext, ToolRegistry
from ..safety.approval import PendingApprovals
from ..store.sessions import SessionBook
from ..turn.context import ContextWindows
from ..turn.subagents import Subagents
from .builder import TurnBuilder
from .configuration import Configuration
from .history import SessionService
from .notices import NoticeBoard
from .outside import OutsideCalls
from .resolution import Resolver
from .review import ReviewService
from .turns import Turns


@dataclass(frozen=True)
class Services:
    """One workspace's services; each has one owner of its state."""

    tools: ToolRegistry
    configuration: Configuration
    resolver: Resolver
    notices: NoticeBoard
    sessions: SessionBook
    contexts: ContextWindows
    waiting_approvals: PendingApprovals
    """Permission requests waiting now, over every turn and aside."""
    mcp: McpManager
    """The MCP servers, started when a turn first offers their tools."""
    builder: TurnBuilder
    subagents: Subagents
    turns: Turns
    history: SessionService
    outside: OutsideCalls
    """Calls and turns from clients outside the notebook (docs/mcp-server.md)."""
    review: ReviewService
    """A turn's change list, kept or reverted change by change (docs/undo.md)."""


class Options(TypedDict, total=False):
    """How a workspace is opened, besides its folder and model."""

    overrides: Mapping[str, Any] | None
    """Configuration keys set for this workspace, as `%blitz_config` would."""
    kernel: KernelContext | None
    environ: Mapping[str, str] | None
    """The environment to read (default: the process's); tests pass their own."""
    home: Path | None
    """The user's home for `~/.blitz/` (default: the real one); tests pass their own."""
    durable: bool
    """False keeps sessions in memory only."""


def compose(root: Path, model: Model | None, **options: Unpack[Options]) -> Services:
    """The services of the workspace at `root` (already resolved)."""
    kernel = options.get("kernel")
    tools = ToolRegistry(builtin_tools())
    configuration = Configuration(
        root,
        tools,
        options.get("overrides") or {},
        model=model,
        environ=options.get("environ"),
        home=options.get("home"),
    )
    resolver = Resolver(configuration)
    notices = NoticeBoard(trust_due=configuration.trust.due)
    # sessions live in <root>/.blitz/blitz.db; `durable=False` keeps them in memory
    store = store_url(configuration.config.store.url, configuration.config.store.path)
    durable = options.get("durable", True)
    sessions = SessionBook.for_workspace(root, url=store, home=options.get("home")) if durable else SessionBook()
    contexts, waiting = ContextWindows(), PendingApprovals()
    # a workspace's own servers reach the config only once it is trusted
    # and the admin policy's allowlist refuses the servers it does not name, with the reason
    policy = configuration.policy
    mcp = McpManager(
        root,
        trusted=lambda: configuration.trust.trusted,
        admin_refusal=policy.mcp_refusal if policy is not None else None,
    )
    builder = TurnBuilder(configuration, resolver, sessions, contexts, notices, mcp, waiting, kernel)
    subagents = Subagents(builder.build, resolver.summaries)
    builder.subagents = subagents  # the sub-agents' turns are built by the same builder
    turns = Turns(configuration, resolver, builder, sessions)
    history = SessionService(root, sessions, contexts, configuration, builder)
    outside = OutsideCalls(turns)
    review = ReviewService(root, sessions, builder)
    return Services(
        tools,
        configuration,
        resolver,
        notices,
        sessions,
        contexts,
        waiting,
        mcp,
        builder,
        subagents,
        turns,
        history,
        outside,
        review,
    )
