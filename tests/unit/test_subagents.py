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
    result = await ws.run("go", session="s", max_cost_usd=2.5)
    # $1 own + $1 sub-agent, and the next call's expected $1 would pass $2.50: not made
    assert result.stop_reason == "max_cost"
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


async def test_a_subagents_steps_count_toward_the_callers_max_turns(tmp_path):
    """One step counter down the tree: a looping sub-agent ends at the caller's limit, and the
    caller makes no step after it (4 calls in all, not 4 + the sub-agent's own 50)."""
    _agent(tmp_path, "looper", "Loop.", tools="read_file")
    (tmp_path / "a.txt").write_text("a")
    reads = [tool_step(call("read_file", path="a.txt", offset=n)) for n in range(1, 20)]
    ws, model = _workspace(
        tmp_path,
        [tool_step(call("invoke_agent", agent="looper", prompt="loop")), *reads],
        **{"limits.repeat_stop": 100, "limits.repeat_warn": 100},
    )
    result = await ws.run("go", session="s", max_turns=4)
    assert len(model.requests) == 4
    assert result.stop_reason == "max_turns"
    [outcome] = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert outcome.error is not None and "stopped (max_turns)" in outcome.error


async def test_a_stopped_subagent_returns_its_partial_answer_and_the_reason(tmp_path):
    _agent(tmp_path, "writer", "Write.", tools="read_file")
    (tmp_path / "a.txt").write_text("a")
    ws, model = _workspace(
        tmp_path,
        [
            tool_step(call("invoke_agent", agent="writer", prompt="w")),
            tool_step(call("read_file", path="a.txt"), text="Found: a.txt holds 'a'."),
            tool_step(call("read_file", path="a.txt", offset=2)),
            {"text": "the caller goes on"},
        ],
        **{"limits.max_turns": 2},
    )
    result = await ws.run("go", session="s", max_turns=10)
    assert result.text == "the caller goes on"
    error = tool_results(model.requests[-1])[0].error
    assert error is not None
    assert "stopped (max_turns)" in error and "maximum turns reached (2 model calls)" in error
    assert "Found: a.txt holds 'a'." in error


async def test_subagent_tool_calls_are_audited_in_the_callers_session_with_the_agents_name(tmp_path):
    _agent(tmp_path, "reader", "Read.", tools="read_file")
    (tmp_path / "a.txt").write_text("a")
    ws, _ = _workspace(
        tmp_path,
        [
            tool_step(call("invoke_agent", agent="reader", prompt="r")),
            tool_step(call("read_file", path="a.txt")),
            {"text": "read"},
            {"text": "done"},
        ],
    )
    await ws.run("go", session="s")
    answer = tool_results(ws.session("s").history)[0].output
    assert answer == "read\n\n[reader made 1 tool call: read_file]"  # kept in the caller's history
    trail = [(r.session, r.agent, r.tool, r.turn) for r in ws.audit("s")]
    assert trail == [("s", "reader", "read_file", 0), ("s", "blitz", "invoke_agent", 0)]
    ws.sessions.close()
    reopened, _ = _workspace(tmp_path, [])  # a new kernel: the trail is read from the store
    assert [(r.agent, r.tool) for r in reopened.audit("s")] == [("reader", "read_file"), ("blitz", "invoke_agent")]


async def test_an_unpinned_subagent_follows_the_callers_model_override(tmp_path):
    _agent(tmp_path, "helper", "Help.")
    ws, default = _workspace(tmp_path, [{"text": "never"}])
    override = ScriptedModel(
        [tool_step(call("invoke_agent", agent="helper", prompt="h")), {"text": "helped"}, {"text": "done"}]
    )
    result = await ws.run("go", session="s", model=override)
    assert result.text == "done" and len(override.requests) == 3 and not default.requests
    assert override.requests[1].system.startswith("Help.")


async def test_every_agent_reads_project_memory_and_the_reply_language(tmp_path):
    _agent(tmp_path, "helper", "Help.")
    (tmp_path / "AGENTS.md").write_text("Use tabs, never spaces.")
    ws, model = _workspace(
        tmp_path,
        [tool_step(call("invoke_agent", agent="helper", prompt="h")), {"text": "helped"}, {"text": "done"}],
        language="German",
    )
    await ws.run("go", session="s")
    sub_system = model.requests[1].system
    assert sub_system.startswith("Help.")
    assert "Use tabs, never spaces." in sub_system and "Reply in German" in sub_system


async def test_a_subagents_call_is_not_made_when_its_estimate_passes_the_callers_ceiling(tmp_path):
    """The pre-call estimate checks the caller's ceiling too, with the expected output (the
    turn's average so far: one token, $1 here)."""
    _agent(tmp_path, "helper", "Help.")
    spend = {"usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    ws, model = _workspace(
        tmp_path,
        [{**tool_step(call("invoke_agent", agent="helper", prompt="h")), **spend}, {"text": "never"}],
    )
    result = await ws.run("go", session="s", max_cost_usd=1.5)
    assert len(model.requests) == 1  # $1 spent + about $1 expected passes $1.50: not made
    assert result.stop_reason == "max_cost"


async def test_a_subagents_whole_turn_is_nested_in_the_callers_session_and_comes_back_on_resume(tmp_path):
    """Its prompt, steps and tool results (a nested sub-agent's in its own) are kept in the
    result of the call that ran it; the caller's model reads the result only."""
    _agent(tmp_path, "reader", "Read.", tools="read_file, invoke_agent")
    _agent(tmp_path, "helper", "Help.", tools="read_file")
    (tmp_path / "a.txt").write_text("a")
    ws, model = _workspace(
        tmp_path,
        [
            tool_step({**call("invoke_agent", agent="reader", prompt="read a.txt"), "id": "c1"}),
            tool_step(call("read_file", path="a.txt"), text="Reading."),
            tool_step(call("invoke_agent", agent="helper", prompt="check")),
            {"text": "checked"},
            {"text": "a.txt holds a"},
            {"text": "done"},
        ],
    )
    await ws.run("go", session="s")
    last_request = model.requests[-1].messages
    [result] = [m for m in tool_results(ws.session("s").history) if m.call_id == "c1"]
    nested = result.subagent
    assert nested is not None and (nested.agent, nested.stop_reason) == ("reader", "end_turn")
    assert [m.kind for m in nested.messages] == [
        "user", "assistant", "tool_result", "assistant", "tool_result", "assistant"
    ]  # fmt: skip
    assert nested.messages[0].text == "read a.txt" and nested.messages[-1].text == "a.txt holds a"
    deeper = nested.messages[4].subagent
    assert deeper is not None and deeper.agent == "helper" and deeper.messages[-1].text == "checked"
    assert nested.tool_calls() == 2
    # the model reads only the answer: no nested record in what it was sent
    sent = [m for m in tool_results(last_request) if m.call_id == "c1"][0]
    assert sent.to_model_content() == result.to_model_content() and "Reading." not in sent.to_model_content()
    assert sent.subagent is None
    ws.sessions.close()

    reopened, again = _workspace(tmp_path, [{"text": "next"}])
    [stored] = [m for m in tool_results(reopened.session("s").history) if m.call_id == "c1"]
    assert stored.subagent == nested  # reloaded whole from the store
    await reopened.run("and now?", session="s")
    assert all(m.subagent is None for m in tool_results(again.requests[0].messages))


async def test_a_stopped_subagents_turn_is_nested_too(tmp_path):
    _agent(tmp_path, "writer", "Write.", tools="read_file")
    (tmp_path / "a.txt").write_text("a")
    ws, _ = _workspace(
        tmp_path,
        [
            tool_step({**call("invoke_agent", agent="writer", prompt="w"), "id": "c1"}),
            tool_step(call("read_file", path="a.txt"), text="Found it."),
            tool_step(call("read_file", path="a.txt", offset=2)),
            {"text": "the caller goes on"},
        ],
        **{"limits.max_turns": 2},
    )
    await ws.run("go", session="s", max_turns=10)
    [result] = [m for m in tool_results(ws.session("s").history) if m.call_id == "c1"]
    assert result.error is not None and result.subagent is not None
    assert result.subagent.stop_reason == "max_turns"
    assert [m.kind for m in result.subagent.messages][-2:] == ["assistant", "tool_result"]
