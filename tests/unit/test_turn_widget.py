"""The turn widget without a kernel: state folding, coalesced sync, message parsing, and the
static rendering with its record."""

from __future__ import annotations

import asyncio
from typing import Any

from blitz_kernel.core.usage import TokenUsage, UsageTotals
from blitz_kernel.engine.events import (
    PendingCall,
    PermissionDecision,
    PermissionRequest,
    SteerEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
    UsageEvent,
)
from blitz_kernel.notebook.widgets.state import TurnState
from blitz_kernel.notebook.widgets.static import code_span, static_bundle, turn_record
from blitz_kernel.notebook.widgets.sync import WidgetSync
from blitz_kernel.notebook.widgets.view import DecideMessage, TurnView, parse_message


def played(*events: Any) -> TurnState:
    state = TurnState(turn_id="t1", prompt="", session="")
    for event in events:
        state.apply(event)
    return state


START = TurnStarted(session="s", turn_index=0, prompt="Write it.", agent="blitz", model="m")
ASK = PermissionRequest(request_id="perm-1", calls=[PendingCall(id="c1", name="write_file", args={"path": "a"})])


def test_a_turn_folds_into_items_with_live_statuses():
    state = played(
        START,
        TextEvent(text="Let me ", delta=True), TextEvent(text="write.", delta=True),
        TextEvent(text="Let me write.", repeat=True),
        ToolCallEvent(id="c1", name="write_file", args={"path": "a"}),
        ToolCallEvent(id="c2", name="read_file", args={"path": "b"}),
        ASK,
    )
    assert [i["kind"] for i in state.items] == ["text", "tool", "tool"]
    assert state.items[0]["text"] == "Let me write."
    assert [t["status"] for t in state.tool_items()] == ["waiting", "queued"]
    assert state.synced_value("pending")["calls"][0]["decision"] is None
    state.add_steer("use pandas")
    for event in (
        PermissionDecision(call_id="c1", decision="allow"),
        ToolResultEvent(id="c1", name="write_file", ok=True, preview="wrote a"),
        ToolResultEvent(id="c2", name="read_file", ok=False, error="no such file"),
        SteerEvent(count=1, call_id="c2"),
        UsageEvent(model="m", usage=TokenUsage(input_tokens=5, output_tokens=2), cost_usd=None),
        TextEvent(text="Done.", repeat=True),
        TurnDone(stop_reason="end_turn", usage=UsageTotals(input_tokens=5, output_tokens=2, calls=1, priced=False)),
    ):
        state.apply(event)
    assert state.pending == {}
    assert [t["status"] for t in state.tool_items()] == ["done", "error"]
    assert state.steers[0]["status"] == "delivered" and state.steers[0]["detail"] == "with read_file"
    assert state.footer()["cost"] == "unpriced" and state.stop_reason == "end_turn"


def test_denied_and_cancelled_calls_and_leftover_steers():
    state = played(START, ToolCallEvent(id="c1", name="write_file", args={}), ASK)
    state.add_steer("first")
    state.add_steer("second")
    state.apply(PermissionDecision(call_id="c1", decision="deny", reason="no"))
    state.apply(ToolResultEvent(id="c1", name="write_file", ok=False, error="write_file was denied: no"))
    state.apply(ToolCallEvent(id="c2", name="run_python", args={}))
    state.apply(TurnDone(stop_reason="end_turn", usage=UsageTotals(), leftovers=["second"]))
    assert [t["status"] for t in state.tool_items()] == ["denied", "cancelled"]
    assert [s["status"] for s in state.steers] == ["queued", "next_prompt"]


def test_sync_sends_at_most_one_message_per_interval_and_the_last_state_exactly():
    async def scenario() -> tuple[TurnView, WidgetSync, list[dict[str, Any]]]:
        state = TurnState(turn_id="t1", prompt="p", session="s")
        view = TurnView("t1", lambda message: None)
        sent: list[dict[str, Any]] = []
        view.send_state = lambda key=None: sent.append(view.get_state(key))  # type: ignore[method-assign]
        sync = WidgetSync(view, state, interval=0.05)
        for index in range(200):
            state.apply(TextEvent(text=f"w{index} ", delta=True))
            sync.changed()
        await asyncio.sleep(0.08)  # let the one armed timer fire
        state.apply(TextEvent(text="exact", repeat=True))
        sync.flush()
        return view, sync, sent

    view, sync, sent = asyncio.run(scenario())
    assert sync.messages == 3  # the first change, one timed flush for the other 199, the final
    assert len(sent) == 3
    assert view.items[-1] == {"kind": "text", "text": "exact"}
    assert view.live == {"text": "", "thought": ""}


def test_messages_for_another_turn_or_malformed_are_dropped():
    received: list[Any] = []
    view = TurnView("t1", received.append)
    decide = {"kind": "decide", "turn_id": "t1", "request_id": "perm-1", "call_id": "c1", "decision": "deny", "reason": "x"}
    view._receive(view, {**decide, "turn_id": "t0"}, [])
    view._receive(view, {**decide, "decision": "perhaps"}, [])
    view._receive(view, {"kind": "launch", "turn_id": "t1"}, [])
    view._receive(view, "not even a dict", [])
    assert received == []
    view._receive(view, decide, [])
    assert received == [DecideMessage(**decide)]
    assert parse_message({"kind": "steer", "turn_id": "t1", "text": ""}) is None


def test_static_rendering_and_record():
    state = played(
        START,
        ToolCallEvent(id="c1", name="write_file", args={"path": "a", "content": "x" * 5000}),
        ToolResultEvent(id="c1", name="write_file", ok=True, preview="created a"),
        TextEvent(text="Wrote `a`.", repeat=True),
        TurnDone(stop_reason="end_turn", usage=UsageTotals(input_tokens=3, output_tokens=1, calls=1)),
    )
    data, metadata = static_bundle(state, "Wrote `a`.")
    assert data["text/markdown"].startswith("- `⚙ write_file(path=\"a\", content=\"xxx")
    assert "\n\nWrote `a`.\n\n<sub>— m · 3 in · 1 out · 1 call · $0.0000" in data["text/markdown"]
    assert data["text/plain"].splitlines()[1] == "Wrote `a`."
    record = metadata["blitz"]
    assert record == turn_record(state, "Wrote `a`.")
    assert record["prompt"] == "Write it." and record["text"] == "Wrote `a`." and record["stop_reason"] == "end_turn"
    assert len(record["tool_calls"][0]["args"]["content"]) == 2000  # shortened, not the whole file
    assert record["tool_calls"][0]["result"] == "created a"


def test_code_span_survives_backticks():
    assert code_span("plain") == "`plain`"
    assert code_span("a `b` c") == "``a `b` c``"
    assert code_span("`edge`") == "`` `edge` ``"
