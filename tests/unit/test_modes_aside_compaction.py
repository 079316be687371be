"""Plan mode and read-only modes, side questions and compaction,
against the ScriptedModel."""

from __future__ import annotations

import asyncio
import json

import pytest

from blitz_kernel.core.history import (
    AssistantMessage,
    SummaryMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    check_history,
)
from blitz_kernel.engine.events import CompactionEvent, PlanEvent
from blitz_kernel.engine.turn.compaction import automatic_window, manual_window, render_window
from blitz_kernel.engine.turn.modes import PlanReview, go_ahead_prompt
from blitz_kernel.errors import CompactionError, NothingToCompactError

from .conftest import ConcurrencyProbe, call, tool_results, tool_step

# -- plan mode ---------------------------------------------------------------------------------


async def test_ENG30_ENG31_plan_mode_refuses_mutating_tools_with_the_exact_text(make_workspace, tmp_path):
    ws, model = make_workspace(
        [tool_step(call("write_file", path="a.txt", content="x"), call("list_files")), {"text": "plan"}]
    )
    await ws.run("plan it", plan=True, approve="allow")
    refused, listed = tool_results(model.requests[1])
    assert refused.error == (
        "plan mode: write_file is disabled because it could change something. Describe this step in the plan instead."
    )
    assert listed.ok
    assert not (tmp_path / "a.txt").exists()
    assert "## Plan mode" in model.requests[0].system


async def test_ENG32_headless_plan_is_the_turns_answer(make_workspace):
    plan_text = "1. Objective: x\n2. Steps: edit `f` in a.py"
    ws, model = make_workspace([tool_step(call("exit_plan_mode", plan=plan_text)), {"text": "unused"}])
    result = await ws.run("plan", plan=True)
    assert result.text == plan_text
    assert result.plan == plan_text and result.plan_status == "unreviewed"
    assert model.remaining == 1  # the turn ended with the plan, no further model call
    [event] = [e for e in result.events if isinstance(e, PlanEvent)]
    assert event.status == "unreviewed"
    [feedback] = tool_results(ws.session("default").history)
    assert feedback.output.startswith("Nobody can review the plan here (headless)")


async def test_ENG32_approved_plan_ends_the_turn_and_rejected_plan_continues(make_workspace):
    class Reviewer:
        def __init__(self):
            self.answers = [PlanReview(approved=False, reason="use polars"), PlanReview(approved=True)]
            self.seen: list[str] = []

        async def review(self, plan):
            self.seen.append(plan)
            return self.answers.pop(0)

    reviewer = Reviewer()
    ws, model = make_workspace(
        [tool_step(call("exit_plan_mode", plan="v1")), tool_step(call("exit_plan_mode", plan="v2")), {"text": "unused"}]
    )
    result = await ws.run("plan", plan=True, plan_reviewer=reviewer, session="s")
    assert reviewer.seen == ["v1", "v2"]
    rejected = tool_results(model.requests[1])[0]
    assert rejected.output.startswith("The user rejected the plan: use polars.")
    assert result.plan_status == "approved" and result.text == "v2"
    check_history(ws.session("s").history)
    assert go_ahead_prompt("v2").endswith("v2")


async def test_ENG34_enter_plan_mode_applies_from_the_next_call(make_workspace, tmp_path):
    ws, model = make_workspace(
        [
            tool_step(call("enter_plan_mode")),
            tool_step(call("write_file", path="a.txt", content="x")),
            {"text": "ok"},
        ]
    )
    await ws.run("careful", approve="allow")
    assert tool_results(model.requests[2])[-1].error.startswith("plan mode: write_file is disabled")
    assert not (tmp_path / "a.txt").exists()


async def test_todo_tool_keeps_the_list_on_the_session(make_workspace):
    ws, _ = make_workspace(
        [tool_step(call("todo", items=[{"content": "load", "status": "done"}, {"content": "plot"}])), {"text": "ok"}]
    )
    await ws.run("go", session="s")
    assert ws.session("s").todos == [{"content": "load", "status": "done"}, {"content": "plot", "status": "pending"}]


# -- asides ------------------------------------------------------------------------------------


async def test_ENG50_aside_sees_the_history_records_nothing_and_is_read_only(make_workspace, tmp_path):
    ws, model = make_workspace(
        [
            {"text": "The file is data.csv."},
            tool_step(call("write_file", path="x.txt", content="x")),
            {"text": "It was data.csv."},
            {"text": "next answer"},
        ]
    )
    await ws.run("which file?", session="s")
    before = [m.model_dump() for m in ws.session("s").history]
    result = await ws.aside("s", "what file was that?")
    assert result.text == "It was data.csv."
    aside_request = model.requests[1]
    assert [m.kind for m in aside_request.messages] == ["user", "assistant", "user"]
    assert tool_results(model.requests[2])[0].error == (
        "btw is read-only: write_file is disabled because it could change something."
    )
    assert not (tmp_path / "x.txt").exists()
    assert [m.model_dump() for m in ws.session("s").history] == before
    await ws.run("go on", session="s")
    texts = [getattr(m, "text", "") for m in model.requests[3].messages]
    assert "what file was that?" not in texts and "It was data.csv." not in texts


async def test_ENG50_aside_copy_shares_nothing_with_the_session(make_workspace):
    def mutate_the_copy(request):
        request.messages[0].parts[0].text = "CHANGED"
        return {"text": "done"}

    ws, _ = make_workspace([{"text": "a"}, mutate_the_copy])
    await ws.run("original", session="s")
    await ws.aside("s", "q")
    assert ws.session("s").history[0].text == "original"


async def test_ENG51_aside_tokens_count_and_it_runs_during_a_turn(make_workspace):
    probe = ConcurrencyProbe(hold=True)
    usage = {"prompt_tokens": 7, "completion_tokens": 3}
    ws, model = make_workspace(
        [
            {**tool_step(call("sleep", seconds=0.3)), "usage": usage},
            {"text": "aside answer", "usage": usage},
            {"text": "done", "usage": usage},
        ]
    )
    ws.tools.register(probe.tool)
    turn = asyncio.ensure_future(ws.run("work", session="s"))
    await asyncio.wait_for(probe.started.wait(), 5)
    aside = await ws.aside("s", "how is it going?")
    probe.release.set()
    assert aside.text == "aside answer"
    result = await turn
    assert result.text == "done"
    assert ws.usage("s").total.calls == 3 and ws.usage("s").total.input_tokens == 21
    check_history(ws.session("s").history)


async def test_aside_on_a_new_session_answers_from_an_empty_history(make_workspace):
    ws, model = make_workspace([{"text": "hello"}])
    result = await ws.aside("empty", "anything?")
    assert result.text == "hello"
    assert [m.kind for m in model.requests[0].messages] == ["user"]
    assert ws.session("empty").history == []


# -- compaction windows ---------------------------------------------------------------------------


def user(text):
    return UserMessage(parts=[TextPart(text=text)])


def answer(text):
    return AssistantMessage(text=text)


def calls(*ids):
    return AssistantMessage(tool_calls=[ToolCall(id=i, name="list_files", arguments="{}") for i in ids])


def result(call_id):
    return ToolResultMessage(call_id=call_id, name="list_files", output="x")


def test_ENG61_window_ends_before_the_kth_latest_user_prompt():
    history = [
        user("1"),
        calls("a", "b"),
        result("a"),
        result("b"),
        answer("r1"),
        user("2"),
        answer("r2"),
        user("3"),
        answer("r3"),
    ]
    assert manual_window(history, 1) == 7
    assert manual_window(history, 2) == 5
    with pytest.raises(NothingToCompactError):
        manual_window(history, 3)
    with pytest.raises(NothingToCompactError):
        manual_window(history, 10)  # keep larger than the number of turns


def test_ENG61_a_session_that_is_one_turn_has_nothing_to_compact():
    with pytest.raises(NothingToCompactError):
        manual_window([user("only"), calls("a"), result("a"), answer("done")], 1)


def test_ENG61_summaries_are_not_user_turns_and_a_lone_summary_is_nothing_to_compact():
    history = [SummaryMessage(text="earlier"), user("2"), answer("r2")]
    with pytest.raises(NothingToCompactError):
        manual_window(history, 1)


def test_ENG60_automatic_window_never_splits_parallel_calls_from_their_results():
    history = [user("1"), answer("r"), user("2"), calls("a", "b"), result("a"), result("b"), answer("done")]
    split = automatic_window(history, retain_events=2)  # would start at result("b")
    assert split == 3 and isinstance(history[split], AssistantMessage)
    check_history(history[split:])


def test_ENG62_earlier_summaries_are_fed_as_summaries():
    text = render_window([SummaryMessage(text="we loaded sales.csv"), user("plot it"), calls("a"), result("a")])
    assert text.startswith("[Summary of earlier conversation]\nwe loaded sales.csv")
    assert "User: plot it" in text and "Assistant called list_files({})" in text and "Result of list_files: x" in text


# -- compaction through the workspace ----------------------------------------------------------------


async def test_ENG61_to_ENG64_manual_compaction_replaces_the_window_and_keeps_the_archive(make_workspace):
    usage = {"prompt_tokens": 100, "completion_tokens": 20}
    ws, model = make_workspace(
        [
            {"text": "answer one " * 50},
            {"text": "answer two"},
            {"text": "Summary: user asked one.", "usage": usage},
            {"text": "three"},
        ],
        **{"prices": {"scripted": {"input": 1.0, "output": 1.0}}},
    )
    await ws.run("question one", session="s")
    await ws.run("question two", session="s")
    cost_before = ws.usage("s").total.cost_usd
    outcome = await ws.compact("s", focus="the plotting code", keep_turns=1)
    summariser_prompt = model.requests[2].messages[0].text
    assert "User: question one" in summariser_prompt and "question two" not in summariser_prompt
    assert summariser_prompt.endswith("Pay particular attention to: the plotting code")
    assert "Goals and constraints" in model.requests[2].system
    assert outcome.covered_events == 2 and outcome.covered_turns == 1
    assert outcome.tokens_after < outcome.tokens_before
    history = ws.session("s").history
    assert isinstance(history[0], SummaryMessage) and history[0].text == "Summary: user asked one."
    assert [m.kind for m in history] == ["summary", "user", "assistant"]
    assert [m.kind for m in ws.session("s").archive] == ["user", "assistant"]
    assert ws.usage("s").total.calls == 3  # summarisation tokens count
    assert ws.usage("s").total.cost_usd - cost_before == pytest.approx(120 / 1e6)
    await ws.run("question three", session="s")
    assert model.requests[3].messages[0].kind == "summary"


async def test_ENG62_second_compaction_feeds_the_first_summary(make_workspace):
    ws, model = make_workspace([{"text": "a1"}, {"text": "S1"}, {"text": "a2"}, {"text": "a3"}, {"text": "S2"}])
    await ws.run("q1", session="s")
    ws.session("s").history.append(user("q1b"))  # a second turn so there is something to keep
    ws.session("s").history.append(answer("a1b"))
    await ws.compact("s")
    await ws.run("q2", session="s")
    await ws.run("q3", session="s")
    await ws.compact("s")
    prompt = model.requests[4].messages[0].text
    assert prompt.startswith("[Summary of earlier conversation]\nS1")
    assert ws.session("s").history[0].covered_events == 2 + 4


async def test_ENG63_empty_summary_is_an_error_and_history_is_unchanged(make_workspace):
    ws, _ = make_workspace([{"text": "a"}, {"text": "b"}, {"text": "   "}])
    await ws.run("1", session="s")
    await ws.run("2", session="s")
    before = list(ws.session("s").history)
    with pytest.raises(CompactionError, match="empty summary"):
        await ws.compact("s")
    assert ws.session("s").history == before


async def test_ENG61_nothing_to_compact_through_the_workspace(make_workspace):
    ws, _ = make_workspace([{"text": "a"}])
    await ws.run("1", session="s")
    with pytest.raises(NothingToCompactError):
        await ws.compact("s")


async def test_ENG60_automatic_compaction_before_a_step_that_would_pass_the_threshold(make_workspace):
    big = "x" * 4000
    steps = [{"text": big}, {"text": big}, {"text": "SUMMARY"}, {"text": "fine"}]
    probe, _ = make_workspace([])
    schemas = len(json.dumps([probe.tools.get(n).spec().model_dump() for n in probe.tools.names()])) // 4
    ws, model = make_workspace(steps, **{"context.token_threshold": schemas + 1500, "context.retain_events": 1})
    await ws.run("one", session="s")
    await ws.run("two", session="s")
    result = await ws.run("three", session="s")
    assert model.requests[2].system.startswith("You summarise")
    [event] = [e for e in result.events if isinstance(e, CompactionEvent)]
    assert event.automatic and event.covered_events == 4 and event.tokens_after < event.tokens_before
    assert [m.kind for m in model.requests[3].messages] == ["summary", "user"]
    assert result.text == "fine"


async def test_ENG60_tool_schemas_count_toward_the_threshold(make_workspace):
    """The schemas ride on every request; a threshold below them compacts at once."""
    steps = [{"text": "a"}, {"text": "SUMMARY"}, {"text": "b"}]
    ws, model = make_workspace(steps, **{"context.token_threshold": 1000, "context.retain_events": 1})
    await ws.run("short", session="s")
    result = await ws.run("again", session="s")
    assert model.requests[1].system.startswith("You summarise") and result.text == "b"


async def test_ENG60_unknown_model_gets_the_default_window_and_says_so(make_workspace):
    ws, model = make_workspace([{"text": "a"}])
    context = await ws.contexts.lookup(model, ws.config)
    assert (context.tokens, context.source, context.threshold) == (128_000, "default", 102_400)
    assert context.fill(42_000) == "ctx 33 % of 128K"


async def test_ENG05_per_model_context_window_and_generation_settings(make_workspace):
    ws, model = make_workspace(
        [{"text": "a"}], **{"models": {"scripted": {"context_window": 32_000, "temperature": 0.2}}, "max_tokens": 99}
    )
    await ws.run("hi", session="s")
    context = await ws.contexts.lookup(model, ws.config)
    assert (context.tokens, context.source, context.threshold) == (32_000, "models setting", 25_600)
    assert (model.requests[0].temperature, model.requests[0].max_tokens) == (0.2, 99)


async def test_context_window_rejection_compacts_once_and_retries(make_workspace):
    ws, model = make_workspace(
        [
            {"text": "a"},
            {"text": "b"},
            {"error": "context_window", "message": "too long"},
            {"text": "SUMMARY"},
            {"text": "ok"},
        ],
        **{"context.retain_events": 1},
    )
    await ws.run("1", session="s")
    await ws.run("2", session="s")
    result = await ws.run("3", session="s")
    assert result.stop_reason == "end_turn" and result.text == "ok"
    assert model.requests[3].system.startswith("You summarise")


async def test_context_window_rejection_with_nothing_to_compact_ends_with_a_clear_error(make_workspace):
    ws, _ = make_workspace([{"error": "context_window", "message": "prompt is too long"}])
    result = await ws.run("1", session="s")
    assert result.stop_reason == "error"
    assert result.error == "model 'scripted' failed: prompt is too long"


async def test_aside_never_compacts(make_workspace):
    big = "x" * 4000
    ws, model = make_workspace(
        [{"text": big}, {"text": "aside"}], **{"context.token_threshold": 10, "context.retain_events": 1}
    )
    await ws.run("one", session="s")
    ws.session("s").history.append(user("two"))
    ws.session("s").history.append(answer(big))
    result = await ws.aside("s", "quick?")
    assert result.text == "aside" and not [e for e in result.events if isinstance(e, CompactionEvent)]
    assert len(model.requests) == 2  # the turn's step and the aside's, no summarising call


def test_ENG60_automatic_window_keeps_less_when_the_tail_alone_is_too_big():
    big = "y" * 4000  # ≈1000 tokens each
    history = [
        user("1"),
        answer(big),
        user("2"),
        calls("a", "b"),
        result("a"),
        result("b"),
        answer(big),
        user("3"),
        answer(big),
    ]
    split = automatic_window(history, retain_events=20, max_tail_tokens=1200)
    assert split == 7 and isinstance(history[split], UserMessage)
    check_history(history[split:])
    split = automatic_window(history, retain_events=6, max_tail_tokens=2500)
    assert split == 3  # the call and both results stay together


async def test_a_turn_cannot_start_while_compaction_summarises_and_nothing_is_lost(make_workspace):
    from blitz_kernel.errors import SessionBusyError

    gate = asyncio.Event()
    ws, model = make_workspace([{"text": "a1"}, {"text": "a2"}, {"text": "S"}, {"text": "a3"}])
    await ws.run("q1", session="s")
    await ws.run("q2", session="s")
    real_stream = model.stream

    async def slow_stream(request):
        await gate.wait()
        async for item in real_stream(request):
            yield item

    model.stream = slow_stream
    compaction = asyncio.ensure_future(ws.compact("s"))
    await asyncio.sleep(0)
    with pytest.raises(SessionBusyError, match="being compacted"):
        await ws.run("q3", session="s")
    gate.set()
    await compaction
    model.stream = real_stream
    await ws.run("q3", session="s")
    assert [m.kind for m in ws.session("s").history] == ["summary", "user", "assistant", "user", "assistant"]
