"""The one-line wordings every rendering of a turn shares: the plain outputs, the static
rendering a saved notebook keeps, and (through the widget's state) the live widget.

Each wording is defined here once, so the three cannot drift apart: a tool call and its
arguments, a result, the usage line, the compaction note and what became of a plan. turn.js
receives the compaction note and the plan heading as fields of the items it draws.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from ..core.terms import PlanStatus
from ..core.text import one_line

if TYPE_CHECKING:
    from ..core.usage import UsageTotals
    from ..engine.events import ModelSwitchEvent
    from .widgets.items import AttachmentChip, ToolItem

ARGS_CHARS = 100
RESULT_CHARS = 120

PLAN_STATUS_WORDS: dict[PlanStatus, str] = {
    "approved": "approved",
    "rejected": "rejected",
    "unreviewed": "not reviewed",
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


class TurnFooter(Protocol):
    """What the usage line reads of a turn's state (the widget's and the plain front end's)."""

    model: str
    usage: UsageTotals
    elapsed_s: float | None
    stop_reason: str
    context_used: int | None
    context_window: int | None
    switches: list[str]
    not_saved: str | None


def usage_line(state: TurnFooter) -> str:
    """`— model · tokens · cost · elapsed · stop reason`: how a turn ended and what it cost;
    then how full the context is (when the engine says), which fallback model answered,
    and for a session the store could not save, that."""
    elapsed = f"{state.elapsed_s:.1f} s" if state.elapsed_s is not None else "—"
    extras = [context_fill(state.context_used, state.context_window), *state.switches]
    if state.not_saved:
        extras.append("⚠ session not saved (%blitz_session show says why)")
    tail = "".join(f" · {extra}" for extra in extras if extra)
    return f"— {state.model} · {state.usage.describe()} · {elapsed} · {state.stop_reason}{tail}"


def switch_note(event: ModelSwitchEvent) -> str:
    """A fallback switch on the usage line and the widget footer:
    `answered by b after a failed (why)`."""
    return f"answered by {event.answered_by} after {event.failed} failed ({event.reason})"


def context_fill(used: int | None, window: int | None) -> str:
    """`ctx 42 % of 128K`: how full the model's context is; "" when the engine did not say."""
    if not used or not window:
        return ""
    percent = 100 * used / window
    shown = "<1" if percent < 1 else str(round(percent))
    return f"ctx {shown} % of {_tokens_short(window)}"


def _tokens_short(tokens: int) -> str:
    if tokens >= 1_000_000 and tokens % 1_000_000 == 0:
        return f"{tokens // 1_000_000}M"
    if tokens >= 1000:  # 128000 and 131072 are both "128K", as model cards say
        binary = tokens % 1024 == 0 and tokens % 1000 != 0
        return f"{round(tokens / 1024) if binary else round(tokens / 1000)}K"
    return str(tokens)


def size_short(size: int) -> str:
    """`812 B`, `2.1 KB`, `3.4 MB` (attachment chips)."""
    if size < 1000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1000:.1f} KB"
    return f"{size / 1_000_000:.1f} MB"


def attachment_label(kind: str, name: str, size: int) -> str:
    """`variable df · 2.1 KB`: an attachment chip's words (widget and static rendering)."""
    return f"{kind} {name} · {size_short(size)}"


def chip_line(chip: AttachmentChip) -> str:
    """`📎 variable @df (1,234 chars)`: what a prompt's reference attached, as plain
    output says it."""
    unit = "bytes" if chip["kind"] == "figure" else "chars"
    return f"📎 {chip['kind']} @{chip['name']} ({chip['size']:,} {unit})"


def switch_line(event: ModelSwitchEvent) -> str:
    """A fallback switch: `⇄ a failed (why); answered by b`."""
    return f"⇄ {event.failed} failed ({event.reason}); answered by {event.answered_by}"


def thought_line(text: str) -> str:
    """A step's thinking in plain output: one line that says it happened, never the text
    (the widget shows it collapsed; a long chain of thought would drown the answer)."""
    words = len(text.split())
    return f"💭 thought ({words:,} word{'s' if words != 1 else ''}; the widget shows it)"


def compaction_line(covered_events: int) -> str:
    return f"⟲ compacted {covered_events} earlier event(s) into a summary"


def compaction_detail(tokens_before: int, tokens_after: int) -> str:
    """The prompt size a compaction saved (the plain output adds it to `compaction_line`)."""
    return f"prompt ≈{tokens_before:,} → ≈{tokens_after:,} tokens"


def plan_heading(status: PlanStatus) -> str:
    """`Proposed plan — approved`: what became of a proposed plan."""
    return f"Proposed plan — {PLAN_STATUS_WORDS[status]}"


def plan_heading_with_reason(status: PlanStatus, reason: str | None) -> str:
    """The heading, and for a rejected plan why (the static rendering's one line)."""
    heading = plan_heading(status)
    return f"{heading}: {reason or NO_REASON}" if status == "rejected" else heading
