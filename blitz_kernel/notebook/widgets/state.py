"""The state of one turn as the widget shows it, built from the engine's events.

Kept apart from the widget so that it can be tested and benchmarked without a kernel, and so
that the static rendering left in the notebook is made from the very state the widget showed.
Every field that the front end sees is a plain JSON value; `dirty` names the synced fields that
changed since the last flush, so a flush sends only those. Items, steers and asides are typed
dicts (they go to the front end as they are); only TurnState's methods change them, so the
controller and the presenters read them and never edit one in place.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.terms import Verdict
from ...core.usage import UsageTotals
from ...engine.events import (
    CompactionEvent,
    Event,
    ModelSwitchEvent,
    NoticeEvent,
    PermissionDecision,
    PermissionRequest,
    PlanEvent,
    ProgressEvent,
    SteerEvent,
    SubagentEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
    UsageEvent,
)
from ..lines import (
    attachment_label,
    compaction_line,
    context_fill,
    plan_heading,
    switch_note,
)
from .items import (
    FINAL_STATUS,
    OPEN_STATUSES,
    AsideEntry,
    AsideStatus,
    AttachmentChip,
    CompactionItem,
    ErrorItem,
    Item,
    PendingCallEntry,
    PendingRequest,
    Phase,
    PlanItem,
    SteerEntry,
    SteerStatus,
    TextItem,
    ThoughtItem,
    ToolItem,
    ToolStatus,
)
from .nested import Path, SubagentCards, new_tool

__all__ = [
    "FINAL_STATUS",
    "OPEN_STATUSES",
    "AsideEntry",
    "AsideStatus",
    "AttachmentChip",
    "CompactionItem",
    "ErrorItem",
    "Item",
    "PendingCallEntry",
    "PendingRequest",
    "Phase",
    "PlanItem",
    "SteerEntry",
    "SteerStatus",
    "TextItem",
    "ThoughtItem",
    "ToolItem",
    "ToolStatus",
    "TurnState",
]

if TYPE_CHECKING:
    from ...engine.turn.setup import TurnResult

SYNCED = (
    "header",
    "items",
    "live",
    "pending",
    "review",
    "offer",
    "steers",
    "asides",
    "footer",
    "phase",
    "stopping",
    "notice",
    "images",
)
"""The fields the widget mirrors as traits (same names)."""


def _now_ms() -> float:
    return time.time() * 1000.0


@dataclass
class TurnState:
    """What the widget shows for one turn; `apply(event)` for every engine event."""

    turn_id: str
    prompt: str
    session: str
    model: str = ""
    agent: str = ""
    turn_index: int = 0
    label: str = ""
    """Shown instead of the prompt when the cell did not type it (the carry-out of a plan)."""
    started_ms: float = field(default_factory=_now_ms)
    items: list[Item] = field(default_factory=list)
    """Finished blocks in order: text, thought, tool, plan, compaction, error."""
    live_text: str = ""
    live_thought: str = ""
    pending: PendingRequest | None = None
    """The permission request the card shows (None when none): its calls with decisions."""
    waiting_requests: list[PendingRequest] = field(default_factory=list)
    """Further requests open at once (parallel sub-agents each ask): shown one after another."""
    attachments: list[AttachmentChip] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    """Warnings to show (untrusted workspace, unpriced model, session not saved, switches)."""
    switches: list[str] = field(default_factory=list)
    """Each fallback switch, in words, for the footer and the usage line."""
    context_used: int | None = None
    context_window: int | None = None
    undoable: bool = False
    """The turn changed files, cells or variables that `Workspace.undo` can restore."""
    undone: str = ""
    """Set once the turn was undone from its Undo all button: the static rendering
    says so (the report in short)."""
    changes: list[dict[str, Any]] = field(default_factory=list)
    """The turn's change list, read when it ends (undo.py `change_list`) and after each
    decision in the Review changes panel: the static rendering lists it."""
    review: dict[str, Any] = field(default_factory=dict)
    """The plan waiting for Approve plan / Reject ({} when none): review_id and the plan."""
    offer: dict[str, Any] = field(default_factory=dict)
    """Continue past the step limit ({} when not offered): offer_id, steps and the words."""
    steers: list[SteerEntry] = field(default_factory=list)
    asides: list[AsideEntry] = field(default_factory=list)
    images: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    """Images tools showed, by call id: [{media_type, data (base64)}]. Apart from `items` on
    purpose: `items` is sent whole whenever a card changes, images only when one arrives."""
    usage: UsageTotals = field(default_factory=UsageTotals)
    phase: Phase = "running"
    stopping: str = ""
    """"" | "graceful" | "force": what the Stop button asked for."""
    notice: str = ""
    progress: str = ""
    """What the turn waits for before it starts (MCP servers starting): the footer says it in
    place of "running" until the turn's first event; never kept in the static rendering."""
    stop_reason: str = ""
    error: str | None = None
    not_saved: str | None = None
    """Why the session is not being saved (the store failed), from TurnDone."""
    elapsed_s: float | None = None
    done_seen: bool = False
    dirty: set[str] = field(default_factory=lambda: set(SYNCED))
    _tools: dict[str, ToolItem] = field(default_factory=dict)
    _batch: list[str] = field(default_factory=list)
    """Ids of the tool calls of the current model response."""
    _subagents: SubagentCards | None = None

    def __post_init__(self) -> None:
        self._subagents = SubagentCards(self._tools)

    # -- engine events --------------------------------------------------------------------

    def apply(self, event: Event) -> None:
        """Fold one engine event into the state: each event type has its handler (a new event
        type without one fails here, loudly, rather than being dropped)."""
        handler = self._handlers().get(event.type)
        if handler is None:
            raise TypeError(f"the turn state has no handler for {event.type!r} events")
        handler(event)

    def _handlers(self) -> dict[str, Callable[[Any], None]]:
        return {
            "turn_started": self._on_started,
            "text": self._on_text,
            "tool_call": self._on_tool_call,
            "permission_request": self._on_permission_request,
            "permission_decision": self._on_decision,
            "tool_result": self._on_tool_result,
            "steer": self._on_steer,
            "usage": self._on_usage,
            "compaction": self._on_compaction,
            "plan": self._on_plan,
            "error": lambda event: None,  # the failure itself is shown from turn_done's error
            "notice": self._on_notice,
            "progress": self._on_progress,
            "turn_done": self._on_done,
            "model_switch": self._on_model_switch,
            "subagent": self._on_subagent,
        }

    def _on_model_switch(self, event: ModelSwitchEvent) -> None:
        self.switches.append(switch_note(event))  # the footer says it
        self.dirty.add("footer")

    def _on_progress(self, event: ProgressEvent) -> None:
        self.progress = event.message
        self.dirty.add("footer")

    def _on_started(self, event: TurnStarted) -> None:
        self.progress = ""
        self.model, self.agent, self.turn_index = event.model, event.agent, event.turn_index
        self.session, self.prompt = event.session, event.prompt
        self.attachments = [
            {"kind": a.kind, "name": a.name, "size": a.size, "label": attachment_label(a.kind, a.name, a.size)}
            for a in event.attachments
        ]
        self.dirty.update(("header", "footer"))

    def _on_text(self, event: TextEvent) -> None:
        if event.repeat or not event.delta:
            self._close_step(exact=event.text)
        elif event.thought:
            self.live_thought += event.text
        else:
            self.live_text += event.text
        self.dirty.add("live")

    def _close_step(self, exact: str | None = None) -> None:
        """A step's text is complete: its thought and text become items (the exact text
        when the engine repeated it)."""
        if self.live_thought:
            self._add({"kind": "thought", "text": self.live_thought})
        text = exact if exact is not None else self.live_text
        if text:
            self._add({"kind": "text", "text": text})
        if self.live_text or self.live_thought:
            self.dirty.add("live")
        self.live_text = self.live_thought = ""

    def _on_tool_call(self, event: ToolCallEvent) -> None:
        if self.live_text or self.live_thought:
            self._close_step()
        if all(self._tools[call_id]["status"] not in OPEN_STATUSES for call_id in self._batch):
            self._batch = []  # a new model response: the previous batch has finished
        item = new_tool(event)
        self._tools[event.id] = item
        self._batch.append(event.id)
        self._add(item)

    def _on_subagent(self, event: SubagentEvent) -> None:
        """A sub-agent's event: folded into the card of the `invoke_agent` call that
        started it (nested.py); its permission requests are answered in the turn's own card,
        saying which agent asks. The call that started it stays running meanwhile."""
        assert self._subagents is not None
        path, agent, inner, changed = self._subagents.apply(event)
        if isinstance(inner, PermissionRequest):
            self._on_permission_request(inner, agent=agent, scope=path)
        elif isinstance(inner, PermissionDecision):
            self._decide_pending(inner.call_id, inner.decision, path)
        elif isinstance(inner, NoticeEvent):
            self.add_notice(f"{agent}: {inner.message}")
        if changed:
            self.dirty.add("items")

    def _on_permission_request(self, event: PermissionRequest, agent: str | None = None, scope: Path = ()) -> None:
        asked = {call.id for call in event.calls}
        for call_id in self._batch if not scope else ():
            tool = self._tools[call_id]
            if tool["status"] == "running":
                tool["status"] = "waiting" if call_id in asked else "queued"
        calls: list[PendingCallEntry] = [
            {
                "id": c.id,
                "name": c.name,
                "args": c.args,
                "decision": None,
                "reason": c.reason,
                "preview": c.preview,
                "preview_kind": (c.presentation.preview_kind or "text") if c.preview else "",
            }
            for c in event.calls
        ]
        request: PendingRequest = {"request_id": event.request_id, "calls": calls, "agent": agent, "scope": list(scope)}
        if self.pending is None:
            self.pending = request
        else:
            self.waiting_requests.append(request)
        self.dirty.update(("items", "pending"))

    def _on_decision(self, event: PermissionDecision) -> None:
        tool = self._tools.get(event.call_id)
        if tool is not None:
            tool["decision"] = event.decision
            tool["status"] = "denied" if event.decision == "deny" else "queued"
        if self._decide_pending(event.call_id, event.decision, ()):
            for call_id in self._batch:  # the batch runs once every call has its answer
                queued = self._tools[call_id]
                if queued["status"] == "queued":
                    queued["status"], queued["started_ms"] = "running", _now_ms()
        self.dirty.update(("items", "pending"))

    def _decide_pending(self, call_id: str, decision: Verdict, scope: Path) -> bool:
        """Record a decision on the open request of `scope`; True when that request is then
        fully answered (and so taken off the card)."""
        for request in self._open_requests():
            if tuple(request["scope"]) != scope or call_id not in {c["id"] for c in request["calls"]}:
                continue
            for call in request["calls"]:
                if call["id"] == call_id:
                    call["decision"] = decision
            self.dirty.add("pending")
            if all(call["decision"] for call in request["calls"]):
                self.close_request(request["request_id"])
                return True
            return False
        return False

    def _open_requests(self) -> list[PendingRequest]:
        return ([self.pending] if self.pending is not None else []) + self.waiting_requests

    def close_request(self, request_id: str) -> None:
        """One request is answered or withdrawn: the next waiting one (if any) takes the card."""
        if self.pending is not None and self.pending["request_id"] == request_id:
            self.pending = self.waiting_requests.pop(0) if self.waiting_requests else None
            self.dirty.add("pending")
        else:
            self.waiting_requests = [r for r in self.waiting_requests if r["request_id"] != request_id]

    def clear_pending(self) -> None:
        """Every request is answered or gone (the turn was stopped): no buttons stay up."""
        self.waiting_requests = []
        if self.pending is not None:
            self.pending = None
            self.dirty.add("pending")

    def add_notice(self, text: str) -> None:
        """A warning the widget shows (each once), one a line."""
        if text and text not in self.notices:
            self.notices.append(text)
            self.notice = "\n".join(self.notices)
            self.dirty.add("notice")

    def _on_tool_result(self, event: ToolResultEvent) -> None:
        tool = self._tools.get(event.id)
        if tool is None:
            return
        tool["status"] = FINAL_STATUS[event.status]
        tool["preview"], tool["error"], tool["ended_ms"] = event.preview, event.error, _now_ms()
        tool["images"], tool["images_omitted"] = len(event.images), event.images_omitted
        if event.images:
            self.images[event.id] = [{"media_type": i.media_type, "data": i.data_base64} for i in event.images]
            self.dirty.add("images")
        self.dirty.add("items")

    def _on_steer(self, event: SteerEvent) -> None:
        tool = self._tools.get(event.call_id)
        where = tool["name"] if tool else "a tool result"
        self._mark_steers(event.count, "delivered", f"with {where}", oldest=True)

    def _mark_steers(self, count: int, status: SteerStatus, detail: str, *, oldest: bool) -> None:
        queued = [s for s in self.steers if s["status"] == "queued"]
        chosen = queued[:count] if oldest else queued[len(queued) - count :] if count else []
        for steer in chosen:
            steer["status"], steer["detail"] = status, detail
        if chosen:
            self.dirty.add("steers")

    def _on_usage(self, event: UsageEvent) -> None:
        self.usage.add(event.usage, event.cost_usd, event.saved_usd)
        self.dirty.add("footer")

    def _on_compaction(self, event: CompactionEvent) -> None:
        self._add(
            {
                "kind": "compaction",
                "covered_events": event.covered_events,
                "tokens_before": event.tokens_before,
                "tokens_after": event.tokens_after,
                "line": compaction_line(event.covered_events),
            }
        )

    def _on_plan(self, event: PlanEvent) -> None:
        self.close_review()
        self._add(
            {
                "kind": "plan",
                "plan": event.plan,
                "status": event.status,
                "reason": event.reason,
                "heading": plan_heading(event.status),
            }
        )

    def _on_notice(self, event: NoticeEvent) -> None:
        if event.kind == "force_stop":  # the graceful stop ran past its grace
            self.set_stopping("force")
        self.add_notice(event.message)

    def _on_done(self, event: TurnDone) -> None:
        self.done_seen = True
        self._close_step()
        for tool in self._tools.values():
            if tool["status"] in OPEN_STATUSES:
                tool["status"], tool["ended_ms"] = "cancelled", _now_ms()
        self.clear_pending()
        self.close_review()
        self.usage = event.usage.model_copy()
        self.stop_reason, self.error = event.stop_reason, event.error
        self.not_saved = event.not_saved
        if event.not_saved:
            self.add_notice(f"session not saved: {event.not_saved}")
        self.undoable = event.undoable
        self.context_used, self.context_window = event.context_used, event.context_window
        if event.error:
            self._add({"kind": "error", "message": event.error})
        self._mark_steers(len(event.leftovers), "next_prompt", "sent as the next prompt", oldest=False)
        self.elapsed_s = (_now_ms() - self.started_ms) / 1000.0
        self.dirty.update(("items", "footer"))

    # -- what the user did ----------------------------------------------------------------

    def add_steer(self, text: str, status: SteerStatus = "queued", detail: str = "") -> None:
        self.steers.append({"id": len(self.steers), "text": text, "status": status, "detail": detail})
        self.dirty.add("steers")

    def drop_queued_steers(self, reason: str) -> None:
        self._mark_steers(len(self.steers), "dropped", reason, oldest=True)

    def follow_up(self, result: TurnResult, late_steers: Sequence[str] = ()) -> list[str]:
        """Steer messages to send as the next prompt: the leftovers of a turn that
        ended normally and those that came too late; after any other end, none (and the ones
        shown as "sent as the next prompt" say they were dropped)."""
        if result.stop_reason == "end_turn":
            return [*result.leftovers, *late_steers]
        for steer in self.steers:
            if steer["status"] == "next_prompt":
                steer["status"], steer["detail"] = "dropped", "dropped: the turn did not end normally"
        self.dirty.add("steers")
        return []

    def add_aside(self, question: str) -> int:
        self.asides.append(
            {"id": len(self.asides), "question": question, "status": "thinking", "answer": "", "error": None}
        )
        self.dirty.add("asides")
        return len(self.asides) - 1

    def set_aside(self, aside_id: int, status: AsideStatus, answer: str = "", error: str | None = None) -> None:
        aside = self.asides[aside_id]
        aside["status"], aside["answer"], aside["error"] = status, answer, error
        self.dirty.add("asides")

    def stream_aside(self, aside_id: int, answer: str) -> None:
        """The answer so far of an aside still being answered."""
        self.asides[aside_id]["answer"] = answer
        self.dirty.add("asides")

    def set_phase(self, phase: Phase) -> None:
        self.phase = phase
        self.dirty.add("phase")

    def set_stopping(self, how: str) -> None:
        self.stopping = how
        self.dirty.add("stopping")

    def open_review(self, review_id: int, plan: str) -> None:
        """A plan waits for the user; exit_plan_mode's card says so meanwhile."""
        self.review = {"review_id": review_id, "plan": plan}
        for tool in self._tools.values():
            if tool["presentation"]["plan_review"] and tool["status"] == "running":
                tool["status"] = "waiting"
        self.dirty.update(("review", "items"))

    def close_review(self) -> None:
        """The plan was answered, or the turn is over: the buttons go away."""
        if self.review:
            self.review = {}
            self.dirty.add("review")
        for tool in self._tools.values():
            if tool["presentation"]["plan_review"] and tool["status"] == "waiting":
                tool["status"] = "running"
                self.dirty.add("items")

    def set_offer(self, offer_id: int | None, steps: int = 0) -> None:
        """Offer (or withdraw, with None) Continue for `steps` more steps."""
        self.offer = (
            {
                "offer_id": offer_id,
                "steps": steps,
                "line": f"Stopped at the step limit. Continue runs up to {steps} more steps in this turn.",
            }
            if offer_id is not None
            else {}
        )
        self.dirty.add("offer")

    def decide_call(self, request_id: str, call_id: str, decision: Verdict) -> None:
        """Show a click at once, before the engine's decision event confirms it."""
        for request in self._open_requests():
            if request["request_id"] != request_id:
                continue
            for call in request["calls"]:
                if call["id"] == call_id:
                    call["decision"] = decision
                    self.dirty.add("pending")

    # -- what the front end is sent --------------------------------------------------------

    def synced_value(self, name: str) -> Any:
        """The JSON value of one synced field; fresh containers, so traitlets sees a change."""
        if name == "header":
            return {
                "prompt": self.prompt,
                "label": self.label,
                "session": self.session,
                "model": self.model,
                "agent": self.agent,
                "turn_index": self.turn_index,
                "started_ms": self.started_ms,
                "attachments": [dict(chip) for chip in self.attachments],
            }
        if name == "items":
            return [fresh_item(item) for item in self.items]
        if name == "live":
            return {"text": self.live_text, "thought": self.live_thought}
        if name == "pending":
            if self.pending is None:
                return {}
            return {
                **self.pending,
                "calls": [dict(call) for call in self.pending["calls"]],
                "waiting": len(self.waiting_requests),
            }
        if name in ("review", "offer"):
            return dict(getattr(self, name))
        if name in ("steers", "asides"):
            return [dict(entry) for entry in getattr(self, name)]
        if name == "footer":
            return self.footer()
        if name == "images":
            return {call_id: [dict(image) for image in images] for call_id, images in self.images.items()}
        return getattr(self, name)

    def footer(self) -> dict[str, Any]:
        usage = self.usage
        return {
            "model": self.model,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens,
            "calls": usage.calls,
            "cost": usage.describe_cost(),
            "saving": usage.describe_saving(),
            "priced": usage.priced,
            "elapsed_s": self.elapsed_s,
            "stop_reason": self.stop_reason,
            "progress": self.progress,
            "switches": list(self.switches),
            "context": context_fill(self.context_used, self.context_window),
        }

    def take_dirty(self) -> dict[str, Any]:
        """The changed fields' values, and forget that they changed."""
        changed = {name: self.synced_value(name) for name in SYNCED if name in self.dirty}
        self.dirty.clear()
        return changed

    def tool_items(self) -> list[ToolItem]:
        return [item for item in self.items if item["kind"] == "tool"]

    def tool(self, call_id: str) -> ToolItem | None:
        """The card of one call (None for a call this state never saw)."""
        return self._tools.get(call_id)

    def _add(self, item: Item) -> None:
        self.items.append(item)
        self.dirty.add("items")


def fresh_item(item: Item) -> Item:
    """A copy of `item` sharing no list that changes later: a sub-agent's cards grow inside
    their card's `nested` list, and a value that shares it with the one sent before compares
    equal to it, so traitlets would send nothing."""
    copied: dict[str, Any] = dict(item)
    nested = copied.get("nested")
    if nested is not None:  # an empty one too: the next call is appended to it
        copied["nested"] = [fresh_item(child) for child in nested]
    return copied  # type: ignore[return-value]
