"""`search_session`: the agent searches its own session's transcript.

Read-only, so it runs in plan and read-only modes. It reads the full transcript,
compacted parts included, which is how the agent gets back a detail a summary dropped. Tools
sit below the engine, so the searcher arrives through `ToolContext.extras` (the workspace puts
its session book there) rather than by import.
"""

from __future__ import annotations

import time
from typing import Protocol

from pydantic import BaseModel, Field

from .registry import ToolContext, ToolError, ToolKind, tool

SEARCHER = "session_search"
"""The `ToolContext.extras` key of the searcher."""


class Passage(Protocol):
    """One hit, as the workspace's session book returns it."""

    @property
    def index(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def time(self) -> float | None: ...
    @property
    def excerpt(self) -> str: ...
    @property
    def compacted(self) -> bool: ...


class Searcher(Protocol):
    def search(self, text: str, session: str | None = None) -> list[Passage]: ...


class SearchSessionArgs(BaseModel):
    query: str = Field(
        description="words to look for (every word must occur; a word also matches longer words it begins)"
    )
    limit: int = Field(default=8, ge=1, le=20, description="at most this many passages, best first")


@tool("search_session", ToolKind.READ_ONLY, SearchSessionArgs)
async def search_session(args: SearchSessionArgs, ctx: ToolContext) -> str:
    """Search this conversation's full transcript (prompts, your answers, tool results),
    including parts that were compacted into a summary and that you no longer see. Returns
    passages as [message N, role, time] with matches between « and »."""
    searcher: Searcher | None = ctx.extras.get(SEARCHER)
    if searcher is None:
        raise ToolError("search_session needs the workspace's session store, which this run does not have")
    try:
        hits = searcher.search(args.query, ctx.session)[: args.limit]
    except Exception as exc:  # e.g. an aside's throwaway session, which has no transcript
        raise ToolError(f"search_session cannot search this session: {exc}") from None
    if not hits:
        return f"no passage of this session matches {args.query!r}"
    lines = []
    for hit in hits:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(hit.time)) if hit.time else "time unknown"
        note = " (compacted away: only the summary stands for it in what you see)" if hit.compacted else ""
        lines.append(f"[message {hit.index}, {hit.role}, {when}]{note}\n{hit.excerpt}")
    return "\n\n".join(lines)


SESSION_TOOLS = [search_session]
