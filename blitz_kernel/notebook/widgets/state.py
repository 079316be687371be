"""The state of one turn as the widget shows it, built from the engine's events.

Kept apart from the widget so that it can be tested and benchmarked without a kernel, and so
that the static rendering left in the notebook is made from the very state the widget showed.
Every field that the front end sees is a plain JSON value; `dirty` names the synced fields that
changed since the last flush, so a flush sends only those.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from ...core.usage import UsageTotals
from ...engine.events import (
    CompactionEvent,
    ErrorEvent,
    PermissionDecision,
    PermissionRequest,
    PlanEvent,
    SteerEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
    UsageEvent,
)

ToolStatus = Literal["queued", "waiting", "running", "done", "error", "denied", "cancelled"]
SteerStatus = Literal["queued", "delivered", "next_prompt", "dropped"]
AsideStatus = Literal["thinking", "answered", "failed", "cancelled"]
Phase = Literal["running", "finishing", "done"]

SYNCED = (
    "header", "items", "live", "pending", "review", "steers", "asides", "footer", "phase", "stopping", "notice",
    "images",
)
"""The fields the widget mirrors as traits (same names)."""

OPEN_STATUSES = ("queued", "waiting", "running")
CANCELLED_PREFIX = "cancelled:"
"""How the loop words the result of a call that the stop cut short (loop.CANCELLED_RESULT)."""


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
    items: list[dict[str, Any]] = field(default_factory=list)
    """Finished blocks in order: text, thought, tool, plan, compaction, error."""
    live_text: str = ""
    live_thought: str = ""
    pending: dict[str, Any] = field(default_factory=dict)
    """The open permission request ({} when none): request_id and its calls with decisions."""
    review: dict[str, Any] = field(default_factory=dict)
    """The plan waiting for Approve plan / Reject ({} when none): review_id and the plan."""
    steers: list[dict[str, Any]] = field(default_factory=list)
    asides: list[dict[str, Any]] = field(default_factory=list)
    images: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    """Images tools showed, by call id: [{media_type, data (base64)}]. Apart from `items` on
    purpose: `items` is sent whole whenever a card changes, images only when one arrives."""
    usage: UsageTotals = field(default_factory=UsageTotals)
    phase: Phase = "running"
    stopping: str = ""
    """"" | "graceful" | "force": what the Stop button asked for."""
    notice: str = ""
    stop_reason: str = ""
    error: str | None = None
    elapsed_s: float | None = None
    done_seen: bool = False
    dirty: set[str] = field(default_factory=lambda: set(SYNCED))
    _tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    _batch: list[str] = field(default_factory=list)
    """Ids of the tool calls of the current model response."""

    # -- engine events --------------------------------------------------------------------

    def apply(self, event: Any) -> None:
        """Fold one engine event into the state."""
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _on_started(self, event: TurnStarted) -> None:
        self.model, self.agent, self.turn_index = event.model, event.agent, event.turn_index
        self.session, self.prompt = event.session, event.prompt
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
        when the engine repeated it, ENG-13)."""
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
        item = {
            "kind": "tool", "id": event.id, "name": event.name, "args": event.args,
            "status": "running", "started_ms": _now_ms(), "ended_ms": None,
            "preview": "", "error": None, "decision": None, "images": 0, "images_omitted": 0,
        }
        self._tools[event.id] = item
        self._batch.append(event.id)
        self._add(item)

    def _on_permission_request(self, event: PermissionRequest) -> None:
        asked = {call.id for call in event.calls}
        for call_id in self._batch:
            tool = self._tools[call_id]
            if tool["status"] == "running":
                tool["status"] = "waiting" if call_id in asked else "queued"
        self.pending = {
            "request_id": event.request_id,
            "calls": [{"id": c.id, "name": c.name, "args": c.args, "decision": None} for c in event.calls],
        }
        self.dirty.update(("items", "pending"))

    def _on_decision(self, event: PermissionDecision) -> None:
        tool = self._tools.get(event.call_id)
        if tool is not None:
            tool["decision"] = event.decision
            tool["status"] = "denied" if event.decision == "deny" else "queued"
        calls = self.pending.get("calls", [])
        for call in calls:
            if call["id"] == event.call_id:
                call["decision"] = event.decision
        if all(call["decision"] for call in calls):
            self.clear_pending()
            for call_id in self._batch:  # the batch runs once every call has its answer
                queued = self._tools[call_id]
                if queued["status"] == "queued":
                    queued["status"], queued["started_ms"] = "running", _now_ms()
        self.dirty.update(("items", "pending"))

    def clear_pending(self) -> None:
        """The request is answered or gone (the turn was stopped): no buttons stay up."""
        if self.pending:
            self.pending = {}
            self.dirty.add("pending")

    def _on_tool_result(self, event: ToolResultEvent) -> None:
        tool = self._tools.get(event.id)
        if tool is None:
            return
        if event.ok:
            tool["status"] = "done"
        elif tool["status"] == "denied" or tool["decision"] == "deny":
            tool["status"] = "denied"
        elif (event.error or "").startswith(CANCELLED_PREFIX):
            tool["status"] = "cancelled"
        else:
            tool["status"] = "error"
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
        self.usage.add(event.usage, event.cost_usd)
        self.dirty.add("footer")

    def _on_compaction(self, event: CompactionEvent) -> None:
        self._add({"kind": "compaction", "covered_events": event.covered_events,
                   "tokens_before": event.tokens_before, "tokens_after": event.tokens_after})

    def _on_plan(self, event: PlanEvent) -> None:
        self.close_review()
        self._add({"kind": "plan", "plan": event.plan, "status": event.status, "reason": event.reason})

    def _on_error(self, event: ErrorEvent) -> None:
        if event.kind == "unpriced":
            self.notice = event.message
            self.dirty.add("notice")
        elif event.kind == "mcp":  # an MCP server that could not be used this turn
            self._add({"kind": "error", "message": event.message})

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

    def add_aside(self, question: str) -> int:
        self.asides.append({"id": len(self.asides), "question": question, "status": "thinking",
                            "answer": "", "error": None})
        self.dirty.add("asides")
        return len(self.asides) - 1

    def set_aside(self, aside_id: int, status: AsideStatus, answer: str = "", error: str | None = None) -> None:
        self.asides[aside_id].update(status=status, answer=answer, error=error)
        self.dirty.add("asides")

    def set_phase(self, phase: Phase) -> None:
        self.phase = phase
        self.dirty.add("phase")

    def set_stopping(self, how: str) -> None:
        self.stopping = how
        self.dirty.add("stopping")

    def open_review(self, review_id: int, plan: str) -> None:
        """ENG-32: a plan waits for the user; exit_plan_mode's card says so meanwhile."""
        self.review = {"review_id": review_id, "plan": plan}
        for tool in self._tools.values():
            if tool["name"] == "exit_plan_mode" and tool["status"] == "running":
                tool["status"] = "waiting"
        self.dirty.update(("review", "items"))

    def close_review(self) -> None:
        """The plan was answered, or the turn is over: the buttons go away."""
        if self.review:
            self.review = {}
            self.dirty.add("review")
        for tool in self._tools.values():
            if tool["name"] == "exit_plan_mode" and tool["status"] == "waiting":
                tool["status"] = "running"
                self.dirty.add("items")

    def decide_call(self, call_id: str, decision: str) -> None:
        """Show a click at once, before the engine's decision event confirms it."""
        for call in self.pending.get("calls", []):
            if call["id"] == call_id:
                call["decision"] = decision
                self.dirty.add("pending")

    # -- what the front end is sent --------------------------------------------------------

    def synced_value(self, name: str) -> Any:
        """The JSON value of one synced field; fresh containers, so traitlets sees a change."""
        if name == "header":
            return {"prompt": self.prompt, "label": self.label, "session": self.session, "model": self.model,
                    "agent": self.agent, "turn_index": self.turn_index, "started_ms": self.started_ms}
        if name == "items":
            return [dict(item) for item in self.items]
        if name == "live":
            return {"text": self.live_text, "thought": self.live_thought}
        if name == "pending":
            if not self.pending:
                return {}
            return {"request_id": self.pending["request_id"],
                    "calls": [dict(call) for call in self.pending["calls"]]}
        if name == "review":
            return dict(self.review)
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
            "model": self.model, "input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens, "calls": usage.calls,
            "cost": usage.describe_cost(), "priced": usage.priced,
            "elapsed_s": self.elapsed_s, "stop_reason": self.stop_reason,
        }

    def take_dirty(self) -> dict[str, Any]:
        """The changed fields' values, and forget that they changed."""
        changed = {name: self.synced_value(name) for name in SYNCED if name in self.dirty}
        self.dirty.clear()
        return changed

    def tool_items(self) -> list[dict[str, Any]]:
        return [item for item in self.items if item["kind"] == "tool"]

    def _add(self, item: dict[str, Any]) -> None:
        self.items.append(item)
        self.dirty.add("items")


_HANDLERS: dict[type, Any] = {
    TurnStarted: TurnState._on_started,
    TextEvent: TurnState._on_text,
    ToolCallEvent: TurnState._on_tool_call,
    PermissionRequest: TurnState._on_permission_request,
    PermissionDecision: TurnState._on_decision,
    ToolResultEvent: TurnState._on_tool_result,
    SteerEvent: TurnState._on_steer,
    UsageEvent: TurnState._on_usage,
    CompactionEvent: TurnState._on_compaction,
    PlanEvent: TurnState._on_plan,
    ErrorEvent: TurnState._on_error,
    TurnDone: TurnState._on_done,
}
