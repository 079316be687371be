"""The turn widget without a kernel: state folding, coalesced sync, message parsing, and the
static rendering with its record."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from blitz_kernel.core.history import ImagePart
from blitz_kernel.core.usage import TokenUsage, UsageTotals
from blitz_kernel.engine.events import (
    PendingCall,
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
from blitz_kernel.notebook.widgets.controller import TurnController
from blitz_kernel.notebook.widgets.state import TurnState
from blitz_kernel.notebook.widgets.static import (
    code_span,
    static_bundle,
    static_images,
    turn_record,
)
from blitz_kernel.notebook.widgets.sync import WidgetSync
from blitz_kernel.notebook.widgets.view import AsideMessage, DecideMessage, TurnView, parse_message
from blitz_kernel.tools.workflow import exit_plan_mode

from .conftest import ConcurrencyProbe, call, tool_step
from .front_end_fakes import FakeClock


def played(*events: Any) -> TurnState:
    state = TurnState(turn_id="t1", prompt="", session="")
    for event in events:
        state.apply(event)
    return state


START = TurnStarted(session="s", turn_index=0, prompt="Write it.", agent="blitz", model="m")
PLAN_REVIEW = exit_plan_mode.presentation
"""How exit_plan_mode asks to be shown, as the engine puts it in its events."""
ASK = PermissionRequest(request_id="perm-1", calls=[PendingCall(id="c1", name="write_file", args={"path": "a"})])


def test_a_turn_folds_into_items_with_live_statuses():
    state = played(
        START,
        TextEvent(text="Let me ", delta=True),
        TextEvent(text="write.", delta=True),
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
        ToolResultEvent(id="c2", name="read_file", ok=False, status="error", error="no such file"),
        SteerEvent(count=1, call_id="c2"),
        UsageEvent(model="m", usage=TokenUsage(input_tokens=5, output_tokens=2), cost_usd=None),
        TextEvent(text="Done.", repeat=True),
        TurnDone(stop_reason="end_turn", usage=UsageTotals(input_tokens=5, output_tokens=2, calls=1, priced=False)),
    ):
        state.apply(event)
    assert state.pending is None
    assert [t["status"] for t in state.tool_items()] == ["done", "error"]
    assert state.steers[0]["status"] == "delivered" and state.steers[0]["detail"] == "with read_file"
    assert state.footer()["cost"] == "unpriced" and state.stop_reason == "end_turn"


def test_denied_and_cancelled_calls_and_leftover_steers():
    state = played(START, ToolCallEvent(id="c1", name="write_file", args={}), ASK)
    state.add_steer("first")
    state.add_steer("second")
    state.apply(PermissionDecision(call_id="c1", decision="deny", reason="no"))
    state.apply(
        ToolResultEvent(id="c1", name="write_file", ok=False, status="denied", error="write_file was denied: no")
    )
    state.apply(ToolCallEvent(id="c2", name="run_python", args={}))
    state.apply(TurnDone(stop_reason="end_turn", usage=UsageTotals(), leftovers=["second"]))
    assert [t["status"] for t in state.tool_items()] == ["denied", "cancelled"]
    assert [s["status"] for s in state.steers] == ["queued", "next_prompt"]


def test_sync_sends_at_most_one_message_per_interval_and_the_last_state_exactly():
    clock = FakeClock()
    state = TurnState(turn_id="t1", prompt="p", session="s")
    view = TurnView("t1", lambda message: None)
    sent: list[dict[str, Any]] = []
    view.send_state = lambda key=None: sent.append(view.get_state(key))  # type: ignore[method-assign]
    sync = WidgetSync(view, state, interval=0.05, clock=clock.now, call_later=clock.call_later)
    for index in range(200):
        state.apply(TextEvent(text=f"w{index} ", delta=True))
        clock.advance(0.0001)
        sync.changed()
    assert sync.messages == 1 and [delay for delay, _ in clock.armed] == [pytest.approx(0.05 - 0.0001)]
    clock.advance(0.05)
    clock.fire()  # the one armed timer sends the other 199 changes
    assert sync.messages == 2 and view.live["text"].endswith("w199 ")
    state.apply(TextEvent(text="exact", repeat=True))
    sync.flush()
    assert sync.messages == 3  # the first change, one timed flush for the other 199, the final
    assert len(sent) == 3
    assert view.items[-1] == {"kind": "text", "text": "exact"}
    assert view.live == {"text": "", "thought": ""}


def test_messages_for_another_turn_or_malformed_are_dropped():
    received: list[Any] = []
    view = TurnView("t1", received.append)
    decide = {
        "kind": "decide",
        "turn_id": "t1",
        "request_id": "perm-1",
        "call_id": "c1",
        "decision": "deny",
        "reason": "x",
    }
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
    assert data["text/markdown"].startswith('<details><summary><code>⚙ write_file(path="a", content="xxx')
    assert "\n\nWrote `a`.\n\n<sub>— m · 3 in · 1 out · 1 call · $0.0000" in data["text/markdown"]
    assert data["text/plain"].splitlines()[1] == "Wrote `a`."
    record = metadata["blitz"]
    assert record == turn_record(state, "Wrote `a`.")
    assert record["prompt"] == "Write it." and record["text"] == "Wrote `a`." and record["stop_reason"] == "end_turn"
    assert len(record["tool_calls"][0]["args"]["content"]) == 2000  # shortened, not the whole file
    assert record["tool_calls"][0]["result"] == "created a"


def test_a_tools_images_go_in_its_card_apart_from_items_and_into_the_static_rendering():
    png = ImagePart(data_base64="iVBORw0KGgo=")
    state = played(START, ToolCallEvent(id="c1", name="run_python", args={"code": "plot()"}))
    state.take_dirty()
    state.apply(
        ToolResultEvent(id="c1", name="run_python", ok=True, preview="figures: fig-1", images=[png], images_omitted=2)
    )
    changed = state.take_dirty()
    assert changed["images"] == {"c1": [{"media_type": "image/png", "data": "iVBORw0KGgo="}]}
    [tool] = changed["items"]
    assert (tool["images"], tool["images_omitted"]) == (1, 2) and "iVBOR" not in str(tool)
    state.apply(TextEvent(text="A plot.", repeat=True))
    assert "images" not in state.take_dirty()  # images are sent once, not with every card change
    state.apply(TurnDone(stop_reason="end_turn", usage=UsageTotals()))
    data, metadata = static_bundle(state, "A plot.")
    assert "→ ✓ [1 image below, 2 more not shown] figures: fig-1" in data["text/markdown"]
    assert metadata["blitz"]["tool_calls"][0]["images"] == 1
    assert static_images(state) == [{"image/png": "iVBORw0KGgo=", "text/plain": "<image 1 of 1 from run_python>"}]


def test_code_span_survives_backticks():
    assert code_span("plain") == "`plain`"
    assert code_span("a `b` c") == "``a `b` c``"
    assert code_span("`edge`") == "`` `edge` ``"
    assert code_span("f(<x>)") == "<code>f\\(&lt;x&gt;\\)</code>"  # no raw `<`, whatever the renderer


def test_a_reviewed_plan_shows_once_and_a_carry_out_turn_says_what_it_is():
    plan = "1. Edit <it>\n2. Check `a<b`"
    state = played(START, ToolCallEvent(id="p1", name="exit_plan_mode", args={"plan": plan}, presentation=PLAN_REVIEW))
    state.label = "Carrying out the approved plan"
    state.open_review(1, plan)
    assert state.synced_value("review") == {"review_id": 1, "plan": plan}
    assert state.tool_items()[0]["status"] == "waiting"
    state.apply(PlanEvent(plan=plan, status="approved"))
    assert state.review == {} and state.tool_items()[0]["status"] == "running"
    state.apply(ToolResultEvent(id="p1", name="exit_plan_mode", ok=True, preview="approved"))
    state.apply(TurnDone(stop_reason="end_turn", usage=UsageTotals()))
    data, metadata = static_bundle(state, plan)
    markdown = data["text/markdown"]
    assert markdown.startswith("*Carrying out the approved plan*\n\n**Proposed plan — approved**")  # no tool line
    assert markdown.count("1. Edit &lt;it>\n2. Check <code>a&lt;b</code>") == 1  # the answer is the plan: once
    assert "**Proposed plan — approved**" in markdown and "<it>" not in markdown
    assert state.synced_value("header")["label"] == "Carrying out the approved plan"
    assert metadata["blitz"]["text"] == plan


def test_a_review_that_ends_with_the_turn_takes_its_buttons_away():
    state = played(START, ToolCallEvent(id="p1", name="exit_plan_mode", args={"plan": "p"}, presentation=PLAN_REVIEW))
    state.open_review(1, "p")
    state.apply(TurnDone(stop_reason="cancelled", usage=UsageTotals()))
    assert state.review == {} and state.tool_items()[0]["status"] == "cancelled"


def aside_outcome(
    make_workspace: Any, steps: list[Any], limit_s: float, probe: ConcurrencyProbe | None = None
) -> dict[str, Any]:
    """Ask one side question through a TurnController (no kernel, no view) and let the turn's
    end wait `limit_s` for it, as the cell does."""
    workspace, model = make_workspace(steps)
    if probe is not None:
        workspace.tools.register(probe.tool)

    async def scenario() -> dict[str, Any]:
        controller = TurnController(workspace, "s", "the turn's prompt")
        controller.receive(AsideMessage(kind="aside", turn_id=controller.turn_id, question="what now?"))
        if probe is not None:
            await probe.started.wait()
        await controller.wait_for_asides(limit_s)
        [aside] = controller.state.asides
        return aside

    return asyncio.run(scenario())


def test_a_cancelled_aside_is_no_answer(make_workspace: Any):
    """The engine ends a cancelled aside with a result (stop reason `cancelled`, empty text)."""
    probe = ConcurrencyProbe()
    aside = aside_outcome(make_workspace, [tool_step(call("sleep", seconds=30))], 0.01, probe)
    assert (aside["status"], aside["answer"], aside["error"]) == ("cancelled", "", "aside cancelled")
    state = TurnState(turn_id="t1", prompt="", session="s", asides=[aside])
    assert "> (aside cancelled)" in static_bundle(state, "")[0]["text/markdown"]


def test_a_failed_aside_shows_the_error(make_workspace: Any):
    aside = aside_outcome(make_workspace, [{"error": "unavailable", "message": "the provider is down"}], 30)
    assert aside["status"] == "failed" and "the provider is down" in aside["error"]
    assert aside["answer"] == ""


def test_an_answered_aside(make_workspace: Any):
    aside = aside_outcome(make_workspace, [{"text": "Plotting next."}], 30)
    assert (aside["status"], aside["answer"], aside["error"]) == ("answered", "Plotting next.", None)


def test_an_escalated_stop_shows_as_a_force_stop():
    from blitz_kernel.engine.events import NoticeEvent

    state = played(START)
    state.set_stopping("graceful")
    state.apply(NoticeEvent(kind="force_stop", message="Stop did not end the turn within 3 s (stop.grace_s): …"))
    assert state.stopping == "force" and "stopping" in state.dirty
    assert any("stop.grace_s" in notice for notice in state.notices)
