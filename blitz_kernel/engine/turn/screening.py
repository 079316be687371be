"""What screening makes of a tool call before it runs: let through (with its policy and who set
it), or refused (with the result the model reads), and what the audit records of either. Plain
values the batch passes around, kept apart so the batch reads as its steps."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from ...core.history import ToolCall, ToolResultMessage
from ...core.terms import DecidedBy, Policy, ToolOutcome
from ...tools.registry import Tool


@dataclass(frozen=True)
class Screened:
    """A call that passed screening: the tool, its parsed arguments, its policy (allow or
    ask), who set that policy, and why it asks when it would often not (ask-if-risky)."""

    call: ToolCall
    tool: Tool
    args: BaseModel
    policy: Policy
    decided_by: DecidedBy = "policy"
    ask_reason: str | None = None


@dataclass(frozen=True)
class Refused:
    """A call that screening refused; the model reads `result` as the call's result."""

    result: ToolResultMessage
    status: ToolOutcome
    decided_by: DecidedBy = "policy"


@dataclass(frozen=True)
class Decision:
    """What the audit trail records of how a call was let through or stopped."""

    decision: str
    decided_by: DecidedBy
    reason: str | None = None
