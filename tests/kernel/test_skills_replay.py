"""`%blitz_skills` and `%blitz_replay` in a real kernel: a workspace skill is listed in the
instructions and marked loaded once the agent read it; a recorded turn's tool calls run again
with no model request, a changed file shows as changed, a mutating call is denied (nobody can
answer mid-replay) until `--approve allow`, and `-o` stores the typed report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakeserver import FakeOpenAIServer

from .driver import CellRun, KernelDriver

SKILL = "---\nname: sales-forecasting\ndescription: How this team forecasts sales.\n---\nUse a seasonal naive model.\n"

HISTORY = (
    "from blitz_kernel.notebook.extension import kernel_workspace\nprint(len(kernel_workspace().session('rp').history))"
)


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


def ok(cell: CellRun) -> CellRun:
    assert cell.status == "ok", cell.reply
    return cell


def test_blitz_skills_lists_skills_and_marks_the_loaded_ones(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
) -> None:
    (workspace_dir / "skills/forecast").mkdir(parents=True)
    (workspace_dir / "skills/forecast/SKILL.md").write_text(SKILL)
    (workspace_dir / "skills/broken").mkdir()
    (workspace_dir / "skills/broken/SKILL.md").write_text("no front matter here")
    listed = ok(kernel.run("%blitz_skills -s sk")).stdout.splitlines()
    assert listed == [
        "⚠ skipped skill skills/broken/SKILL.md: no front matter (a --- block with name and description)",
        "sales-forecasting: How this team forecasts sales.",
        f"    skills/forecast/SKILL.md, {len(SKILL):,} bytes, not loaded in session 'sk'",
    ]
    server.enqueue({"tool_calls": [call("load_skill", name="sales-forecasting")]}, {"text": "Forecast done."})
    ok(kernel.run("%%blitz -s sk --plain\nForecast next month."))
    system = server.requests[0].body["messages"][0]["content"]
    assert "- sales-forecasting: How this team forecasts sales." in system and "seasonal naive" not in system
    tool_results = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert any("Use a seasonal naive model." in r for r in tool_results)
    after = ok(kernel.run("%blitz_skills -s sk")).stdout
    assert "loaded in session 'sk'" in after and "not loaded" not in after


def test_blitz_replay_reruns_a_cell_without_the_model(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
) -> None:
    (workspace_dir / "sales.csv").write_text("month,sales\njan,10\n")
    server.enqueue(
        {"tool_calls": [call("read_file", path="sales.csv"), call("write_file", path="note.txt", content="hi\n")]},
        {"text": "Read and noted."},
    )
    turn = ok(kernel.run("%%blitz -s rp --plain --approve allow\nRead the sales and leave a note."))
    cell = turn.reply["execution_count"]
    requests = len(server.requests)
    messages = ok(kernel.run(HISTORY)).stdout
    assert messages == "5\n"  # the prompt, the calls, their two results, the answer
    (workspace_dir / "sales.csv").write_text("month,sales\njan,11\n")
    (workspace_dir / "note.txt").write_text("the user's note\n")

    replay = ok(kernel.run(f"%blitz_replay {cell} -o report")).stdout.splitlines()
    assert len(server.requests) == requests  # no model call
    assert replay[0] == '1. read_file({"path":"sales.csv"}): changed'
    assert "-     2\tjan,10" in replay[1] and "+     2\tjan,11" in replay[2]
    assert replay[3].startswith("2. write_file(") and replay[3].endswith(": failed")
    assert "denied" in replay[4] and "headless" in replay[4]
    assert replay[-1] == "replayed turn 1 of session 'rp': 2 calls, 1 changed, 1 failed"
    assert (workspace_dir / "note.txt").read_text() == "the user's note\n"
    stored = ok(kernel.run("print(type(report).__name__, [c.status for c in report.calls], report.all_same)"))
    assert stored.stdout == "ReplayReport ['changed', 'failed'] False\n"

    (workspace_dir / "sales.csv").write_text("month,sales\njan,10\n")
    allowed = ok(kernel.run("%blitz_replay -s rp --turn 1 --approve allow")).stdout
    assert allowed.splitlines()[0] == '1. read_file({"path":"sales.csv"}): same'
    assert (workspace_dir / "note.txt").read_text() == "hi\n"
    assert ok(kernel.run(HISTORY)).stdout == messages  # replay added nothing to the conversation
