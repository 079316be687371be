"""Replay (docs/replay.md): a recorded turn's tool calls run again with no model call, through
today's approvals, each result compared with the recorded one; nothing reaches the history."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import ToolResultMessage
from blitz_kernel.engine.turn.replay import normalise, short_diff
from blitz_kernel.errors import BlitzError
from blitz_kernel.models.scripted import Step
from tests.helpers.workspaces import scripted_workspace

from .conftest import call, tool_step


def reads(tmp_path: Path) -> list[Step]:
    return [
        tool_step(call("read_file", path="same.txt"), call("read_file", path="data.csv")),
        tool_step(call("read_file", path="gone.txt"), call("todo", items=[])),
        {"text": "done"},
    ]


async def test_replay_reports_same_changed_and_failed_without_calling_the_model(tmp_path: Path) -> None:
    (tmp_path / "same.txt").write_text("unchanged\n")
    (tmp_path / "data.csv").write_text("month,sales\njan,10\nfeb,12\n")
    (tmp_path / "gone.txt").write_text("here today\n")
    workspace, model = scripted_workspace(tmp_path, reads(tmp_path))
    await workspace.run("look at the data")
    history = list(workspace.session().history)
    requests = len(model.requests)

    (tmp_path / "data.csv").write_text("month,sales\njan,10\nfeb,15\n")
    (tmp_path / "gone.txt").unlink()
    report = await workspace.turns.replay()

    assert len(model.requests) == requests  # no model call
    assert workspace.session().history == history  # nothing added to the conversation
    assert [(c.tool, c.status) for c in report.calls] == [
        ("read_file", "same"),
        ("read_file", "changed"),
        ("read_file", "failed"),
        ("todo", "skipped"),
    ]
    changed = report.calls[1].detail
    assert "-" in changed and "feb,12" in changed and "+" in changed and "feb,15" in changed
    assert "gone.txt" in report.calls[2].detail
    assert report.turn == 1 and not report.all_same
    assert report.summary() == ("replayed turn 1 of session 'default': 4 calls, 1 same, 1 changed, 1 failed, 1 skipped")
    assert "2. read_file" in report.text() and report.text().endswith(report.summary())


async def test_a_mutating_call_is_refused_headless_and_runs_only_when_allowed(tmp_path: Path) -> None:
    steps: list[Step] = [
        tool_step(call("write_file", path="out.txt", content="written by the agent\n")),
        {"text": "ok"},
    ]
    workspace, _ = scripted_workspace(tmp_path, steps)
    await workspace.run("write it", approve="allow")
    (tmp_path / "out.txt").write_text("the user's own edit\n")

    refused = await workspace.turns.replay()
    [only] = refused.calls
    assert only.status == "failed" and "denied" in only.detail and "headless" in only.detail
    assert (tmp_path / "out.txt").read_text() == "the user's own edit\n"  # nothing changed

    allowed = await workspace.turns.replay(approve="allow")
    assert allowed.calls[0].status == "changed" and "+overwrote out.txt" in allowed.calls[0].detail
    assert (tmp_path / "out.txt").read_text() == "written by the agent\n"
    trail = [(r.call_id.startswith("replay:"), r.turn, r.decision, r.decided_by) for r in workspace.audit()]
    assert trail == [  # the session's trail has the replayed calls too, marked
        (False, 0, "allowed", "policy"),
        (True, 0, "denied", "headless default"),
        (True, 0, "allowed", "policy"),
    ]


async def test_replay_picks_a_turn_by_number_and_refuses_unknown_ones(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    steps: list[Step] = [tool_step(call("read_file", path="a.txt")), {"text": "one"}, {"text": "two, no tools"}]
    workspace, _ = scripted_workspace(tmp_path, steps)
    await workspace.run("first")
    await workspace.run("second")
    first = await workspace.turns.replay(turn=1)
    assert [c.status for c in first.calls] == ["same"]
    last = await workspace.turns.replay()
    assert last.turn == 2 and last.calls == [] and "made no tool calls" in last.summary()
    with pytest.raises(BlitzError, match="no turn 5 on record"):
        await workspace.turns.replay(turn=5)
    with pytest.raises(BlitzError, match="no recorded turns"):
        await workspace.turns.replay("never-used")
    assert "never-used" not in workspace.sessions.names()


def test_normalise_ignores_addresses_and_tiny_float_noise() -> None:
    assert normalise("<obj at 0x7f3a2b1c9d00>  \n0.30000000000000004\n\n") == normalise("<obj at 0x7f00aa11bb22>\n0.3")
    assert normalise("1.5") != normalise("1.6")
    diff = short_diff("\n".join(f"l{i}" for i in range(30)), "\n".join(f"m{i}" for i in range(30)))
    assert diff.splitlines()[-1] == "… 48 more changed lines"


@dataclass
class NamespaceKernel:
    user_ns: dict[str, Any] = field(default_factory=dict)
    hidden_names: dict[str, Any] = field(default_factory=dict)


async def test_run_python_replays_in_the_namespace_with_the_same_namespace_note(tmp_path: Path) -> None:
    kernel = NamespaceKernel({"values": [1, 2, 3]})
    steps: list[Step] = [tool_step(call("run_python", code="total = sum(values)\nprint(total)")), {"text": "6"}]
    workspace, _ = scripted_workspace(tmp_path, steps, kernel=kernel)
    await workspace.run("add them up", approve="allow")
    [recorded] = [m for m in workspace.session().history if isinstance(m, ToolResultMessage)]
    assert "namespace: created total" in (recorded.output or "")

    del kernel.user_ns["total"]
    kernel.user_ns["values"] = [1, 2, 4]
    report = await workspace.turns.replay(approve="allow")
    [only] = report.calls
    assert only.status == "changed" and kernel.user_ns["total"] == 7
    assert "namespace" not in only.detail  # the note is made as a turn makes it: only the output differs
    assert "-6" in only.detail and "+7" in only.detail
