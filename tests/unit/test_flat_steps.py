"""A step's own work does not grow with the session: the history's size is kept, not walked;
requests are built from already-valid parts; the tool set's specs are computed once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import for_model, message_chars
from blitz_kernel.engine.store import session
from blitz_kernel.engine.store.checkpoints import CheckpointBook
from blitz_kernel.engine.turn import compaction
from blitz_kernel.models.base import ModelRequest
from blitz_kernel.tools import registry

from .conftest import call, tool_step


def walked(ws: Any, name: str) -> int:
    return sum(message_chars(m) for m in ws.session(name).history)


def assert_model_view_is_whole(ws: Any, name: str) -> None:
    """The history the model reads, kept up incrementally, is what converting it whole gives."""
    kept = ws.session(name).model_history()
    assert kept == for_model(ws.session(name).history)
    assert kept is not ws.session(name).model_history()  # each request gets its own list


async def test_the_running_size_follows_commits_compaction_and_rewind(make_workspace, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("v0")
    ws, _ = make_workspace(
        [
            {"text": "one " * 50},
            tool_step(call("write_file", path="f.txt", content="v1")),
            {"text": "two"},
            {"text": "three"},
            {"text": "SUMMARY of one and two"},
            tool_step(call("write_file", path="f.txt", content="v2")),
            {"text": "four"},
        ]
    )
    for prompt in ("first", "second", "third"):
        await ws.run(prompt, session="s", approve="allow")
        assert ws.session("s").prompt_chars() == walked(ws, "s")
        assert_model_view_is_whole(ws, "s")
    await ws.compact("s", keep_turns=1)
    assert ws.session("s").prompt_chars() == walked(ws, "s")
    assert_model_view_is_whole(ws, "s")
    await ws.run("fourth", session="s", approve="allow")
    assert ws.session("s").prompt_chars() == walked(ws, "s")
    assert_model_view_is_whole(ws, "s")
    await ws.undo("s", turns=1)
    assert ws.session("s").prompt_chars() == walked(ws, "s") > 0
    assert_model_view_is_whole(ws, "s")
    ws.session("s").history = list(ws.session("s").history[:1])  # replaced from outside
    assert_model_view_is_whole(ws, "s")


async def test_a_step_in_a_long_session_does_not_walk_its_history(make_workspace, monkeypatch) -> None:
    turns = 60
    ws, _ = make_workspace(
        [*({"text": f"answer {i}"} for i in range(turns)), tool_step(call("list_files")), {"text": "done"}],
        **{"context.token_threshold": 10_000_000},
    )
    for index in range(turns):
        await ws.run(f"prompt {index}", session="s")
    sized: list[object] = []
    built: list[object] = []

    def counting(message: Any) -> int:
        sized.append(message)
        return message_chars(message)

    converted: list[object] = []

    def converting(messages: list[Any]) -> list[Any]:
        converted.extend(messages)
        return for_model(messages)

    monkeypatch.setattr(compaction, "message_chars", counting)
    monkeypatch.setattr(session, "message_chars", counting)
    monkeypatch.setattr(session, "for_model", converting)
    original_init = ModelRequest.__init__
    monkeypatch.setattr(
        ModelRequest, "__init__", lambda self, **data: built.append(data) or original_init(self, **data)
    )

    result = await ws.run("one more, with a tool", session="s")

    assert result.stop_reason == "end_turn" and len(ws.session("s").history) == 2 * turns + 4
    assert len(sized) <= 4  # the prompt, the response with its result, the answer: not 120+ per step
    assert len(converted) <= 4  # the model's view: only what came since the last step (the answer before it too)
    assert built == []  # two steps, no request re-validated


def test_a_turn_start_visits_only_the_turns_that_just_aged() -> None:
    class Counted(dict):  # type: ignore[type-arg]
        looked_up = 0

        def get(self, key: Any, default: Any = None) -> Any:
            Counted.looked_up += 1
            return super().get(key, default)

        def items(self) -> Any:
            raise AssertionError("every turn's checkpoint was walked")

    book = CheckpointBook()
    for turn in range(1000):
        book.get(turn).before_values = {"x": turn}
    book.start(1000, keep_turns=5)
    assert [t for t, c in book.turns.items() if c.values_kept] == [996, 997, 998, 999, 1000]
    assert book.turns[995].before_values == {} and book.turns[996].before_values == {"x": 996}

    book.turns = Counted(book.turns)
    book.start(1001, keep_turns=5)

    assert Counted.looked_up <= 2  # turn 996 aged out, then the new turn's own checkpoint
    assert not book.turns[996].values_kept and book.turns[997].values_kept


def test_a_tool_set_is_specified_and_sized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from blitz_kernel.tools.files import FILE_TOOLS

    first = registry.tool_set(FILE_TOOLS)
    monkeypatch.setattr(registry.Tool, "spec", lambda self: pytest.fail("specs were built again"))

    again = registry.tool_set(list(FILE_TOOLS))

    assert again is first and first.schema_tokens > 0
    assert [spec.name for spec in first.specs] == [tool.name for tool in FILE_TOOLS]


async def test_a_small_file_is_read_without_a_thread_hop_and_a_large_one_with_it(tmp_path: Path, monkeypatch) -> None:
    from blitz_kernel.tools import files
    from blitz_kernel.tools.registry import ToolContext

    (tmp_path / "small.txt").write_text("alpha\nbeta\n")
    (tmp_path / "large.txt").write_text("x" * 100 + "\n" * files.INLINE_READ_BYTES)
    hops: list[str] = []
    original = files.run_io

    async def counted(work: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(args[1].name)  # the opened path
        return await original(work, *args, **kwargs)

    monkeypatch.setattr(files, "run_io", counted)
    context = ToolContext(workspace=tmp_path)

    small = await files.read_file.func(files.ReadFileArgs(path="small.txt"), context)
    large = await files.read_file.func(files.ReadFileArgs(path="large.txt", limit=1), context)

    assert small == "     1\talpha\n     2\tbeta"
    assert large.startswith("     1\t" + "x" * 100 + "\n[lines 1–1 of ")
    assert hops == ["large.txt"]
