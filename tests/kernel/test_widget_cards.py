"""The newer widget cards in a real kernel (the test plays JupyterLab's part, as in
test_widget_comm.py): a sub-agent's permission request answered in the turn's widget,
and Undo this turn's click, sent as its comm message after the cell ended, restoring the file
the turn wrote."""

from __future__ import annotations

from pathlib import Path

from tests.fakeserver import FakeOpenAIServer

from .driver import KernelDriver
from .test_widget_comm import (
    assert_clean,
    decide,
    start,
    static_outputs,
    wait_for_pending,
    write_call,
)

UNDO_BUTTON_ID = "blitz_kernel.notebook.widgets.undo.UndoButton"


def test_ENG70_a_subagents_request_is_answered_in_the_widget_and_nests_in_its_card(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
):
    agents = workspace_dir / ".blitz" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "fixer.md").write_text("---\nname: fixer\ndescription: fixes\ntools: write_file\n---\nFix things.\n")
    server.enqueue(
        {
            "tool_calls": [
                {"name": "invoke_agent", "arguments": {"agent": "fixer", "prompt": "write it"}, "id": "call_1"}
            ]
        },
        write_call("by_fixer.txt", "fixed", call_id="call_1"),  # the sub-agent's call: the same id
        {"text": "wrote by_fixer.txt"},
        {"text": "The fixer wrote it."},
    )
    front = start(kernel, "%%blitz -s sub --approve ask\nGet the fixer to write it.")
    pending = wait_for_pending(front)
    # the request and the nested card's status are synced as separate updates: wait for both
    front.pump_until(
        lambda: any(item.get("nested") for item in front.state["items"] if item["kind"] == "tool"),
        what="the sub-agent's call nested in its card",
    )
    assert pending["agent"] == "fixer" and pending["scope"] == ["call_1"]
    assert [c["name"] for c in pending["calls"]] == ["write_file"]
    [card] = [item for item in front.state["items"] if item["kind"] == "tool"]
    assert card["name"] == "invoke_agent" and card["status"] == "running"
    assert [(n["name"], n["status"]) for n in card["nested"]] == [("write_file", "waiting")]
    decide(front, "allow")
    cell = front.finish()
    assert_clean(cell, front)
    assert (workspace_dir / "by_fixer.txt").read_text() == "fixed"
    [(data, metadata)] = static_outputs(cell)
    lines = data["text/plain"].splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("⚙ invoke_agent("))
    assert (
        lines[at + 1].startswith('  ⚙ write_file(path="by_fixer.txt"')
        and lines[at + 2] == "  » fixer: wrote by_fixer.txt"
    )
    [call] = metadata["blitz"]["tool_calls"]
    assert call["subagent_calls"][0]["decision"] == "allow"


def test_undo_this_turn_restores_the_file_and_says_so_on_the_rendering(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
):
    (workspace_dir / "kept.txt").write_text("before")
    server.enqueue(write_call("kept.txt", "after"), {"text": "Changed it."})
    front = start(kernel, "%%blitz -s undo1 --approve allow\nChange kept.txt.")
    cell = front.finish()
    assert_clean(cell, front)
    assert (workspace_dir / "kept.txt").read_text() == "after"
    comm_id, button = front.other(UNDO_BUTTON_ID)
    assert button["status"] == "ready"
    front.send_to(comm_id, {"kind": "undo", "turn_id": button["turn_id"]})  # the click, after the cell ended
    front.pump_until(lambda: front.others[comm_id]["status"] in ("done", "failed"), what="the undo")
    assert front.others[comm_id]["status"] == "done", front.others[comm_id]["report"]
    assert (workspace_dir / "kept.txt").read_text() == "before"
    assert "kept.txt" in front.others[comm_id]["report"]
    front.pump_until(
        lambda: any(
            "This turn was undone (" in content["data"].get("text/plain", "")
            for kind, content in front.outputs
            if kind == "update_display_data"
        ),
        what="the rendering to say the turn was undone",
    )
    ours = [o for o in front.foreign_outputs if not o[1].get("text", "").startswith("No such comm")]
    assert ours == []  # the update went to the cell, not to the comm message (ipykernel's own note aside)


def test_continue_at_the_step_limit_goes_on_in_the_same_cell(kernel: KernelDriver, server: FakeOpenAIServer):
    """The widget offers Continue when the turn stops at --max-turns; pressed, a
    second widget runs the next steps from the same history (no new prompt) and the cell ends
    normally; the step limit is not the cell's failure any more."""
    server.enqueue(
        {"tool_calls": [{"name": "list_files", "arguments": {}, "id": "call_l"}]},
        {"text": "Found the files."},
    )
    front = start(kernel, "%%blitz -s more --max-turns 1\nList the files.")
    front.pump_until(lambda: bool(front.views) and bool(front.state.get("offer")), what="the Continue offer")
    first = front.view_id
    front.send("continue", offer_id=front.state["offer"]["offer_id"], go=True)
    front.pump_until(lambda: front.view_id != first, what="the continued turn's widget")
    cell = front.finish()
    assert_clean(cell, front)
    renderings = static_outputs(cell)
    assert len(renderings) == 2
    assert "max_turns" in renderings[0][0]["text/plain"]
    assert "Found the files." in renderings[1][0]["text/markdown"]
    assert renderings[1][0]["text/plain"].startswith("Continuing past the step limit")
    second_request = server.requests[1].body
    assert second_request["messages"][-1]["role"] == "tool"  # the same turn context: no new prompt
