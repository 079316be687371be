"""The turn loop against the ScriptedModel, one test (or more) per ENG rule it proves."""

from __future__ import annotations

import asyncio
import json

import pytest

from blitz_kernel.core.history import (
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    check_history,
)
from blitz_kernel.core.usage import Price
from blitz_kernel.engine.events import (
    PermissionDecision,
    PermissionRequest,
    SteerEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    UsageEvent,
)
from blitz_kernel.engine.turn.instructions import VISION_NOTE
from blitz_kernel.engine.turn.options import FrontEnd, RunOptions
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import BlitzError, SessionBusyError, SteerTooLateError, UnknownAgentError
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.tools.registry import ToolKind

from .conftest import (
    ConcurrencyProbe,
    NeverAnswers,
    ScriptedApprover,
    call,
    result_of,
    tool_results,
    tool_step,
)


async def test_ENG10_prompt_is_the_last_user_message_and_answer_is_returned(make_workspace):
    ws, model = make_workspace([{"text": "Hello there."}])
    result = await ws.run("hi")
    assert result.stop_reason == "end_turn"
    assert result.text == "Hello there."
    request = model.requests[0]
    assert isinstance(request.messages[-1], UserMessage)
    assert request.messages[-1].text == "hi"
    assert "Blitz" in request.system
    model.assert_complete()


async def test_multi_turn_history_reaches_the_next_request(make_workspace):
    ws, model = make_workspace([{"text": "first answer"}, {"text": "second answer"}])
    await ws.run("first question", session="s")
    await ws.run("second question", session="s")
    kinds = [(m.kind, getattr(m, "text", "")) for m in model.requests[1].messages]
    assert kinds == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
    ]
    assert ws.session("s").turns == 2


async def test_ENG13_deltas_then_one_repeat_of_the_final_text(make_workspace):
    ws, _ = make_workspace([{"text": "one two three"}])
    result = await ws.run("go")
    texts = [e for e in result.events if isinstance(e, TextEvent)]
    deltas = [e.text for e in texts if e.delta]
    assert len(deltas) == 3 and "".join(deltas) == "one two three"
    repeats = [e for e in texts if e.repeat]
    assert [e.text for e in repeats] == ["one two three"]
    assert texts[-1].repeat


async def test_ENG12_batch_runs_at_most_max_parallel_and_results_keep_call_order(make_workspace):
    probe = ConcurrencyProbe()
    labels = ["a", "b", "c", "d", "e"]
    steps = [
        tool_step(*[call("sleep", seconds=0.05 * (5 - i), label=label) for i, label in enumerate(labels)]),
        {"text": "done"},
    ]
    ws, model = make_workspace(steps, **{"tools.max_parallel": 2})
    ws.tools.register(probe.tool)
    result = await ws.run("sleep five times")
    assert result.stop_reason == "end_turn"
    assert probe.peak == 2
    assert sorted(probe.calls) == labels  # each call exactly once
    results = tool_results(model.requests[1])
    assert [json.loads(r.to_model_content())["result"].split("(")[1] for r in results] == [f"{x})" for x in labels]


async def test_ENG12_cancel_gives_every_call_a_result_and_the_next_turn_works(make_workspace):
    probe = ConcurrencyProbe()
    steps = [
        tool_step(
            call("sleep", seconds=30, label="a"),
            call("sleep", seconds=30, label="b"),
            call("sleep", seconds=30, label="c"),
        ),
        {"text": "after cancel"},
    ]
    ws, model = make_workspace(steps, **{"tools.max_parallel": 1})
    ws.tools.register(probe.tool)
    task = asyncio.ensure_future(ws.run("slow", session="s"))
    await asyncio.wait_for(probe.started.wait(), 5)
    task.cancel()
    result = await task
    assert result.stop_reason == "cancelled"
    assert probe.calls == ["a"]  # queued calls failed fast, never ran
    history = ws.session("s").history
    check_history(history)
    cancelled = tool_results(history)
    assert [m.ok for m in cancelled] == [False, False, False]
    assert all("cancelled" in (m.error or "") for m in cancelled)
    follow_up = await ws.run("again", session="s")
    assert follow_up.text == "after cancel"


async def test_ENG14_max_turns_stops_at_call_n_plus_one(make_workspace):
    steps = [tool_step(call("list_files")) for _ in range(3)]
    ws, model = make_workspace(steps)
    result = await ws.run("loop", max_turns=2, session="s")
    assert result.stop_reason == "max_turns"
    assert result.error == "maximum turns reached (2 model calls)"
    assert len(model.requests) == 2
    check_history(ws.session("s").history)


async def test_ENG14_max_cost_checked_after_every_usage_event(make_workspace):
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 0}
    steps = [
        {**tool_step(call("list_files")), "usage": usage},
        {**tool_step(call("list_files")), "usage": usage},
        {"text": "x"},
    ]
    ws, model = make_workspace(steps, **{"prices": {"scripted": {"input": 1.0, "output": 2.0}}})
    result = await ws.run("spend", max_cost_usd=1.5)
    assert result.stop_reason == "max_cost"
    assert result.error == "maximum cost reached ($2.0000 spent, ceiling $1.5000)"
    assert len(model.requests) == 2
    assert result.usage.cost_usd == pytest.approx(2.0)


async def test_ENG14_timeout_ends_the_turn_with_valid_history(make_workspace):
    probe = ConcurrencyProbe()
    ws, _ = make_workspace([tool_step(call("sleep", seconds=30))])
    ws.tools.register(probe.tool)
    result = await ws.run("slow", timeout=0.2, session="s")
    assert result.stop_reason == "timeout"
    assert result.error == "turn timed out after 0.2 s"
    check_history(ws.session("s").history)


async def test_ENG15_model_error_names_the_model(make_workspace):
    ws, _ = make_workspace([{"error": "unavailable", "message": "HTTP 503 from provider"}])
    result = await ws.run("hi", session="s")
    assert result.stop_reason == "error"
    assert result.error == "model 'scripted' failed: HTTP 503 from provider"
    assert isinstance(result.events[-1], TurnDone)
    history = ws.session("s").history
    assert [m.kind for m in history] == ["user"]


async def test_ENG15_failing_event_handler_aborts_the_turn(make_workspace):
    ws, model = make_workspace([{"text": "never shown"}, {"text": "unused"}])

    def handler(event):
        if isinstance(event, TextEvent):
            raise ValueError("display broke")

    result = await ws.run("hi", on_event=handler)
    assert result.stop_reason == "error"
    assert "event handler failed on text: ValueError: display broke" in result.error
    assert len(model.requests) == 1


async def test_no_model_configured_explains_how_to_set_one(tmp_path):
    from blitz_kernel.engine.workspace import Workspace

    ws = Workspace.open(tmp_path, environ={}, home=tmp_path / "home")
    result = await ws.run("hi")
    assert result.stop_reason == "error"
    assert "BLITZ_MODEL" in result.error and "%blitz_model" in result.error


async def test_ENG16_per_run_model_override_is_for_this_turn_only(make_workspace):
    ws, main = make_workspace([{"text": "from main"}])
    other = ScriptedModel(
        [{"text": "from other", "usage": {"prompt_tokens": 10, "completion_tokens": 10}}], name="other"
    )
    result = await ws.run("hi", model=other, session="s")
    assert result.text == "from other"
    assert ws.model is main
    assert set(ws.usage("s").by_model) == {"other"}  # priced by the model that ran
    assert (await ws.run("again", session="s")).text == "from main"


async def test_ENG16_unknown_agent_is_an_error(make_workspace):
    ws, _ = make_workspace([])
    with pytest.raises(UnknownAgentError, match="unknown agent 'nope'"):
        await ws.run("hi", agent="nope")


async def test_ENG16_user_agent_from_file_runs_with_its_instructions(make_workspace, tmp_path):
    agents = tmp_path / ".blitz" / "agents"
    agents.mkdir(parents=True)
    (agents / "terse.md").write_text(
        "---\nname: terse\ndescription: short answers\ntools: read_file\n---\nAnswer in one word.\n"
    )
    ws, model = make_workspace([{"text": "Yes."}])
    await ws.run("hi", agent="terse")
    assert model.requests[0].system == "Answer in one word.\n\n" + VISION_NOTE  # it can see images
    # exactly the tools it names, plus the root's workflow tools
    assert [t.name for t in model.requests[0].tools] == ["read_file", "todo", "enter_plan_mode", "exit_plan_mode"]


async def test_ENG17_tools_outside_the_allowed_list_are_refused(make_workspace):
    ws, model = make_workspace([tool_step(call("list_files"), call("glob", pattern="*")), {"text": "ok"}])
    await ws.run("look", tools=["glob", "read_file"])
    results = tool_results(model.requests[1])
    assert results[0].error == "list_files isn't among the tools this command allows (glob, read_file)"
    assert results[1].ok


async def test_invalid_arguments_become_an_error_the_model_can_correct(make_workspace):
    ws, model = make_workspace([tool_step(call("read_file", wrong=1)), {"text": "ok"}])
    result = await ws.run("read")
    assert result.stop_reason == "end_turn"
    error = result_of(model, request=1).error
    assert error.startswith("invalid arguments for read_file: path: Field required")


async def test_unknown_tool_is_an_error_result(make_workspace):
    ws, model = make_workspace([tool_step(call("rm_rf")), {"text": "ok"}])
    await ws.run("x")
    error = result_of(model, request=1).error
    assert error.startswith("unknown tool 'rm_rf'")


async def test_ENG23_ENG25_mutating_tool_denied_headless_with_reason_and_nothing_written(make_workspace, tmp_path):
    ws, model = make_workspace([tool_step(call("write_file", path="out.txt", content="x")), {"text": "ok"}])
    result = await ws.run("write")
    assert not (tmp_path / "out.txt").exists()
    error = result_of(model, request=1).error
    assert error == "write_file was denied: approval needed but nobody can answer (headless)"
    decisions = [e for e in result.events if isinstance(e, PermissionDecision)]
    assert [d.decision for d in decisions] == ["deny"]


async def test_ENG25_headless_policy_allow(make_workspace, tmp_path):
    ws, _ = make_workspace(
        [tool_step(call("write_file", path="out.txt", content="x")), {"text": "ok"}], **{"approval.headless": "allow"}
    )
    await ws.run("write")
    assert (tmp_path / "out.txt").read_text() == "x"


async def test_ENG23_approve_option_and_configured_deny(make_workspace, tmp_path):
    steps = [tool_step(call("write_file", path="a.txt", content="a")), {"text": "ok"}]
    ws, _ = make_workspace(steps)
    await ws.run("write", approve="allow")
    assert (tmp_path / "a.txt").exists()
    ws2, model2 = make_workspace(
        [tool_step(call("write_file", path="b.txt", content="b")), {"text": "ok"}],
        **{"approval.tools": {"write_file": "deny"}},
    )
    await ws2.run("write", approve="allow", session="second")  # "default" is held by ws
    assert not (tmp_path / "b.txt").exists()
    error = result_of(model2, request=1).error
    assert error == "write_file is denied by the approval policy"


async def test_ENG24_allow_once_always_and_deny_with_reason(make_workspace, tmp_path):
    def answer(request: PermissionRequest) -> list[PermissionDecision]:
        verdicts = {"a.txt": "allow", "b.txt": "deny"}
        return [
            PermissionDecision(
                call_id=c.id,
                decision=verdicts[c.args["path"]],
                reason="not that one" if c.args["path"] == "b.txt" else None,
            )
            for c in request.calls
        ]

    steps = [
        tool_step(
            call("write_file", path="a.txt", content="a"),
            call("write_file", path="b.txt", content="b"),
            call("list_files"),
        ),
        {"text": "ok"},
    ]
    ws, model = make_workspace(steps)
    approver = ScriptedApprover(answer)
    result = await ws.run("write two", approver=approver, session="s")
    assert len(approver.requests) == 1  # one request per batch, read-only call not in it
    assert [c.name for c in approver.requests[0].calls] == ["write_file", "write_file"]
    assert (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()
    results = tool_results(model.requests[1])
    assert results[1].error == "write_file was denied: not that one"
    assert result.stop_reason == "end_turn"

    ws.model = ScriptedModel(
        [
            tool_step(call("write_file", path="c.txt", content="c")),
            tool_step(call("write_file", path="d.txt", content="d")),
            {"text": "ok"},
        ]
    )
    always = ScriptedApprover("always")
    await ws.run("write more", approver=always, session="s")
    assert (tmp_path / "c.txt").exists() and (tmp_path / "d.txt").exists()
    assert len(always.requests) == 1  # the second write needed no question


async def test_ENG24_missing_decision_is_a_denial(make_workspace, tmp_path):
    ws, model = make_workspace([tool_step(call("write_file", path="a.txt", content="a")), {"text": "ok"}])
    await ws.run("write", approver=ScriptedApprover(lambda request: []))
    assert not (tmp_path / "a.txt").exists()
    error = result_of(model, request=1).error
    assert "no decision" in error


async def test_ENG26_pending_request_expires_as_denial(make_workspace, tmp_path):
    ws, model = make_workspace(
        [tool_step(call("write_file", path="a.txt", content="a")), {"text": "ok"}], **{"approval.timeout_s": 0.05}
    )
    result = await ws.run("write", approver=NeverAnswers())
    assert result.stop_reason == "end_turn"
    error = result_of(model, request=1).error
    assert "expired" in error


async def test_ENG40_steer_message_rides_on_the_next_tool_result(make_workspace):
    probe = ConcurrencyProbe(hold=True)
    ws, model = make_workspace([tool_step(call("sleep", seconds=0.1)), {"text": "noted"}])
    ws.tools.register(probe.tool)
    task = asyncio.ensure_future(ws.run("go", session="s"))
    await asyncio.wait_for(probe.started.wait(), 5)
    ws.steer("s", "use pandas")
    probe.release.set()
    result = await task
    delivered = result_of(model, request=1)
    assert json.loads(delivered.to_model_content())["message_from_user"] == "use pandas"
    assert [e.count for e in result.events if isinstance(e, SteerEvent)] == [1]
    assert result.leftovers == []


async def test_ENG41_ENG42_leftovers_and_steer_too_late(make_workspace):
    def steer_while_the_model_answers(request):
        ws.steer("s", "one")
        ws.steer("s", "two")
        return {"text": "done"}

    ws, model = make_workspace([steer_while_the_model_answers])
    with pytest.raises(SteerTooLateError):
        ws.steer("s", "too early")
    result = await ws.run("go", session="s")
    assert result.leftovers == ["one", "two"]
    assert [e.leftovers for e in result.events if isinstance(e, TurnDone)] == [["one", "two"]]


async def test_second_turn_in_a_running_session_is_refused(make_workspace):
    probe = ConcurrencyProbe(hold=True)
    ws, _ = make_workspace([tool_step(call("sleep", seconds=0.2)), {"text": "done"}])
    ws.tools.register(probe.tool)
    task = asyncio.ensure_future(ws.run("go", session="s"))
    await asyncio.wait_for(probe.started.wait(), 5)
    with pytest.raises(SessionBusyError):
        await ws.run("again", session="s")
    probe.release.set()
    await task


async def test_ENG80_ENG81_usage_and_cost_with_cache(make_workspace):
    usage = {"prompt_tokens": 1000, "cached_tokens": 400, "completion_tokens": 100}
    ws, _ = make_workspace(
        [{"text": "x", "usage": usage}],
        **{"prices": {"scrip": {"input": 2.0, "cached_input": 0.5, "output": 10.0}}},
    )
    result = await ws.run("hi", session="s")
    expected = (600 * 2.0 + 400 * 0.5 + 100 * 10.0) / 1e6
    assert result.usage.cost_usd == pytest.approx(expected)
    assert result.usage.priced
    [event] = [e for e in result.events if isinstance(e, UsageEvent)]
    assert event.cost_usd == pytest.approx(expected)
    assert ws.usage("s").total.describe_cost() == f"${expected:.4f}"


async def test_ENG81_unpriced_is_never_a_silent_zero(make_workspace):
    ws, _ = make_workspace([{"text": "x", "usage": {"prompt_tokens": 10, "completion_tokens": 1}}])
    result = await ws.run("hi")
    assert result.usage.priced is False
    assert result.usage.describe_cost() == "unpriced"


async def test_events_cover_a_tool_round_trip_in_order(make_workspace, tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    ws, _ = make_workspace(
        [tool_step(call("read_file", path="data.csv"), text="Reading."), {"text": "It has columns a and b."}]
    )
    result = await ws.run("what is in data.csv?")
    kinds = [e.type for e in result.events if not (isinstance(e, TextEvent) and e.delta)]
    assert kinds == ["turn_started", "text", "usage", "tool_call", "tool_result", "text", "usage", "turn_done"]
    [tool_result] = [e for e in result.events if isinstance(e, ToolResultEvent)]
    assert tool_result.ok and "1,2" in tool_result.preview
    [tool_call] = [e for e in result.events if isinstance(e, ToolCallEvent)]
    assert tool_call.args == {"path": "data.csv"}
    history = ws.session("default").history
    assert [type(m) for m in history] == [UserMessage, AssistantMessage, ToolResultMessage, AssistantMessage]


async def test_tool_that_raises_unexpectedly_becomes_an_error_result(make_workspace):
    from blitz_kernel.tools.registry import Tool

    from .conftest import SleepArgs

    async def broken(args, ctx):
        raise RuntimeError("boom")

    ws, model = make_workspace([tool_step(call("broken", seconds=0)), {"text": "ok"}])
    ws.tools.register(Tool("broken", "breaks", SleepArgs, ToolKind.READ_ONLY, broken))
    result = await ws.run("x")
    assert result.stop_reason == "end_turn"
    error = result_of(model, request=1).error
    assert error == "broken failed: RuntimeError: boom"


async def test_graceful_stop_ends_after_the_current_step(make_workspace):
    probe = ConcurrencyProbe(hold=True)
    ws, model = make_workspace([tool_step(call("sleep", seconds=0.1)), {"text": "never"}])
    ws.tools.register(probe.tool)
    task = asyncio.ensure_future(ws.run("go", session="s"))
    await asyncio.wait_for(probe.started.wait(), 5)
    assert ws.stop("s")
    probe.release.set()
    result = await task
    assert result.stop_reason == "cancelled"
    assert len(model.requests) == 1
    check_history(ws.session("s").history)


def test_price_lookup_prefers_exact_then_longest_prefix():
    from blitz_kernel.core.usage import PriceBook

    book = PriceBook(
        {
            "gpt-4": Price(input=1, output=1),
            "gpt-4o": Price(input=2, output=2),
            "gpt-4o-mini": Price(input=3, output=3),
        },
        lambda m: Price(input=9, output=9) if m == "other" else None,
    )
    assert book.lookup("gpt-4o-mini").input == 3
    assert book.lookup("gpt-4o-2024").input == 2
    assert book.lookup("gpt-4-turbo").input == 1
    assert book.lookup("other").input == 9
    assert book.lookup("nothing") is None


# -- regressions found in review ------------------------------------------------------------


async def test_two_runs_started_together_in_one_session_cannot_both_run(make_workspace):
    ws, _ = make_workspace([{"text": "one"}, {"text": "two"}])
    outcomes = await asyncio.gather(ws.run("one", session="s"), ws.run("two", session="s"), return_exceptions=True)
    assert sum(isinstance(o, SessionBusyError) for o in outcomes) == 1
    check_history(ws.session("s").history)
    assert [m.kind for m in ws.session("s").history] == ["user", "assistant"]


async def test_duplicate_call_ids_from_a_provider_still_give_every_call_its_result(make_workspace):
    ws, model = make_workspace(
        [tool_step({**call("list_files"), "id": "same"}, {**call("glob", pattern="*"), "id": "same"}), {"text": "ok"}]
    )
    result = await ws.run("x", session="s")
    assert result.stop_reason == "end_turn"
    check_history(ws.session("s").history)
    assert [r.call_id for r in model.requests[1].messages if isinstance(r, ToolResultMessage)] == ["same", "same~2"]


async def test_ENG14_turn_timeout_stops_blocking_python(make_workspace):
    from dataclasses import dataclass, field

    @dataclass
    class Kernel:
        user_ns: dict = field(default_factory=dict)

    ws, _ = make_workspace([tool_step(call("run_python", code="while True:\n    pass")), {"text": "unused"}])
    started = asyncio.get_running_loop().time()
    result = await ws.run("spin", timeout=0.5, approve="allow", kernel=Kernel(), session="s")
    assert result.stop_reason == "timeout"
    assert asyncio.get_running_loop().time() - started < 5
    check_history(ws.session("s").history)


async def test_stop_ends_a_pending_permission_request_as_denied(make_workspace, tmp_path):
    approver = NeverAnswers()
    ws, _ = make_workspace([tool_step(call("write_file", path="a.txt", content="a")), {"text": "unused"}])
    turn = asyncio.ensure_future(ws.run("write", approver=approver, session="s"))
    await asyncio.wait_for(approver.asked.wait(), 5)
    ws.stop("s")
    result = await asyncio.wait_for(turn, 5)
    assert result.stop_reason == "cancelled"
    assert not (tmp_path / "a.txt").exists()
    [denied] = tool_results(ws.session("s").history)
    assert "stopped before a decision" in denied.error


async def test_ENG26_max_pending_counts_every_session_of_the_kernel():
    """One session only ever has one request open, so the limit spans the workspace's gates."""
    from blitz_kernel.engine.events import PendingCall
    from blitz_kernel.engine.safety.approval import ApprovalGate, PendingApprovals
    from blitz_kernel.errors import ApprovalOverflowError

    release = asyncio.Event()

    class SlowApprover:
        interactive = True

        async def decide(self, request):
            await release.wait()
            return [PermissionDecision(call_id=c.id, decision="allow") for c in request.calls]

    waiting = PendingApprovals()
    first_session = ApprovalGate(SlowApprover(), max_pending=1, waiting=waiting)
    other_session = ApprovalGate(SlowApprover(), max_pending=1, waiting=waiting)
    first = asyncio.ensure_future(
        first_session.decide(first_session.new_request([PendingCall(id="a", name="write_file")]))
    )
    await asyncio.sleep(0)
    with pytest.raises(ApprovalOverflowError):
        await other_session.decide(other_session.new_request([PendingCall(id="b", name="write_file")]))
    release.set()
    assert (await first)["a"].decision == "allow"
    assert waiting.pending_approvals == 0


async def test_ENG26_workspace_gates_share_one_counter(make_workspace):
    ws, _ = make_workspace([{"text": "ok"}])
    setups = [await ws.builder.build(ws.session(name), RunOptions(), FrontEnd()) for name in ("a", "b")]
    assert setups[0].runtime.gate.waiting is setups[1].runtime.gate.waiting is ws.waiting_approvals


async def test_ENG34_enter_plan_mode_restricts_later_calls_of_its_own_batch(make_workspace, tmp_path):
    ws, model = make_workspace(
        [tool_step(call("enter_plan_mode"), call("write_file", path="a.txt", content="x")), {"text": "ok"}]
    )
    await ws.run("careful", approve="allow")
    assert not (tmp_path / "a.txt").exists()
    assert tool_results(model.requests[-1])[-1].error.startswith("plan mode: write_file is disabled")
    assert "## Plan mode" in model.requests[1].system


async def test_ENG41_steer_during_a_batch_that_ends_the_turn_is_a_leftover(make_workspace):
    def steer_then_plan(request):
        ws.steer("s", "also check nulls")
        return tool_step(call("exit_plan_mode", plan="1. do it"))

    ws, _ = make_workspace([steer_then_plan])
    result = await ws.run("plan", plan=True, session="s")
    assert result.leftovers == ["also check nulls"]


async def test_ENG06_configuring_a_limit_keeps_the_model(make_workspace):
    ws, model = make_workspace([{"text": "step one"}, {"text": "step two"}])
    await ws.run("1")
    ws.configure(**{"limits.max_turns": 5})
    assert ws.model is model
    assert (await ws.run("2")).text == "step two"


async def test_ENG42_steer_while_the_turn_ends_is_refused_not_lost(make_workspace):
    """Regression: a steer sent while the end-of-turn handler runs was accepted and lost."""
    ws, _ = make_workspace([{"text": "done"}])
    refused: list[str] = []

    def on_event(event):
        if isinstance(event, TurnDone):
            try:
                ws.steer("s", "late")
            except SteerTooLateError as exc:
                refused.append(str(exc))

    result = await ws.run("go", session="s", on_event=on_event)
    assert result.leftovers == [] and result.dropped == []
    assert refused and "next prompt" in refused[0]


async def test_GR04_watchdog_warns_then_stops_a_looping_agent(make_workspace, tmp_path):
    (tmp_path / "a.txt").write_text("same\n")
    same = call("read_file", path="a.txt")
    steps = [tool_step(same) for _ in range(4)] + [{"text": "never"}]
    ws, model = make_workspace(steps, **{"limits.repeat_warn": 2, "limits.repeat_stop": 4})
    result = await ws.run("loop", session="s")
    assert result.stop_reason == "watchdog"
    assert result.error == "stopped by the watchdog: read_file was called 4 times in a row with the same arguments"
    assert len(model.requests) == 4  # the fourth call was refused, no fifth step
    first, second, third = (tool_results(model.requests[i])[-1] for i in (1, 2, 3))
    assert "[watchdog]" not in (first.output or "")
    assert "[watchdog] you called read_file 2 times" in (second.output or "")
    assert "3 times" in (third.output or "")
    [last] = tool_results(ws.session("s").history)[-1:]
    assert last.error is not None and "limits.repeat_stop" in last.error
    statuses = [e.status for e in result.events if e.type == "tool_result"]
    assert statuses == ["ok", "ok", "ok", "blocked"]


async def test_GR04_different_arguments_reset_the_count(make_workspace, tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    a, b = call("read_file", path="a.txt"), call("read_file", path="b.txt")
    ws, _ = make_workspace(
        [tool_step(a), tool_step(a), tool_step(b), tool_step(a), tool_step(a), {"text": "fine"}],
        **{"limits.repeat_warn": 2, "limits.repeat_stop": 3},
    )
    result = await ws.run("alternate", session="s")
    assert result.stop_reason == "end_turn" and result.text == "fine"


PRICED = Price(input=1.0, output=1_000_000.0)
"""Output at $1 a token, so two tokens are a visible spend; input cheap, so the pre-call
estimate of a few thousand prompt tokens stays far below a dollar."""


async def test_GR05_session_budget_trips_refuses_later_turns_and_add_budget_lifts_it(tmp_path):
    steps = [{"text": "a", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}] * 3
    model = ScriptedModel(steps, price=PRICED)
    ws = Workspace.open(
        tmp_path, model=model, overrides={"limits.max_cost_usd_session": 3.0}, environ={}, home=tmp_path / "h"
    )
    first = await ws.run("one", session="s")
    assert first.stop_reason == "end_turn" and first.usage.cost_usd == pytest.approx(2.0)
    second = await ws.run("two", session="s")
    assert second.stop_reason == "max_cost" and "session budget of $3.00 is spent" in (second.error or "")
    assert ws.session("s").budget_tripped
    history_before = list(ws.session("s").history)
    refused = await ws.run("three", session="s")
    assert refused.stop_reason == "max_cost" and "--add-budget" in (refused.error or "")
    assert len(model.requests) == 2  # refused before any model call
    assert ws.session("s").history == history_before  # and nothing recorded
    left = ws.add_budget("s", 10.0)
    assert left == pytest.approx(9.0, abs=1e-4) and not ws.session("s").budget_tripped
    assert (await ws.run("four", session="s")).stop_reason == "end_turn"


async def test_GR06_a_call_that_would_pass_the_turn_ceiling_is_not_made(tmp_path):
    model = ScriptedModel([{"text": "never"}], price=Price(input=1.0, output=1.0))
    ws = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "h")
    result = await ws.run("x" * 40_000, session="s", max_cost_usd=0.001)  # ≈ 10K+ tokens ≈ $0.01
    assert result.stop_reason == "max_cost"
    assert result.error is not None and result.error.startswith(
        "maximum cost reached: the next call would cost about $0.01"
    )
    assert model.requests == []


def test_GR07_run_options_refuse_non_finite_numbers():
    from blitz_kernel.core.numbers import RunOptionError

    for bad in (
        {"max_cost_usd": float("nan")},
        {"timeout_s": float("inf")},
        {"timeout_s": 1e309},
        {"max_turns": 0},
        {"tools": ()},
    ):
        with pytest.raises(RunOptionError):
            RunOptions(**bad)


async def test_ENG02_project_memory_layers_in_a_fixed_order_each_marked(tmp_path):
    home = tmp_path / "home"
    (home / ".blitz").mkdir(parents=True)
    (home / ".blitz" / "AGENTS.md").write_text("Prefer polars.\n")
    (tmp_path / "AGENTS.md").write_text("Data lives in data/.\n")
    (tmp_path / "BLITZ.md").write_text("Never touch raw/.\n")
    model = ScriptedModel([{"text": "ok"}, {"text": "ok"}], vision=False)
    ws = Workspace.open(tmp_path, model=model, overrides={"language": "German"}, environ={}, home=home)
    await ws.run("hi", session="s")
    system = model.requests[0].system
    order = [
        system.index(marker)
        for marker in (
            "## Project memory (from ~/.blitz/AGENTS.md)\nPrefer polars.",
            "## Project memory (from AGENTS.md)\nData lives in data/.",
            "## Project memory (from BLITZ.md)\nNever touch raw/.",
            "## Language\nReply in German",
        )
    ]
    assert order == sorted(order)
    assert "## Images" not in system  # a blind model is not told about view_image
    assert [m.label for m in ws.memory()] == ["~/.blitz/AGENTS.md", "AGENTS.md", "BLITZ.md"]
    (tmp_path / "BLITZ.md").write_bytes(b"\xff\xfe not text")  # unreadable: skipped, never fatal
    await ws.run("again", session="s")
    assert "from BLITZ.md" not in model.requests[1].system


async def test_ENG10_ENG11_attachments_go_ahead_of_the_prompt_images_first(tmp_path):
    from blitz_kernel.core.attachments import Attachment
    from blitz_kernel.core.history import ImagePart, TextPart

    figure = Attachment(kind="figure", name="fig", image=ImagePart(data_base64="iVBORw0KGgo="))
    frame = Attachment(kind="variable", name="df", text="DataFrame 3×2")
    for vision in (True, False):
        model = ScriptedModel([{"text": "ok"}], vision=vision)
        ws = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "h")
        result = await ws.run("explain @df and @fig", session=f"s{vision}", attachments=[frame, figure])
        parts = model.requests[0].messages[-1].parts
        text = parts[-1]
        assert isinstance(text, TextPart) and text.text.endswith("explain @df and @fig")
        assert text.text.startswith("[Attachment variable @df]\nDataFrame 3×2\n[End of @df]")
        if vision:
            assert isinstance(parts[0], ImagePart) and len(parts) == 2
        else:
            assert len(parts) == 1 and "left out because this model cannot see images" in text.text
        started = result.events[0]
        assert started.type == "turn_started"
        assert [(a.kind, a.name) for a in started.attachments] == [("variable", "df"), ("figure", "fig")]


async def test_continue_runs_more_steps_of_a_turn_that_stopped_at_max_turns(make_workspace, tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    ws, model = make_workspace(
        [tool_step(call("read_file", path="a.txt")), tool_step(call("list_files")), {"text": "done"}]
    )
    first = await ws.run("go", session="s", max_turns=1)
    assert first.stop_reason == "max_turns"
    turns_before = len(model.requests)
    result = await ws.continue_turn("s", RunOptions(max_turns=5))
    assert result.stop_reason == "end_turn" and result.text == "done"
    assert len(model.requests) == turns_before + 2
    prompts = [m for m in ws.session("s").history if m.kind == "user"]
    assert len(prompts) == 1  # no new user message
    done = result.events[-1]
    assert done.type == "turn_done" and done.context_window == 128_000
    with pytest.raises(BlitzError, match="no turn to continue"):
        await ws.continue_turn("s")


async def test_timeout_covers_the_lookups_before_the_first_model_call(tmp_path):
    """A model lookup that hangs (a provider library loading, a stuck server)
    ends at --timeout, as `timeout`, with nothing recorded."""
    import threading

    release = threading.Event()

    class SlowToDescribe(ScriptedModel):
        def context_window(self):
            release.wait(10)  # runs in a worker thread, like litellm's model map
            return None

    model = SlowToDescribe([{"text": "never"}])
    ws = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "h")
    try:
        result = await asyncio.wait_for(ws.run("hi", session="s", timeout=0.3), 5)
    finally:
        release.set()
    assert result.stop_reason == "timeout"
    assert result.error == "turn timed out after 0.3 s, before its first model call (looking up the model)"
    assert model.requests == [] and ws.session("s").history == [] and ws.session("s").turns == 0
