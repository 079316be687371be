"""`%%blitz --plan`, `%blitz_btw` and `%blitz_compact` in a real kernel, against the fake
server through litellm: assertions on what the model received."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakeserver import FakeOpenAIServer

from .driver import KernelDriver


def user_texts(body: dict) -> list[str]:
    return [
        m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
        for m in body["messages"]
        if m["role"] == "user"
    ]


def test_plan_turn_refuses_mutating_tools_and_shows_the_plan(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
):
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "plan.txt", "content": "x"}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Objective: tidy\\n2. Edit `clean()`"}}]},
    )
    cell = kernel.run("%%blitz -s plan --plan --approve allow\nTidy the data.")
    assert cell.status == "ok", cell.reply
    assert not (workspace_dir / "plan.txt").exists()
    refusal = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert json.loads(refusal["content"]) == {
        "error": "plan mode: write_file is disabled because it could change something. Describe this step in the plan instead."
    }
    assert "## Plan mode" in server.requests[0].body["messages"][0]["content"]
    shown = "\n".join(cell.displays.values())
    assert "### Proposed plan" in shown and "Edit `clean()`" in shown
    assert len(server.requests) == 2  # headless: the plan is the answer


def test_btw_answers_and_leaves_no_trace(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"text": "We chose 42."}, {"text": "It was about 42."}, {"text": "Next."})
    assert kernel.run("%%blitz\nPick a number.").status == "ok"
    aside = kernel.run("%blitz_btw which number did we pick?")
    assert aside.status == "ok", aside.reply
    assert "aside — not recorded" in aside.stdout
    assert list(aside.displays.values()) == ["It was about 42."]
    assert user_texts(server.requests[1].body)[-1] == "which number did we pick?"
    assert kernel.run("%%blitz\nContinue.").status == "ok"
    later = json.dumps(server.requests[2].body["messages"])
    assert "which number did we pick?" not in later and "It was about 42." not in later
    cell_form = kernel.run("%%blitz_btw\n")
    assert cell_form.ename == "UsageError"


def test_compact_summarises_and_the_summary_replaces_the_window(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"text": "first answer"}, {"text": "second answer"})
    assert kernel.run("%%blitz -s compact\nfirst question").status == "ok"
    assert kernel.run("%%blitz -s compact\nsecond question").status == "ok"
    server.enqueue({"text": "SUMMARY: the user asked a first question."})
    cell = kernel.run("%blitz_compact -s compact the plotting code")
    assert cell.status == "ok", cell.reply
    assert "compacted 1 turn(s), 2 event(s) of session 'compact' into a summary" in cell.stdout
    summariser = server.requests[2].body["messages"]
    assert summariser[-1]["content"].endswith("Pay particular attention to: the plotting code")
    assert "User: first question" in summariser[-1]["content"]
    server.enqueue({"text": "third answer"})
    assert kernel.run("%%blitz -s compact\nthird question").status == "ok"
    after = user_texts(server.requests[3].body)
    assert after[0].startswith("[Summary of earlier conversation]\nSUMMARY: the user asked a first question.")
    assert "first question" not in after[1:]
    nothing = kernel.run("%blitz_compact -s compact-empty")
    assert nothing.ename == "BlitzCellError" and "nothing to compact" in nothing.evalue
    bad = kernel.run("%blitz_compact --keep 0")
    assert bad.ename == "UsageError"
