"""Plan review and side questions cut short, through the live turn widget in a real
kernel: the test plays JupyterLab's part over jupyter_client (WidgetFrontEnd) and sends the
comm messages static/turn.js sends for Approve plan / Reject; assertions are on what the fake
model server received."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from blitz_kernel.engine.turn.modes import go_ahead_prompt
from tests.fakeserver import FakeOpenAIServer

from .driver import KernelDriver, WidgetFrontEnd
from .test_widget_comm import (
    assert_clean,
    start,
    static_outputs,
    tool_messages,
    wait_for_pending,
    write_call,
)

PLAN = "1. **Objective**: tidy the data\n2. Edit `clean()` in prep.py\n3. Verify with `pytest`"
REVISED = "1. Keep the old API\n2. Add `clean_v2()` beside `clean()`"


def exit_plan(plan: str, call_id: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": plan}, "id": call_id}]}


def wait_for_review(front: WidgetFrontEnd, review_id: int = 1) -> dict[str, Any]:
    front.pump_until(
        lambda: bool(front.views) and front.state.get("review", {}).get("review_id") == review_id,
        what=f"plan review {review_id}",
    )
    review: dict[str, Any] = front.state["review"]
    return review


def user_prompts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


@pytest.fixture
def quick_render_timeout(kernel: KernelDriver) -> Iterator[None]:
    """A widget that never renders is given up on after 0.5 s instead of 10 s."""
    assert kernel.run("%blitz_config notebook.render_timeout_s=0.5").status == "ok"
    yield
    assert kernel.run("%blitz_config notebook.render_timeout_s=10").status == "ok"


def test_approving_the_plan_starts_the_carry_out_turn_in_the_same_cell(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue(exit_plan(PLAN, "call_p1"), {"text": "Carried it out."})
    front = start(kernel, "%%blitz -s planok --plan --out carried\nTidy the data.")
    review = wait_for_review(front)
    assert review["plan"] == PLAN
    [tool] = [item for item in front.state["items"] if item["kind"] == "tool"]
    assert (tool["name"], tool["status"]) == ("exit_plan_mode", "waiting")
    front.send("review", review_id=review["review_id"], approved=True, reason=None)
    cell = front.finish()
    assert_clean(cell, front)

    plan_request, carry_out = (request.body for request in server.requests)
    assert "## Plan mode" in plan_request["messages"][0]["content"]
    assert "## Plan mode" not in carry_out["messages"][0]["content"]  # the carry-out may change things
    assert user_prompts(carry_out) == ["Tidy the data.", go_ahead_prompt(PLAN)]
    [approved] = tool_messages(carry_out)
    assert "approved the plan" in approved["content"]

    assert len(front.views) == 2  # the carry-out turn has its own widget
    first, second = front.views.values()
    assert first["items"][-1]["kind"] == "plan" and first["items"][-1]["status"] == "approved"
    assert second["header"]["label"] == "Carrying out the approved plan"
    (plan_data, plan_meta), (done_data, done_meta) = static_outputs(cell)
    assert "**Proposed plan — approved**" in plan_data["text/markdown"]
    assert plan_data["text/markdown"].count("\n2. Edit `clean()` in prep.py") == 1  # the answer is the plan: once
    assert plan_meta["blitz"]["text"] == PLAN and plan_meta["blitz"]["stop_reason"] == "end_turn"
    assert done_data["text/markdown"].startswith("*Carrying out the approved plan*")
    assert done_meta["blitz"]["prompt"] == go_ahead_prompt(PLAN)
    assert done_meta["blitz"]["text"] == "Carried it out."
    check = kernel.run("print(carried.text, carried.plan_status)")
    assert check.stdout == "Carried it out. None\n"  # --out keeps the cell's last turn


def test_rejecting_with_a_reason_tells_the_model_and_the_turn_goes_on(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue(exit_plan(PLAN, "call_p1"), exit_plan(REVISED, "call_p2"), {"text": "I will not change anything."})
    front = start(kernel, "%%blitz -s planno --plan\nTidy the data.")
    first = wait_for_review(front)
    front.send("review", review_id=first["review_id"], approved=False, reason="keep the old API")
    second = wait_for_review(front, review_id=2)
    assert second["plan"] == REVISED
    front.send("review", review_id=first["review_id"], approved=True, reason=None)  # stale: plan 1 is over
    front.send("review", review_id=second["review_id"], approved=False, reason="  ")
    cell = front.finish()
    assert_clean(cell, front)

    assert len(server.requests) == 3 and len(front.views) == 1  # no carry-out
    [rejected] = tool_messages(server.requests[1].body)
    assert json.loads(rejected["content"]) == {
        "result": "The user rejected the plan: keep the old API. Revise it (still in plan mode) and call "
        "exit_plan_mode again."
    }
    last = tool_messages(server.requests[2].body)[-1]
    assert json.loads(last["content"])["result"].startswith("The user rejected the plan. Revise it")
    [(data, metadata)] = static_outputs(cell)
    assert "Proposed plan — rejected: keep the old API" in data["text/markdown"]
    assert "Proposed plan — rejected: no reason given" in data["text/markdown"]
    assert metadata["blitz"]["text"] == "I will not change anything."


def test_stop_while_a_plan_waits_rejects_it_and_ends_the_turn(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue(exit_plan(PLAN, "call_p1"), {"text": "never asked for"})
    front = start(kernel, "%%blitz -s planstop --plan --out stopped\nTidy the data.")
    wait_for_review(front)
    front.send("stop")
    cell = front.finish(timeout=20)
    assert_clean(cell, front)
    assert len(server.requests) == 1 and len(front.views) == 1
    assert kernel.run("print(stopped.stop_reason, stopped.plan_status)").stdout == "cancelled rejected\n"
    [(data, metadata)] = static_outputs(cell)
    assert "Proposed plan — rejected: the user pressed Stop" in data["text/markdown"]
    assert metadata["blitz"]["stop_reason"] == "cancelled"
    server.enqueue({"text": "Still here."})
    after = start(kernel, "%%blitz -s planstop\nStill there?")
    assert_clean(after.finish(), after)  # the history stayed valid


def test_an_interrupt_while_a_plan_waits_cancels_the_turn_cleanly(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue(exit_plan(PLAN, "call_p1"))
    front = start(kernel, "%%blitz -s planint --plan --out interrupted\nTidy the data.")
    wait_for_review(front)
    kernel.interrupt()
    cell = front.finish(timeout=20)
    assert_clean(cell, front)
    check = kernel.run("print(interrupted.stop_reason, interrupted.plan_status)")
    assert check.stdout == "cancelled None\n"  # nobody answered: no verdict was made up
    [(data, _)] = static_outputs(cell)
    assert "Proposed plan" not in data["text/markdown"] and "cancelled" in data["text/markdown"]
    server.enqueue({"text": "Still here."})
    after = start(kernel, "%%blitz -s planint\nStill there?")
    assert_clean(after.finish(), after)
    roles = [m["role"] for m in server.requests[-1].body["messages"] if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "user"]  # the plan call got a (cancelled) result


def test_a_plan_turn_nobody_can_see_makes_the_plan_the_answer(
    kernel: KernelDriver, server: FakeOpenAIServer, quick_render_timeout: None
):
    """A front end is there but the widget never renders: like headless, no reviewer."""
    server.enqueue(exit_plan(PLAN, "call_p1"))
    front = start(kernel, "%%blitz -s planunseen --plan --out unseen\nTidy the data.", render=False)
    cell = front.finish()
    assert_clean(cell, front)
    assert len(server.requests) == 1 and len(front.views) == 1
    assert kernel.run("print(unseen.plan_status, unseen.stop_reason)").stdout == "unreviewed end_turn\n"
    [(data, _)] = static_outputs(cell)
    assert "Proposed plan — not reviewed" in data["text/markdown"]


def test_a_plan_proposed_unasked_while_nobody_sees_the_widget_is_the_answer(
    kernel: KernelDriver, server: FakeOpenAIServer, quick_render_timeout: None
):
    """Not a plan turn, so the reviewer was passed; the widget never rendered, so the review
    says nobody can answer and the plan is the turn's answer, as headless."""
    server.enqueue(exit_plan(PLAN, "call_p1"), {"text": "never asked for"})
    front = start(kernel, "%%blitz -s planself --out self_planned\nTidy the data.", render=False)
    cell = front.finish()
    assert_clean(cell, front)
    assert len(server.requests) == 1
    check = kernel.run("print(self_planned.plan_status, self_planned.stop_reason)")
    assert check.stdout == "unreviewed end_turn\n"
    [(data, _)] = static_outputs(cell)
    assert "Proposed plan — not reviewed" in data["text/markdown"]


def test_plan_turn_in_plain_mode_shows_the_plan_and_starts_nothing(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue(exit_plan(PLAN, "call_p1"))
    front = start(kernel, "%%blitz -s planplain --plan --plain\nTidy the data.")
    cell = front.finish()
    assert cell.status == "ok", cell.reply
    assert front.probes == [] and front.views == {}
    [shown] = [text for text in cell.displays.values() if "Proposed plan" in text]
    assert shown.startswith(f"### Proposed plan\n\n{PLAN}\n\n")
    records = [c["metadata"]["blitz"] for _, c in cell.outputs if "blitz" in c.get("metadata", {})]
    assert records[-1]["text"] == PLAN  # the plan is the answer, and carries the record
    assert len(server.requests) == 1


def test_a_cancelled_aside_says_so_instead_of_an_empty_answer(kernel: KernelDriver, server: FakeOpenAIServer):
    """The engine ends a cancelled aside with a result (stop reason `cancelled`, no text): the
    widget must show it as cancelled, not as an answer."""
    server.enqueue(write_call("asidecut.txt"), {"fault": "stall", "seconds": 30})
    front = start(kernel, "%%blitz -s asidecut\nWrite asidecut.txt.")
    wait_for_pending(front)
    front.send("aside", question="what are you doing?")
    server.wait_for_requests(2, timeout=30)  # the aside's request is stalled at the server
    front.send("stop")  # the turn stops; the cell then waits for the aside...
    front.pump_until(lambda: front.state.get("phase") == "finishing", what="the turn to wait for its aside")
    front.send("stop")  # ...until Stop is pressed again
    front.pump_until(lambda: [a["status"] for a in front.state["asides"]] == ["cancelled"], what="the aside cancelled")
    [aside] = front.state["asides"]
    assert (aside["answer"], aside["error"]) == ("", "aside cancelled")
    cell = front.finish(timeout=20)
    assert_clean(cell, front)
    [(data, _)] = static_outputs(cell)
    assert "> (aside cancelled)" in data["text/markdown"]
