"""A session: one conversation's history, usage and per-session approvals.

In memory for now; the history is a typed list (`HISTORY_ADAPTER` saves and loads it) so a
durable store can persist it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.history import Message
from ..core.usage import UsageLedger
from .audit import AuditRecord
from .steering import TurnControl


@dataclass
class Session:
    name: str
    history: list[Message] = field(default_factory=list)
    ledger: UsageLedger = field(default_factory=UsageLedger)
    turns: int = 0
    """Completed turns; the next turn's index."""
    always_allowed: set[str] = field(default_factory=set)
    """Tools the user answered "Always allow" for (ENG-24)."""
    archive: list[Message] = field(default_factory=list)
    """Messages compaction replaced by a summary: the full transcript stays searchable (ENG-64)."""
    todos: list[dict[str, str]] = field(default_factory=list)
    """The agent's todo list (the `todo` tool)."""
    running: TurnControl | None = None
    """The control of the turn that is running now, if any."""
    compacting: bool = False
    """A manual compaction is summarising; turns wait for it (SessionBusyError)."""
    last_turn_span: Any = None
    """The previous turn's span context: the next turn's span links to it (ENG-91)."""
    audit: list[AuditRecord] = field(default_factory=list)
    """Every tool call of the session: decision, who made it, outcome (WS-07)."""
    budget_added_usd: float = 0.0
    """Budget added with `%blitz_usage --add-budget` on top of `limits.max_cost_usd_session`."""
    budget_tripped: bool = False
    """The session budget was spent (GR-05): turns are refused until budget is added."""

    def add_budget(self, usd: float) -> None:
        """GR-05: lift a tripped session budget by `usd`."""
        self.budget_added_usd += usd
        self.budget_tripped = False

    def replace_window(self, split: int, summary: Message) -> None:
        """Put `summary` in place of the first `split` messages, archiving them (ENG-64). A
        splice, so messages appended after the window was chosen are kept."""
        self.archive.extend(self.history[:split])
        self.history[:split] = [summary]
