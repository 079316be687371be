"""Whole-history comparisons: what a turn leaves in the session, message by
message, compared with the expected list — not spot checks of one field."""

from __future__ import annotations

import asyncio
import json

from blitz_kernel.core.history import (
    HISTORY_ADAPTER,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    user_prompt,
)
from blitz_kernel.engine.turn.batch import CANCELLED_RESULT

from .conftest import ConcurrencyProbe, ScriptedApprover, call, tool_step


def _call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))


async def test_a_read_write_and_denied_turn_leaves_exactly_this_history(make_workspace, tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\n")
    ws, _ = make_workspace(
        [
            tool_step(
                {**call("read_file", path="notes.txt"), "id": "r1"},
                {**call("write_file", path="out.txt", content="x"), "id": "w1"},
                text="Reading first.",
            ),
            {"text": "Read it; the write was denied."},
        ]
    )
    approver = ScriptedApprover("deny", reason="not now")
    result = await ws.run("look at notes", session="s", approver=approver)

    assert result.stop_reason == "end_turn"
    read_output = ws.session("s").history[2].output
    assert read_output is not None and "alpha" in read_output
    expected = [
        user_prompt("look at notes"),
        AssistantMessage(
            text="Reading first.",
            tool_calls=[
                _call("r1", "read_file", path="notes.txt"),
                _call("w1", "write_file", path="out.txt", content="x"),
            ],
            model="scripted",
        ),
        ToolResultMessage(call_id="r1", name="read_file", output=read_output),
        ToolResultMessage(call_id="w1", name="write_file", error="write_file was denied: not now"),
        AssistantMessage(text="Read it; the write was denied.", model="scripted"),
    ]
    assert ws.session("s").history == expected
    assert not (tmp_path / "out.txt").exists()
    # and the history survives a save/load round trip unchanged (the durable store relies on it)
    assert HISTORY_ADAPTER.validate_json(HISTORY_ADAPTER.dump_json(expected)) == expected


async def test_a_steered_turn_records_the_message_where_it_arrived(make_workspace):
    probe = ConcurrencyProbe(hold=True)
    ws, _ = make_workspace(
        [tool_step({**call("sleep", seconds=0.2, label="a"), "id": "c1"}), {"text": "switched to pandas"}]
    )
    ws.tools.register(probe.tool)
    turn = asyncio.ensure_future(ws.run("analyse", session="s"))
    await asyncio.wait_for(probe.started.wait(), 5)
    ws.steer("s", "use pandas")
    probe.release.set()
    await asyncio.wait_for(turn, 5)
    expected = [
        user_prompt("analyse"),
        AssistantMessage(tool_calls=[_call("c1", "sleep", seconds=0.2, label="a")], model="scripted"),
        ToolResultMessage(call_id="c1", name="sleep", output="slept 0.2 (a)", message_from_user="use pandas"),
        AssistantMessage(text="switched to pandas", model="scripted"),
    ]
    assert ws.session("s").history == expected


async def test_a_stopped_turn_leaves_every_call_with_a_result(make_workspace):
    probe = ConcurrencyProbe()
    ws, _ = make_workspace(
        [
            tool_step(
                {**call("sleep", seconds=30, label="long"), "id": "c1"},
                {**call("sleep", seconds=30, label="b"), "id": "c2"},
            )
        ],
        **{"tools.max_parallel": 1},
    )
    ws.tools.register(probe.tool)
    turn = asyncio.ensure_future(ws.run("wait", session="s"))
    await asyncio.wait_for(probe.started.wait(), 5)
    turn.cancel()
    result = await asyncio.wait_for(turn, 5)
    assert result.stop_reason == "cancelled"
    expected = [
        user_prompt("wait"),
        AssistantMessage(
            tool_calls=[_call("c1", "sleep", seconds=30, label="long"), _call("c2", "sleep", seconds=30, label="b")],
            model="scripted",
        ),
        ToolResultMessage(call_id="c1", name="sleep", error=CANCELLED_RESULT),
        ToolResultMessage(call_id="c2", name="sleep", error=CANCELLED_RESULT),
    ]
    assert ws.session("s").history == expected
    statuses = {e.id: e.status for e in result.events if e.type == "tool_result"}
    assert statuses == {"c1": "cancelled", "c2": "cancelled"}
