"""The one-line wordings every rendering of a turn shares: the plain outputs, the static
rendering a saved notebook keeps, and (through the widget's state) the live widget.

Each wording is defined here once, so the three cannot drift apart: a tool call and its
arguments, a result, the usage line, the compaction note and what became of a plan. turn.js
receives the compaction note and the plan heading as fields of the items it draws.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..core.terms import PlanStatus
from ..core.text import one_line

if TYPE_CHECKING:
    from ..core.attachments import AttachmentSummary
    from ..engine.events import ModelSwitchEvent
    from .widgets.state import ToolItem, TurnState

ARGS_CHARS = 100
RESULT_CHARS = 120

PLAN_STATUS_WORDS: dict[PlanStatus, str] = {
    "approved": "approved", "rejected": "rejected", "unreviewed": "not reviewed",
}
NO_REASON = "no reason given"


def args_line(args: dict[str, Any]) -> str:
    """`path="a", content="…"`: a call's arguments as JSON values, on one shortened line."""
    text = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items())
    return one_line(text, ARGS_CHARS)


def call_line(tool: ToolItem) -> str:
    """`⚙ name(args)`: the call, before it has a result."""
    return f"⚙ {tool['name']}({args_line(tool['args'])})"


def result_text(tool: ToolItem) -> str:
    """What the call gave back on one line: the preview, or `error: …` when it did not succeed."""
    body = (tool["preview"] or "(no output)") if tool["status"] == "done" else f"error: {tool['error']}"
    return one_line(body, RESULT_CHARS)


def usage_line(state: TurnState) -> str:
    """`— model · tokens · cost · elapsed · stop reason`: how a turn ended and what it cost;
    a session the store could not save says so on every line (WS-02)."""
    elapsed = f"{state.elapsed_s:.1f} s" if state.elapsed_s is not None else "—"
    unsaved = " · ⚠ session not saved (%blitz_session show says why)" if state.not_saved else ""
    return f"— {state.model} · {state.usage.describe()} · {elapsed} · {state.stop_reason}{unsaved}"


def chip_line(chip: AttachmentSummary) -> str:
    """`📎 variable @df (1,234 chars)`: what a prompt's reference attached (ENG-11)."""
    unit = "bytes" if chip.kind == "figure" else "chars"
    return f"📎 {chip.kind} @{chip.name} ({chip.size:,} {unit})"


def switch_line(event: ModelSwitchEvent) -> str:
    """GR-01: `⇄ a failed (why); answered by b`."""
    return f"⇄ {event.failed} failed ({event.reason}); answered by {event.answered_by}"


def compaction_line(covered_events: int) -> str:
    return f"⟲ compacted {covered_events} earlier event(s) into a summary"


def compaction_detail(tokens_before: int, tokens_after: int) -> str:
    """The prompt size a compaction saved (the plain output adds it to `compaction_line`)."""
    return f"prompt ≈{tokens_before:,} → ≈{tokens_after:,} tokens"


def plan_heading(status: PlanStatus) -> str:
    """`Proposed plan — approved`: what became of a proposed plan (ENG-32)."""
    return f"Proposed plan — {PLAN_STATUS_WORDS[status]}"


def plan_heading_with_reason(status: PlanStatus, reason: str | None) -> str:
    """The heading, and for a rejected plan why (the static rendering's one line)."""
    heading = plan_heading(status)
    return f"{heading}: {reason or NO_REASON}" if status == "rejected" else heading
