"""The live turn widget in a real kernel: the test plays JupyterLab's part over jupyter_client
(WidgetFrontEnd), sending the very comm messages static/turn.js sends, while the cell runs.
The model is the fake OpenAI-compatible server; assertions are on what it received."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from blitz_kernel.engine.steering import LEFTOVER_HEADER
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import tool_messages

from .conftest import FAKE_KEY
from .driver import CellRun, KernelDriver, WidgetFrontEnd

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
STOPPED_REASON = "the user pressed Stop (denied)"
HEADLESS_REASON = "approval needed but nobody can answer (headless)"


def write_call(path: str, content: str = "hello", call_id: str = "call_w1") -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}, "id": call_id}]}


def static_outputs(cell: CellRun) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(data, metadata) each turn widget's display ended as, in order. A widget display that
    was never replaced is not a turn's (an Undo this turn button stays a widget) and is left out;
    a turn widget left in place would then be missing, which the callers' counts catch."""
    final: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    replaced: set[str] = set()
    for kind, content in cell.outputs:
        display_id = content.get("transient", {}).get("display_id")
        opened = kind == "display_data" and WIDGET_MIME in content["data"]
        if opened or (kind == "update_display_data" and display_id in final):
            final[display_id] = (content["data"], content["metadata"])
            if kind == "update_display_data":
                replaced.add(display_id)
    return [value for display_id, value in final.items() if display_id in replaced]


def start(kernel: KernelDriver, code: str, **front_end: Any) -> WidgetFrontEnd:
    return WidgetFrontEnd(kernel, kernel.submit(code, browser=True), **front_end)


def wait_for_pending(front: WidgetFrontEnd) -> dict[str, Any]:
    front.pump_until(lambda: bool(front.views) and bool(front.state.get("pending")), what="a permission request")
    pending: dict[str, Any] = front.state["pending"]
    return pending


def decide(front: WidgetFrontEnd, decision: str, reason: str | None = None, index: int = 0) -> None:
    pending = front.state["pending"]
    call_id = pending["calls"][index]["id"]
    front.send("decide", request_id=pending["request_id"], call_id=call_id, decision=decision, reason=reason)


def assert_clean(cell: CellRun, front: WidgetFrontEnd) -> None:
    """The cell succeeded, every widget was closed, and nothing was printed from a callback."""
    assert cell.status == "ok", cell.reply
    ours = [o for o in front.foreign_outputs if not o[1].get("text", "").startswith("No such comm")]
    assert ours == []  # ipykernel's own note on a late click to a closed widget aside
    assert set(front.views) <= front.closed
    assert FAKE_KEY not in json.dumps(cell.outputs)


def test_allow_once_runs_the_call_and_the_widget_becomes_a_static_rendering(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
):
    server.enqueue(write_call("allowed.txt", "hi"), {"text": "Wrote **allowed.txt**."})
    front = start(kernel, "%%blitz -s allow\nWrite allowed.txt.")
    pending = wait_for_pending(front)
    assert [(c["name"], c["args"]) for c in pending["calls"]] == [
        ("write_file", {"path": "allowed.txt", "content": "hi"})
    ]
    assert [item["status"] for item in front.state["items"] if item["kind"] == "tool"] == ["waiting"]
    decide(front, "allow")
    cell = front.finish()
    assert_clean(cell, front)
    assert (workspace_dir / "allowed.txt").read_text() == "hi"
    [(data, metadata)] = static_outputs(cell)
    assert WIDGET_MIME not in data
    assert "Wrote **allowed.txt**." in data["text/markdown"]
    assert "⚙ write_file(" in data["text/plain"] and "end_turn" in data["text/plain"]
    record = metadata["blitz"]
    assert record["prompt"] == "Write allowed.txt."
    assert record["text"] == "Wrote **allowed.txt**."
    assert record["stop_reason"] == "end_turn" and record["session"] == "allow"
    [call] = record["tool_calls"]
    assert (call["name"], call["args"], call["status"], call["decision"]) == (
        "write_file",
        {"path": "allowed.txt", "content": "hi"},
        "done",
        "allow",
    )
    assert record["usage"]["calls"] == 2


def test_always_allow_lets_the_tool_run_unasked_for_the_rest_of_the_session(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
):
    server.enqueue(
        write_call("always1.txt"), {"text": "One."}, write_call("always2.txt", call_id="call_w2"), {"text": "Two."}
    )
    front = start(kernel, "%%blitz -s always\nWrite always1.txt.")
    wait_for_pending(front)
    decide(front, "always")
    assert_clean(front.finish(), front)
    second = start(kernel, "%%blitz -s always\nWrite always2.txt.")
    cell = second.finish()
    assert_clean(cell, second)
    assert (workspace_dir / "always2.txt").exists()
    [(_, metadata)] = static_outputs(cell)
    [call] = metadata["blitz"]["tool_calls"]
    assert call["status"] == "done" and call["decision"] is None  # nobody was asked


def test_deny_with_a_reason_the_model_reads(kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path):
    server.enqueue(write_call("denied.txt"), {"text": "Understood."})
    front = start(kernel, "%%blitz -s deny\nWrite denied.txt.")
    wait_for_pending(front)
    decide(front, "deny", reason="use the scratch folder instead")
    cell = front.finish()
    assert_clean(cell, front)
    assert not (workspace_dir / "denied.txt").exists()
    [result] = tool_messages(server.requests[1].body)
    assert json.loads(result["content"]) == {"error": "write_file was denied: use the scratch folder instead"}
    [(_, metadata)] = static_outputs(cell)
    assert metadata["blitz"]["tool_calls"][0]["status"] == "denied"


def test_steer_rides_on_the_next_tool_result(kernel: KernelDriver, server: FakeOpenAIServer):
    """Steering through the widget: the model reads the message under message_from_user."""
    server.enqueue(write_call("steer.txt"), {"text": "Used pandas."})
    front = start(kernel, "%%blitz -s steer\nWrite steer.txt.")
    wait_for_pending(front)
    front.send("steer", text="use pandas")
    front.pump_until(
        lambda: [s["status"] for s in front.state.get("steers", [])] == ["queued"], what="the steer queued"
    )
    decide(front, "allow")
    front.pump_until(lambda: [s["status"] for s in front.state["steers"]] == ["delivered"], what="delivery")
    cell = front.finish()
    assert_clean(cell, front)
    [result] = tool_messages(server.requests[1].body)
    assert json.loads(result["content"])["message_from_user"] == "use pandas"
    [(data, metadata)] = static_outputs(cell)
    assert metadata["blitz"]["steering"] == [{"text": "use pandas", "status": "delivered"}]
    assert "use pandas" in data["text/plain"]


def test_a_steer_no_tool_result_carried_is_sent_as_the_next_prompt(kernel: KernelDriver, server: FakeOpenAIServer):
    """A message that arrives while the final answer streams becomes the next prompt, marked as
    sent during the turn that did not read it."""
    held_answer = {"text": " ".join(f"w{i}" for i in range(60)), "hold": "leftover"}
    server.enqueue(held_answer, {"text": "En français."})
    front = start(kernel, "%%blitz -s leftover\nAnswer slowly.")
    front.pump_until(lambda: bool(front.views) and bool(front.state.get("live", {}).get("text")), what="streaming")
    front.send("steer", text="and now in French")
    front.pump_until(
        lambda: [s["status"] for s in front.state.get("steers", [])] == ["queued"], what="the steer queued"
    )
    server.release("leftover")  # the answer streams on only once the kernel has the steer
    cell = front.finish()
    assert_clean(cell, front)
    assert len(front.views) == 2  # the follow-up turn has its own widget
    last_user = [m for m in server.requests[1].body["messages"] if m["role"] == "user"][-1]
    assert last_user["content"] == f"{LEFTOVER_HEADER}\n- and now in French"  # framed: the user's earlier words
    first, second = static_outputs(cell)
    assert first[1]["blitz"]["steering"] == [{"text": "and now in French", "status": "next_prompt"}]
    assert "and now in French" in second[1]["blitz"]["prompt"]
    assert second[1]["blitz"]["text"] == "En français."


def test_an_aside_during_a_turn_is_answered_and_never_reaches_the_session(
    kernel: KernelDriver, server: FakeOpenAIServer
):
    """A side question through the widget: answered from a copy of the session."""
    server.enqueue(write_call("aside.txt"), {"text": "It is aside.txt."}, {"text": "Done."})
    front = start(kernel, "%%blitz -s aside\nWrite aside.txt.")
    wait_for_pending(front)
    front.send("aside", question="which file are you writing?")
    front.pump_until(
        lambda: [a["status"] for a in front.state.get("asides", [])] == ["answered"], what="the side answer"
    )
    assert front.state["asides"][0]["answer"] == "It is aside.txt."
    decide(front, "allow")
    cell = front.finish()
    assert_clean(cell, front)
    aside_request, later = server.requests[1].body, server.requests[2].body
    assert [m for m in aside_request["messages"] if m["role"] == "user"][-1]["content"] == "which file are you writing?"
    assert "which file are you writing?" not in json.dumps(later["messages"])
    assert "It is aside.txt." not in json.dumps(later["messages"])
    [(_, metadata)] = static_outputs(cell)
    assert "which file" not in json.dumps(metadata["blitz"])  # the record holds the turn only


def test_stop_once_stops_after_the_current_step(kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path):
    server.enqueue(write_call("stopped.txt"), {"text": "never asked for"})
    front = start(kernel, "%%blitz -s stop1 --out stopped\nWrite stopped.txt.")
    wait_for_pending(front)
    front.send("stop")
    cell = front.finish(timeout=20)
    assert_clean(cell, front)
    assert not (workspace_dir / "stopped.txt").exists()
    assert len(server.requests) == 1  # the pending request was denied and no step followed
    assert kernel.run("print(stopped.stop_reason)").stdout == "cancelled\n"
    [(_, metadata)] = static_outputs(cell)
    record = metadata["blitz"]
    assert record["stop_reason"] == "cancelled"
    assert record["tool_calls"][0]["status"] == "denied"
    assert STOPPED_REASON in record["tool_calls"][0]["result"]


def test_stop_twice_stops_at_once_and_the_session_goes_on(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"fault": "stall", "seconds": 30})
    front = start(kernel, "%%blitz -s stop2\nTake your time.")
    front.pump_until(lambda: bool(front.views), what="the widget")
    server.wait_for_requests(1, timeout=30)
    started = time.monotonic()
    front.send("stop")
    front.pump_until(lambda: front.state.get("stopping") == "graceful", what="a graceful stop")
    front.send("stop")
    cell = front.finish(timeout=20)
    assert time.monotonic() - started < 10  # not the 30 s stall
    assert_clean(cell, front)
    [(_, metadata)] = static_outputs(cell)
    assert metadata["blitz"]["stop_reason"] == "cancelled"
    server.enqueue({"text": "Back again."})
    after = start(kernel, "%%blitz -s stop2\nStill there?")
    assert_clean(after.finish(), after)
    roles = [m["role"] for m in server.requests[-1].body["messages"] if m["role"] != "system"]
    assert roles == ["user", "user"]


def test_one_stop_on_a_stalled_stream_becomes_a_force_stop_the_widget_shows(
    kernel: KernelDriver, server: FakeOpenAIServer
):
    """Stop escalates after `stop.grace_s` (3 s by default): one press ends a stalled turn."""
    server.enqueue({"fault": "stall", "seconds": 30})
    front = start(kernel, "%%blitz -s stop3\nTake your time.")
    front.pump_until(lambda: bool(front.views), what="the widget")
    server.wait_for_requests(1, timeout=30)
    started = time.monotonic()
    front.send("stop")
    front.pump_until(lambda: front.state.get("stopping") == "force", what="the stop forced", timeout=15)
    cell = front.finish(timeout=20)
    assert 3 <= time.monotonic() - started < 10  # after the grace, far before the 30 s stall
    assert_clean(cell, front)
    [(data, metadata)] = static_outputs(cell)
    assert metadata["blitz"]["stop_reason"] == "cancelled"
    assert "Stop did not end the turn within 3 s" in data["text/plain"]


def test_stale_and_malformed_clicks_are_ignored(kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path):
    server.enqueue(write_call("stale.txt"), {"text": "Done."})
    front = start(kernel, "%%blitz -s stale\nWrite stale.txt.")
    pending = wait_for_pending(front)
    call_id = pending["calls"][0]["id"]
    view = front.view_id
    old_turn = {
        "kind": "decide",
        "turn_id": "an-older-turn",
        "request_id": pending["request_id"],
        "call_id": call_id,
        "decision": "allow",
    }
    front.send_to(view, old_turn)
    front.send_to(view, {"kind": "stop", "turn_id": "an-older-turn"})
    front.send("decide", request_id="perm-0", call_id=call_id, decision="allow", reason=None)
    front.send("decide", request_id=pending["request_id"], call_id="not-a-call", decision="allow", reason=None)
    front.send_to(view, {"kind": "decide", "turn_id": front.state["turn_id"], "decision": "maybe"})
    front.send("steer", text="sync point")  # handled after all of the above, in order
    front.pump_until(lambda: bool(front.state.get("steers")), what="the sync point")
    assert front.state["pending"]["request_id"] == pending["request_id"]
    assert front.state["stopping"] == ""
    assert not (workspace_dir / "stale.txt").exists()
    decide(front, "deny")
    assert_clean(front.finish(), front)


def test_without_a_front_end_the_turn_is_plain_and_the_answer_keeps_the_record(
    kernel: KernelDriver, server: FakeOpenAIServer
):
    server.enqueue({"tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": "Nothing much."})
    front = start(kernel, "%%blitz -s headless\nList files.", answer_probe=False)
    cell = front.finish()
    assert cell.status == "ok", cell.reply
    assert front.views == {}  # no widget was ever opened
    assert "⚙ list_files()" in cell.stdout and "end_turn" in cell.stdout
    records = [c["metadata"]["blitz"] for k, c in cell.outputs if "blitz" in c.get("metadata", {})]
    assert records[-1]["text"] == "Nothing much."
    assert records[-1]["tool_calls"][0]["name"] == "list_files"


def test_plain_option_skips_the_widget(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"text": "Plain."})
    front = start(kernel, "%%blitz -s plainopt --plain\nSay it plainly.")
    cell = front.finish()
    assert cell.status == "ok"
    assert front.probes == [] and front.views == {}
    assert list(cell.displays.values()) == ["Plain."]


def test_a_widget_that_never_renders_fails_closed(kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path):
    """The front end is there but the widget never renders: nobody can click, so the
    headless policy answers (deny)."""
    assert kernel.run("%blitz_config notebook.render_timeout_s=0.5").status == "ok"
    try:
        server.enqueue(write_call("unseen.txt"), {"text": "Could not."})
        front = start(kernel, "%%blitz -s unseen\nWrite unseen.txt.", render=False)
        cell = front.finish()
    finally:
        kernel.run("%blitz_config notebook.render_timeout_s=10")
    assert_clean(cell, front)
    assert not (workspace_dir / "unseen.txt").exists()
    [result] = tool_messages(server.requests[1].body)
    assert json.loads(result["content"]) == {"error": f"write_file was denied: {HEADLESS_REASON}"}
