"""The closed vocabularies that cross layer boundaries, each defined once.

Config, engine, events and widgets all speak of policies, verdicts, plan statuses, stop
reasons and tool outcomes; a second copy of one of these literals would drift (a new stop
reason added in one place and rejected in another), so every layer imports them from here.
"""

from __future__ import annotations

from typing import Literal

Policy = Literal["allow", "ask", "deny"]

Reasoning = Literal["off", "low", "medium", "high"]
"""How hard a model thinks before it answers (`--think`, `reasoning`): each provider's own
setting (Anthropic's thinking budget, OpenAI's reasoning effort, Gemini's thinking budget)."""
"""What a tool call needs before it runs, and what `--approve` sets for a turn."""
ToolPolicy = Literal["allow", "ask", "deny", "ask-if-risky"]
"""A configured policy: `ask-if-risky` (run_python only) runs code without asking when nothing
in it is flagged (engine/risk.py)."""
HeadlessPolicy = Literal["deny", "allow"]
"""What `ask` means when nobody can answer."""
Verdict = Literal["allow", "always", "deny"]
"""A person's answer to one call of a permission request."""
DecidedBy = Literal["user", "policy", "always", "headless default", "hook", "mode", "watchdog", "stop", "timeout"]
"""Who decided whether a tool call ran (the audit trail)."""
PlanStatus = Literal["approved", "rejected", "unreviewed"]
"""What became of a plan proposed with exit_plan_mode."""
StopReason = Literal[
    "end_turn", "max_turns", "max_cost", "timeout", "cancelled", "blocked", "error", "watchdog", "interrupted"
]
"""Why a turn ended (TurnResult in docs/interface.md). `interrupted`: the process died
mid-turn (seen when a durable session is reopened)."""
ToolOutcome = Literal["ok", "error", "denied", "cancelled", "blocked"]
"""How one tool call ended: ran fine, failed (or was refused by a rule), denied by a person or
policy, cut short by a stop, or blocked by a hook. Front ends show it as is; nobody has to
guess it from an error's wording."""

SUMMARY_HEADER = "[Summary of earlier conversation]"
"""How a compaction summary introduces itself, to the summariser and to the model."""
