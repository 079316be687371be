"""The event vocabulary: what the engine tells front ends while a turn runs (docs/interface.md).

Every event is a pydantic model with a literal `type`; `Event` is their discriminated union
and `EVENT_ADAPTER` (de)serialises any of them, so events can cross a comm or go to disk.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from ..core.attachments import AttachmentSummary
from ..core.history import ImagePart
from ..core.terms import DecidedBy, PlanStatus, StopReason, ToolOutcome, Verdict
from ..core.tools import ToolPresentation
from ..core.usage import TokenUsage, UsageTotals


class TurnStarted(BaseModel):
    type: Literal["turn_started"] = "turn_started"
    session: str
    turn_index: int
    prompt: str
    agent: str
    model: str
    attachments: list[AttachmentSummary] = Field(default_factory=list)
    """What the prompt pointed at, for the chips above the answer."""


class TextEvent(BaseModel):
    """Streamed text. `delta=True` for pieces; the whole text of a step comes once more with
    `repeat=True` so a front end that showed the deltas can skip it."""

    type: Literal["text"] = "text"
    text: str
    delta: bool = False
    thought: bool = False
    repeat: bool = False


class ToolCallEvent(BaseModel):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    presentation: ToolPresentation = Field(default_factory=ToolPresentation)
    """How the tool asks front ends to show the call (the tool's own declaration; the default
    for a name no tool has)."""


class PendingCall(BaseModel):
    """One call inside a permission request."""

    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    reason: str | None = None
    """Why this call asks when its policy would often let it run (`ask-if-risky`: what in
    the code was flagged)."""
    preview: str | None = None
    """What the call would change, as plain text (never HTML): a unified diff for
    write_file/edit_file (`--- a/PATH`, `+++ b/PATH`; a long one folded with a closing
    "[... N more diff lines]"), the cell's old and new source for notebook_edit, the code for
    run_python. None when the tool has no preview or it could not be made."""
    presentation: ToolPresentation = Field(default_factory=ToolPresentation)
    """How the tool asks front ends to show the call: the preview's kind among others."""


class PermissionRequest(BaseModel):
    """The calls of one batch that need a decision."""

    type: Literal["permission_request"] = "permission_request"
    request_id: str
    calls: list[PendingCall]


class PermissionDecision(BaseModel):
    type: Literal["permission_decision"] = "permission_decision"
    call_id: str
    decision: Verdict
    reason: str | None = None
    decided_by: DecidedBy = "user"
    """Who answered: the user, the headless default, or a stop/expiry that denied it."""


MAX_SHOWN_IMAGES = 4
"""Most images one tool result event carries to the front end (the rest are counted)."""
MAX_SHOWN_IMAGE_BYTES = 2 * 1024 * 1024
"""Largest image (decoded) an event carries; a bigger one is counted, not sent."""


class ToolResultEvent(BaseModel):
    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    ok: bool
    status: ToolOutcome = "ok"
    """How the call ended; front ends show this rather than reading the error's wording."""
    error: str | None = None
    preview: str = ""
    images: list[ImagePart] = Field(default_factory=list)
    """Images the tool showed the user (run_python's figures), for its card in the widget and
    the static rendering; never what the model sees (that is `ToolResultMessage.images`).
    Capped (`shown_images`): the event crosses a comm as widget state, is kept in the
    TurnResult and ends up in the saved notebook, so a loop drawing 50 figures must not put
    50 megabytes on each of those."""
    images_omitted: int = 0
    """Images the tool showed that the cap left out, so the card can say so."""


def shown_images(images: list[ImagePart]) -> tuple[list[ImagePart], int]:
    """The images a ToolResultEvent carries (at most MAX_SHOWN_IMAGES, each at most
    MAX_SHOWN_IMAGE_BYTES decoded, in order) and how many were left out."""
    kept = [image for image in images if _decoded_size(image.data_base64) <= MAX_SHOWN_IMAGE_BYTES]
    kept = kept[:MAX_SHOWN_IMAGES]
    return kept, len(images) - len(kept)


def _decoded_size(encoded: str) -> int:
    """Bytes a base64 string decodes to, without decoding it."""
    return len(encoded) * 3 // 4 - (len(encoded) - len(encoded.rstrip("=")))


class SteerEvent(BaseModel):
    """Queued steer messages rode on a tool result."""

    type: Literal["steer"] = "steer"
    count: int
    call_id: str


class UsageEvent(BaseModel):
    """One model call's usage, priced by the model that answered."""

    type: Literal["usage"] = "usage"
    model: str
    usage: TokenUsage
    cost_usd: float | None
    """None when the model has no price (the session becomes unpriced)."""
    saved_usd: float = 0.0
    """What prompt caching saved on this call (negative while a cache write costs extra)."""


class CompactionEvent(BaseModel):
    type: Literal["compaction"] = "compaction"
    covered_events: int
    tokens_before: int
    tokens_after: int
    automatic: bool


class PlanEvent(BaseModel):
    """A plan was proposed with exit_plan_mode, and what became of it."""

    type: Literal["plan"] = "plan"
    plan: str
    status: PlanStatus
    reason: str | None = None


class ModelSwitchEvent(BaseModel):
    """The fallback chain moved on: `failed` did not answer (an error, or its circuit
    breaker is open) and `answered_by` answers the same request instead."""

    type: Literal["model_switch"] = "model_switch"
    failed: str
    reason: str
    """One-line cause, naming what went wrong with `failed`."""
    answered_by: str


class ErrorEvent(BaseModel):
    """Why the turn failed (its kind is the stop reason)."""

    type: Literal["error"] = "error"
    kind: str
    message: str


NoticeKind = Literal[
    "untrusted_workspace", "unpriced_model", "mcp_server", "agent_file", "compaction", "store", "force_stop"
]
"""What a notice is about: the front ends show every notice as a warning line, and may style
or group them by kind; none of them ends the turn."""


class NoticeEvent(BaseModel):
    """Something the user should know that does not end the turn: settings held back by an
    untrusted workspace, a model without a price, an MCP server that did not start, a skipped
    agent file, an automatic compaction that failed, a store problem."""

    type: Literal["notice"] = "notice"
    kind: NoticeKind
    message: str


class ProgressEvent(BaseModel):
    """Work before the turn's first model call that may take a while, such as starting MCP
    servers (a first `npx` start can take 20 s): the cell says what it waits for instead of
    staying silent. Shown while it lasts; the turn's own events follow, and nothing records it."""

    type: Literal["progress"] = "progress"
    message: str


class TurnDone(BaseModel):
    type: Literal["turn_done"] = "turn_done"
    stop_reason: StopReason
    usage: UsageTotals
    error: str | None = None
    leftovers: list[str] = Field(default_factory=list)
    not_saved: str | None = None
    """Why the session is not being saved (its store could not be opened, or failed);
    front ends say so on the usage line."""
    undoable: bool = False
    """The turn changed files, cells or variables: the front end offers Review changes and Undo all."""
    context_used: int | None = None
    """Tokens of the turn's last prompt (how full the context is now); None: no model call."""
    context_window: int | None = None
    """The window those tokens fill (configured, litellm's, or the 128K default)."""
    forced: bool = False
    """A Stop that did not end the turn within `stop.grace_s` was forced (its running step
    cancelled); front ends say so."""


class SubagentEvent(BaseModel):
    """An event of a sub-agent's turn, under the call that started it, so a front end
    can nest the sub-agent's text, tool cards and permission requests inside that call."""

    type: Literal["subagent"] = "subagent"
    call_id: str
    """The caller's `invoke_agent` call."""
    agent: str
    depth: int
    """1 for a sub-agent of the root turn, 2 for its sub-agents, …"""
    event: Event


Event = Annotated[
    TurnStarted
    | TextEvent
    | ToolCallEvent
    | PermissionRequest
    | PermissionDecision
    | ToolResultEvent
    | SteerEvent
    | UsageEvent
    | CompactionEvent
    | PlanEvent
    | ModelSwitchEvent
    | ErrorEvent
    | NoticeEvent
    | ProgressEvent
    | SubagentEvent
    | TurnDone,
    Field(discriminator="type"),
]
SubagentEvent.model_rebuild()
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
