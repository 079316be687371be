"""The typed pieces of a turn's widget state: the items (blocks in order), steer messages,
side questions, the open permission request and the attachment chips.

They are plain JSON-able dicts because they go to the front end as they are; TurnState (and,
for sub-agent turns, nested.py) are the only places that change them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from ...core.terms import PlanStatus, ToolOutcome, Verdict

EXACT = ConfigDict(extra="forbid")
"""Every piece forbids keys it does not declare, so a test that validates a real state against
these types (the protocol's schema, docs/widget.md) fails when one grows a key unannounced."""

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


@with_config(EXACT)
class TextItem(TypedDict):
    kind: Literal["text"]
    text: str


@with_config(EXACT)
class ThoughtItem(TypedDict):
    kind: Literal["thought"]
    text: str


@with_config(EXACT)
class ToolItem(TypedDict):
    kind: Literal["tool"]
    id: str
    name: str
    args: dict[str, Any]
    presentation: dict[str, Any]
    """How the tool asks to be shown (`ToolPresentation` as JSON): the widget reads this,
    never the tool's name."""
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


@with_config(EXACT)
class PlanItem(TypedDict):
    kind: Literal["plan"]
    plan: str
    status: PlanStatus
    reason: str | None
    heading: str
    """What became of the plan, in words: the widget shows this, so the wording lives in
    Python only (lines.plan_heading)."""


@with_config(EXACT)
class CompactionItem(TypedDict):
    kind: Literal["compaction"]
    covered_events: int
    tokens_before: int
    tokens_after: int
    line: str
    """The one-line note the widget shows (lines.compaction_line)."""


@with_config(EXACT)
class ErrorItem(TypedDict):
    kind: Literal["error"]
    message: str


Item = TextItem | ThoughtItem | ToolItem | PlanItem | CompactionItem | ErrorItem


@with_config(EXACT)
class SteerEntry(TypedDict):
    id: int
    text: str
    status: SteerStatus
    detail: str


@with_config(EXACT)
class AsideEntry(TypedDict):
    id: int
    question: str
    status: AsideStatus
    answer: str
    error: str | None


@with_config(EXACT)
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


@with_config(EXACT)
class PendingRequest(TypedDict):
    """The permission request the widget shows: which agent asks, and in which sub-agent
    turn (`scope`: the `invoke_agent` call ids from the root down; [] for the turn's own)."""

    request_id: str
    calls: list[PendingCallEntry]
    agent: str | None
    scope: list[str]


@with_config(EXACT)
class AttachmentChip(TypedDict):
    """A reference attached to the prompt (`@df`), shown as a chip above the answer."""

    kind: str
    name: str
    size: int
    label: str
    """`variable df · 2.1 KB`: the chip's words, written once here (lines.attachment_label)."""


@with_config(EXACT)
class Empty(TypedDict):
    """No keys: the value of `pending`, `review` and `offer` when there is none ({})."""


@with_config(EXACT)
class Header(TypedDict):
    prompt: str
    label: str
    session: str
    model: str
    agent: str
    turn_index: int
    started_ms: float
    attachments: list[AttachmentChip]


@with_config(EXACT)
class Live(TypedDict):
    """The text and thought of the step being streamed."""

    text: str
    thought: str


@with_config(EXACT)
class PendingView(PendingRequest):
    """The request on the approval card, and how many more wait behind it."""

    waiting: int


@with_config(EXACT)
class Review(TypedDict):
    """A plan waiting for Approve plan / Reject."""

    review_id: int
    plan: str


@with_config(EXACT)
class Offer(TypedDict):
    """Continue past the step limit, offered."""

    offer_id: int
    steps: int
    line: str


@with_config(EXACT)
class Footer(TypedDict):
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    calls: int
    cost: str
    priced: bool
    elapsed_s: float | None
    stop_reason: str
    progress: str
    switches: list[str]
    context: str
    saving: str
    """"cache saved $0.0123" when prompt caching saved something, else empty."""


@with_config(EXACT)
class ShownImage(TypedDict):
    media_type: str
    data: str
    """Base64."""


@with_config(EXACT)
class TurnWidgetState(TypedDict):
    """Every synced trait of the turn widget (TurnView), as the front end reads it."""

    turn_id: str
    header: Header
    items: list[Item]
    live: Live
    pending: PendingView | Empty
    review: Review | Empty
    offer: Offer | Empty
    steers: list[SteerEntry]
    asides: list[AsideEntry]
    footer: Footer
    phase: Phase
    stopping: Literal["", "graceful", "force"]
    notice: str
    images: dict[str, list[ShownImage]]


UndoStatus = Literal["ready", "running", "done", "blocked", "failed"]


@with_config(EXACT)
class UndoWidgetState(TypedDict):
    """Every synced trait of the Review changes and Undo all controls (widgets/undo.py)."""

    turn_id: str
    status: UndoStatus
    report: str
    changes: list[dict[str, Any]]
    """The turn's change list (engine/undo/changes.py's models as JSON, each with `summary`)."""
    panel: bool
    """The Review changes panel is open."""


OPEN_STATUSES = ("queued", "waiting", "running")
