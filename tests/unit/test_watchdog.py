"""The watchdog's loop shapes: the same call, cycles of calls, a moving argument, and a
session's window carried from turn to turn (docs/models.md#guard-rails-fallback-stalls-watchdog-budgets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from blitz_kernel.core.history import ToolCall
from blitz_kernel.engine.turn.watchdog import RepeatWatch

from .conftest import call, tool_results, tool_step


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id="c", name=name, arguments=json.dumps(arguments))


def _verdicts(watch: RepeatWatch, calls: list[ToolCall]) -> list[str]:
    return [watch.observe(c) for c in calls]


def test_an_a_b_cycle_warns_then_stops_in_whole_rounds():
    a, b = _call("read_file", path="a.txt"), _call("grep", pattern="x")
    verdicts = _verdicts(RepeatWatch(3, 5), [a, b] * 5)
    assert verdicts[:5] == ["ok"] * 5  # two rounds and a half: not yet
    assert verdicts[5:9] == ["warn"] * 4  # the third round, and the fourth
    assert verdicts[9] == "stop"  # the fifth round's last call


def test_a_three_call_cycle_is_found():
    a, b, c = _call("list_files"), _call("read_file", path="a"), _call("grep", pattern="y")
    watch = RepeatWatch(3, 4)
    verdicts = _verdicts(watch, [a, b, c] * 4)
    assert verdicts[-1] == "stop" and verdicts[:6].count("ok") == 6
    assert watch.found is not None and watch.found.describe("grep", "the agent") == (
        "the agent repeated a cycle of 3 calls: list_files, read_file, grep — 4 times"
    )


def test_a_moving_argument_counts_at_twice_the_thresholds():
    reads = [_call("read_file", path="big.txt", offset=n) for n in range(1, 11)]
    watch = RepeatWatch(3, 5)
    verdicts = _verdicts(watch, reads)
    assert verdicts[:5] == ["ok"] * 5 and verdicts[5:9] == ["warn"] * 4 and verdicts[9] == "stop"
    assert watch.found is not None and "with only 'offset' changing" in watch.found.describe("read_file", "x")


def test_varied_work_is_not_a_loop():
    calls = [_call("read_file", path=f"{n}.txt") for n in range(3)]
    calls += [_call("grep", pattern="a", path="x"), _call("grep", pattern="b", path="y"), _call("list_files")]
    assert set(_verdicts(RepeatWatch(2, 3), calls)) == {"ok"}


async def test_the_window_carries_across_turns_of_a_session_until_a_normal_answer(make_workspace, tmp_path: Path):
    """Run All over cells that each loop up to max_turns: the second cell's loop is stopped
    by the watchdog; a turn that answers normally starts the next one afresh."""
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    a, b = call("read_file", path="a.txt"), call("read_file", path="b.txt")
    loop = [tool_step(a), tool_step(b), tool_step(a)]
    ws, model = make_workspace(
        [*loop, tool_step(b), tool_step(a), tool_step(b)]
        + [tool_step(a), {"text": "fine"}, tool_step(a), {"text": "ok"}],
        **{"limits.repeat_warn": 2, "limits.repeat_stop": 3, "limits.max_turns": 3},
    )
    first = await ws.run("cell 1", session="s")
    assert first.stop_reason == "max_turns"
    second = await ws.run("cell 2", session="s")
    assert second.stop_reason == "watchdog"
    assert second.error == "stopped by the watchdog: the agent repeated a cycle of 2 calls: read_file — 3 times"
    assert len(model.requests) == 6  # 3 + 3: the sixth call (b, the third round) was refused
    third = await ws.run("cell 3", session="s")
    assert third.stop_reason == "end_turn"  # the watchdog's stop started the window afresh
    assert "[watchdog]" not in (tool_results(model.requests[-1])[-1].output or "")
    fourth = await ws.run("cell 4", session="s")
    assert fourth.stop_reason == "end_turn"  # and so did the normal answer: no note on `a`
    assert "[watchdog]" not in (tool_results(model.requests[-1])[-1].output or "")
