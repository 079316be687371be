"""A feature's hook into the turn: watchers are called at the loop's fixed points — before each
model call, after each tool result, at the end — in that order, for every turn."""

from __future__ import annotations

from pathlib import Path

from blitz_kernel.core.history import ToolResultMessage
from blitz_kernel.engine.turn.setup import TurnResult, TurnSetup
from tests.helpers.workspaces import scripted_workspace

from .conftest import call, tool_step


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def before_call(self, setup: TurnSetup, step: int) -> None:
        self.seen.append(f"call {step}")

    async def after_result(self, setup: TurnSetup, result: ToolResultMessage) -> None:
        self.seen.append(f"result {result.call_id} {'ok' if result.error is None else 'error'}")

    async def at_end(self, setup: TurnSetup, result: TurnResult) -> None:
        self.seen.append(f"end {result.stop_reason}")


async def test_watchers_see_each_call_each_result_and_the_end_in_order(tmp_path: Path) -> None:
    steps = [tool_step(call("list_files"), call("read_file", path="missing.txt")), {"text": "done"}]
    ws, _ = scripted_workspace(tmp_path, steps)
    recorder = Recorder()
    ws.builder.watchers.append(recorder)
    result = await ws.run("look around", session="s")
    assert result.stop_reason == "end_turn"
    first, second = (m.call_id for m in ws.session("s").history if isinstance(m, ToolResultMessage))
    assert recorder.seen == ["call 1", f"result {first} ok", f"result {second} error", "call 2", "end end_turn"]


async def test_a_watcher_that_raises_before_a_call_ends_the_turn_with_a_valid_history(tmp_path: Path) -> None:
    class Refuses(Recorder):
        async def before_call(self, setup: TurnSetup, step: int) -> None:
            raise RuntimeError("no more calls")

    ws, model = scripted_workspace(tmp_path, [{"text": "never asked"}])
    watcher = Refuses()
    ws.builder.watchers.append(watcher)
    result = await ws.run("hi", session="s")
    assert result.stop_reason == "error" and "no more calls" in (result.error or "")
    assert model.requests == [] and watcher.seen == ["end error"]
