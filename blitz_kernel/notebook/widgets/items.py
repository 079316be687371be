"""The typed pieces of a turn's widget state: the items (blocks in order), steer messages,
side questions, the open permission request and the attachment chips.

They are plain JSON-able dicts because they go to the front end as they are; TurnState (and,
for sub-agent turns, nested.py) are the only places that change them.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from ...core.terms import PlanStatus, ToolOutcome, Verdict

ToolStatus = Literal["queued", "waiting", "running", "done", "error", "denied", "cancelled", "blocked"]
"""A tool card's status: open (queued, waiting, running) or how the call ended."""
SteerStatus = Literal["queued", "delivered", "next_prompt", "dropped"]
AsideStatus = Literal["thinking", "answered", "failed", "cancelled"]
Phase = Literal["running", "finishing", "done"]
PreviewKind = Literal["diff", "cell", "code", "text", ""]
"""How the approval card shows a call's preview (diff lines coloured, code monospace)."""

FINAL_STATUS: dict[ToolOutcome, ToolStatus] = {
    "ok": "done",
    "error": "error",
    "denied": "denied",
    "cancelled": "cancelled",
    "blocked": "blocked",
}
"""The card status of each way a call can end (ToolResultEvent.status)."""


class TextItem(TypedDict):
    kind: Literal["text"]
    text: str


class ThoughtItem(TypedDict):
    kind: Literal["thought"]
    text: str


class ToolItem(TypedDict):
    kind: Literal["tool"]
    id: str
    name: str
    args: dict[str, Any]
    status: ToolStatus
    started_ms: float
    ended_ms: float | None
    preview: str
    error: str | None
    decision: Verdict | None
    images: int
    """Images the card shows (they travel apart, in `TurnState.images`)."""
    images_omitted: int
    agent: str
    """The agent that made the call: "" for the turn's own agent, else the sub-agent's name."""
    nested: list[Item]
    """An `invoke_agent` card's sub-agent turn: its text, tool cards (nested again,
    up to the depth cap) and errors, in order; empty for every other call."""


class PlanItem(TypedDict):
    kind: Literal["plan"]
    plan: str
    status: PlanStatus
    reason: str | None
    heading: str
    """What became of the plan, in words: the widget shows this, so the wording lives in
    Python only (lines.plan_heading)."""


class CompactionItem(TypedDict):
    kind: Literal["compaction"]
    covered_events: int
    tokens_before: int
    tokens_after: int
    line: str
    """The one-line note the widget shows (lines.compaction_line)."""


class ErrorItem(TypedDict):
    kind: Literal["error"]
    message: str


Item = TextItem | ThoughtItem | ToolItem | PlanItem | CompactionItem | ErrorItem


class SteerEntry(TypedDict):
    id: int
    text: str
    status: SteerStatus
    detail: str


class AsideEntry(TypedDict):
    id: int
    question: str
    status: AsideStatus
    answer: str
    error: str | None


class PendingCallEntry(TypedDict):
    id: str
    name: str
    args: dict[str, Any]
    decision: Verdict | None
    reason: str | None
    """Why this call asks (`ask-if-risky`: what in the code was flagged)."""
    preview: str | None
    """What the call will change, as plain text (a unified diff, a cell's old and new source,
    the code): the approval card shows it instead of the JSON arguments."""
    preview_kind: PreviewKind


class PendingRequest(TypedDict):
    """The permission request the widget shows: which agent asks, and in which sub-agent
    turn (`scope`: the `invoke_agent` call ids from the root down; [] for the turn's own)."""

    request_id: str
    calls: list[PendingCallEntry]
    agent: str | None
    scope: list[str]


class AttachmentChip(TypedDict):
    """A reference attached to the prompt (`@df`), shown as a chip above the answer."""

    kind: str
    name: str
    size: int
    label: str
    """`variable df · 2.1 KB`: the chip's words, written once here (lines.attachment_label)."""


OPEN_STATUSES = ("queued", "waiting", "running")
