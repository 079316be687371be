"""The audit trail: every tool call, what was decided, by whom, and how it ended.

One record per call, written when the call's result is recorded, kept with the session (and
in the session store when sessions are durable). Arguments are shortened: the trail answers
"what ran, who let it", not "reproduce the call" (the transcript holds the full text).
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from ...core.terms import DecidedBy, ToolOutcome

ARGUMENT_CHARS = 200


class AuditRecord(BaseModel):
    """One tool call in the audit trail."""

    session: str
    agent: str | None = None
    """The agent that made the call (a sub-agent's calls are in its caller's trail); None in
    records written before agents were recorded."""
    turn: int
    call_id: str
    tool: str
    arguments: str
    """The arguments as JSON, shortened to ARGUMENT_CHARS."""
    decision: str
    """`allowed`, `denied`, `refused` (a rule: unknown tool, not allowed, mode, bad
    arguments) or `blocked` (a hook or the watchdog)."""
    decided_by: DecidedBy
    reason: str | None = None
    status: ToolOutcome
    caller: str | None = None
    """The client outside the notebook that made the call ("mcp:claude-code"); None for the
    notebook's own turns."""
    time: datetime = Field(default_factory=lambda: datetime.now(UTC))
