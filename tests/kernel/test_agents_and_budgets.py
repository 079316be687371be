"""Sub-agents and session budgets in a real kernel, through litellm against the fake server."""

from __future__ import annotations

from pathlib import Path

from tests.fakeserver import FakeOpenAIServer

from .driver import KernelDriver


def test_ENG70_a_subagents_lines_are_indented_under_its_call_in_plain_output(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
):
    agents = workspace_dir / ".blitz" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: reviews files\ntools: read_file\n---\nReview.\n"
    )
    (workspace_dir / "prep.py").write_text("import pandas as pd\n")
    server.enqueue(
        {"tool_calls": [{"name": "invoke_agent", "arguments": {"agent": "reviewer", "prompt": "Review prep.py"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "prep.py"}}]},
        {"text": "prep.py imports pandas and nothing else."},
        {"text": "The reviewer found nothing wrong."},
    )
    cell = kernel.run("%%blitz -s agents-plain --plain\nAsk the reviewer about prep.py.")
    assert cell.status == "ok", cell.reply
    lines = cell.stdout.splitlines()
    call = lines.index(next(line for line in lines if line.startswith("⚙ invoke_agent(")))
    nested = lines[call + 1 : call + 4]
    assert nested[0].startswith('  ⚙ read_file(path="prep.py")')
    assert nested[1].startswith("    ↳ read_file: ")
    assert nested[2] == "  » reviewer: prep.py imports pandas and nothing else."
    assert any(line.startswith("  ↳ invoke_agent: prep.py imports pandas") for line in lines)
    # the sub-agent ran on its own instructions, with nothing of the caller's conversation
    sub_request = server.requests[1].body["messages"]
    assert sub_request[0] == {"role": "system", "content": "Review."}
    assert [m["content"] for m in sub_request if m["role"] == "user"] == ["Review prep.py"]


def test_GR05_a_spent_session_budget_refuses_the_next_cell_until_budget_is_added(
    kernel: KernelDriver, server: FakeOpenAIServer
):
    setup = kernel.run(
        '%blitz_config prices."openai/fake-model".input=0 prices."openai/fake-model".output=1000000 '
        "limits.max_cost_usd_session=1.5"
    )
    assert setup.status == "ok", setup.reply
    try:
        server.enqueue({"text": "first", "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
        assert kernel.run("%%blitz -s budget\nOne.").status == "ok"
        server.enqueue({"text": "second", "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
        over = kernel.run("%%blitz -s budget\nTwo.")
        assert over.status == "error" and "Blitz turn stopped (max_cost)" in "".join(over.reply.get("traceback", []))
        requests_before = len(server.requests)
        refused = kernel.run("%%blitz -s budget\nThree.")
        assert refused.status == "error"
        assert "session budget of $1.50 is spent" in "".join(refused.reply.get("traceback", []))
        assert len(server.requests) == requests_before  # refused before any model call
        lifted = kernel.run("%blitz_usage -s budget --add-budget 5")
        assert lifted.status == "ok" and "budget raised" in lifted.stdout
        server.enqueue({"text": "back", "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
        assert kernel.run("%%blitz -s budget\nFour.").status == "ok"
    finally:
        kernel.run("%blitz_config limits.max_cost_usd_session=1000000")
