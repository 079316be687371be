"""Sub-agents: isolation, depth, accounting, modes, approvals, parallelism, stop."""

from __future__ import annotations

import asyncio
from pathlib import Path

from blitz_kernel.core.history import UserMessage
from blitz_kernel.core.usage import Price
from blitz_kernel.engine.events import PermissionRequest, SubagentEvent, TextEvent, ToolResultEvent
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from tests.helpers.workspaces import scripted_workspace

from .conftest import ScriptedApprover, call, tool_results, tool_step


def _agent(root: Path, name: str, body: str, tools: str = "read_file, write_file, invoke_agent") -> None:
    agents = root / ".blitz" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(f"---\nname: {name}\ndescription: the {name}\ntools: {tools}\n---\n{body}\n")


def _workspace(root: Path, steps, **overrides) -> tuple[Workspace, ScriptedModel]:
    return scripted_workspace(root, steps, price=Price(input=0.0, output=1_000_000.0), **overrides)


async def test_ENG70_invoke_agent_runs_isolated_and_returns_the_final_text(tmp_path):
    _agent(tmp_path, "reviewer", "You review code.")
    ws, model = _workspace(
        tmp_path,
        [
            tool_step({**call("invoke_agent", agent="reviewer", prompt="review a.py"), "id": "c1"}),
            {"text": "looks fine", "thought": "hmm"},
            {"text": "The reviewer says it looks fine."},
        ],
    )
    result = await ws.run("get a review", session="s")
    assert result.text == "The reviewer says it looks fine."
    sub_request = model.requests[1]
    assert sub_request.system.startswith("You review code.")
    assert [m.text for m in sub_request.messages if isinstance(m, UserMessage)] == [
        "review a.py"
    ]  # nothing of the caller
    assert {t.name for t in sub_request.tools} == {"read_file", "write_file", "invoke_agent"}  # no workflow tools
    assert tool_results(model.requests[2])[0].output == "looks fine"
    nested = [e for e in result.events if isinstance(e, SubagentEvent)]
    assert nested and {e.call_id for e in nested} == {"c1"} and {e.agent for e in nested} == {"reviewer"}
    assert any(isinstance(e.event, TextEvent) and e.event.text == "looks fine" for e in nested)
    assert "s" in ws.sessions.names() and not [n for n in ws.sessions.names() if n.startswith("subagent-")]


async def test_ENG70_depth_is_capped_at_three(tmp_path):
    _agent(tmp_path, "deep", "Go deeper.")
    nest = tool_step(call("invoke_agent", agent="deep", prompt="deeper"))
    steps = [nest, nest, nest, nest, {"text": "bottom"}, {"text": "2"}, {"text": "1"}, {"text": "root"}]
    ws, model = _workspace(tmp_path, steps)
    result = await ws.run("go", session="s")
    assert result.text == "root"
    depth_error = tool_results(model.requests[4])[0].error
    assert depth_error is not None and "nest at most 3 deep" in depth_error


async def test_ENG70_usage_counts_toward_the_callers_turn_and_session(tmp_path):
    _agent(tmp_path, "helper", "Help.")
    spend = {"usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    ws, _ = _workspace(
        tmp_path,
        [
            {**tool_step(call("invoke_agent", agent="helper", prompt="x")), **spend},
            {"text": "done", **spend},
            {"text": "never"},
        ],
    )
    result = await ws.run("go", session="s", max_cost_usd=1.5)
    assert result.stop_reason == "max_cost"  # $1 own + $1 sub-agent passes $1.50
    assert ws.usage("s").total.cost_usd == 2.0


async def test_ENG30_a_plan_turns_subagent_is_read_only(tmp_path):
    _agent(tmp_path, "writer", "Write files.")
    ws, model = _workspace(
        tmp_path,
        [
            tool_step(call("invoke_agent", agent="writer", prompt="write it")),
            tool_step(call("write_file", path="x.txt", content="x")),
            {"text": "could not"},
            {"text": "plan: nothing written"},
        ],
    )
    await ws.run("plan", session="s", plan=True, approve="allow")
    assert not (tmp_path / "x.txt").exists()
    refusal = tool_results(model.requests[2])[0].error
    assert refusal is not None and refusal.startswith("plan mode: write_file is disabled")
    assert "## Read-only" in model.requests[1].system


async def test_ENG70_permission_requests_inside_reach_the_same_approver(tmp_path):
    _agent(tmp_path, "writer", "Write files.")
    ws, _ = _workspace(
        tmp_path,
        [
            tool_step(call("invoke_agent", agent="writer", prompt="write it")),
            tool_step(call("write_file", path="x.txt", content="x")),
            {"text": "written"},
            {"text": "ok"},
        ],
    )
    approver = ScriptedApprover("allow")
    result = await ws.run("go", session="s", approver=approver)
    assert (tmp_path / "x.txt").read_text() == "x"
    assert [c.name for r in approver.requests for c in r.calls] == ["write_file"]
    wrapped = [e.event for e in result.events if isinstance(e, SubagentEvent)]
    assert any(isinstance(e, PermissionRequest) for e in wrapped)


async def test_ENG12_parallel_invocations_and_stop_reaches_them(tmp_path):
    _agent(tmp_path, "slow", "Be slow.", tools="read_file")
    started = asyncio.Event()

    class Waiting(ScriptedModel):
        async def stream(self, request):
            if request.system.startswith("Be slow."):
                started.set()
                await asyncio.Event().wait()
            async for item in super().stream(request):
                yield item

    model = Waiting(
        [tool_step(call("invoke_agent", agent="slow", prompt="a"), call("invoke_agent", agent="slow", prompt="b"))]
    )
    ws = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "home")
    turn = asyncio.ensure_future(ws.run("go", session="s"))
    await asyncio.wait_for(started.wait(), 5)
    turn.cancel()
    result = await asyncio.wait_for(turn, 5)
    assert result.stop_reason == "cancelled"
    statuses = [e.status for e in result.events if isinstance(e, ToolResultEvent)]
    assert statuses == ["cancelled", "cancelled"]


async def test_list_agents_names_every_agent_but_the_caller(tmp_path):
    _agent(tmp_path, "reviewer", "Review.")
    ws, model = _workspace(tmp_path, [tool_step(call("list_agents")), {"text": "ok"}])
    await ws.run("who?", session="s")
    listing = tool_results(model.requests[1])[0].output or ""
    assert "reviewer: the reviewer" in listing and "blitz:" not in listing


async def test_ENG70_stop_reaches_a_subagent_waiting_for_approval(tmp_path):
    from .conftest import NeverAnswers

    _agent(tmp_path, "writer", "Write files.")
    ws, _ = _workspace(
        tmp_path,
        [
            tool_step(call("invoke_agent", agent="writer", prompt="w")),
            tool_step(call("write_file", path="x.txt", content="x")),
        ],
    )
    approver = NeverAnswers()
    turn = asyncio.ensure_future(ws.run("go", session="s", approver=approver))
    await asyncio.wait_for(approver.asked.wait(), 5)
    assert ws.stop("s")
    result = await asyncio.wait_for(turn, 5)
    assert result.stop_reason == "cancelled" and not (tmp_path / "x.txt").exists()
    [outcome] = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert outcome.error is not None and "stopped (cancelled)" in outcome.error
