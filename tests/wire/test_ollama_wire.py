"""The engine over litellm's real Ollama chat path (`ollama_chat/<model>` with an api_base)
against the fake Ollama, which refuses what Ollama refuses (unknown model, tools to a model
without tool support, tool messages without a call, string arguments): every step also
proves the history blitz sent was valid for Ollama."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models import ollama_show
from tests.fake_ollama import FakeOllamaServer
from tests.helpers.workspaces import open_workspace

MODEL = "ollama_chat/qwen3:8b"
VISION_MODEL = "ollama_chat/gemma3:4b"


@pytest.fixture(autouse=True)
def fresh_model_details() -> None:
    ollama_show.forget()  # each test's server is asked again


@pytest.fixture
def ollama() -> Iterator[FakeOllamaServer]:
    models = {"qwen3:8b": {"completion", "tools"}, "gemma3:4b": {"completion", "tools", "vision"}}
    server = FakeOllamaServer(models=models).start()
    try:
        yield server
    finally:
        server.stop()


def ollama_workspace(
    root: Path, server: FakeOllamaServer, *, model: str = MODEL, dotted: dict[str, Any] | None = None, **overrides: Any
) -> Workspace:
    """A workspace on `model` at the fake; `dotted` holds overrides like "context.retain_events"."""
    settings: dict[str, Any] = {"api_base": server.base_url, "model_retries": 0, **overrides, **(dotted or {})}
    return open_workspace(root, model, overrides=settings)


@pytest.fixture
def workspace(ollama: FakeOllamaServer, tmp_path: Path) -> Workspace:
    return ollama_workspace(tmp_path, ollama)


def messages(server: FakeOllamaServer, index: int = -1) -> list[dict[str, Any]]:
    return server.chat_bodies()[index]["messages"]


async def test_parallel_tool_calls_over_several_steps_and_the_next_turn(
    workspace: Workspace, ollama: FakeOllamaServer, tmp_path: Path
):
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    ollama.enqueue(
        {
            "thinking": "Two files.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "read_file", "arguments": {"path": "b.txt"}},
            ],
            "usage": {"prompt": 300, "eval": 20},
        },
        {"tool_calls": [{"name": "list_files", "arguments": {}}], "usage": {"prompt": 400, "eval": 5}},
        {"text": "a is alpha, b is beta.", "usage": {"prompt": 500, "eval": 7}},
        {"text": "Still alpha."},
    )
    result = await workspace.run("what is in a.txt and b.txt?", session="s")
    assert result.text == "a is alpha, b is beta.", result.error
    second = messages(ollama, 1)
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    calls = second[2]["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == [{"path": "a.txt"}, {"path": "b.txt"}]
    assert "alpha" in second[3]["content"] and "beta" in second[4]["content"]
    assert {t["function"]["name"] for t in ollama.chat_bodies()[0]["tools"]} >= {"read_file", "list_files"}
    assert ollama.chat_bodies()[0]["stream"] is True
    assert result.usage.input_tokens == 1200 and result.usage.output_tokens == 32
    again = await workspace.run("and now?", session="s")
    assert again.text == "Still alpha.", again.error


async def test_an_image_reaches_a_vision_model(ollama: FakeOllamaServer, tmp_path: Path):
    from tests.unit.test_images import tiny_png

    (tmp_path / "chart.png").write_bytes(tiny_png())
    workspace = ollama_workspace(tmp_path, ollama, model=VISION_MODEL)
    assert workspace.model.supports_vision()  # type: ignore[attr-defined]
    ollama.enqueue(
        {"tool_calls": [{"name": "view_image", "arguments": {"path": "chart.png"}}]}, {"text": "A tiny red image."}
    )
    result = await workspace.run("look at chart.png")
    assert result.text == "A tiny red image.", result.error
    last = messages(ollama)[-1]
    assert last["role"] == "user" and last["images"] and isinstance(last["images"][0], str)


async def test_a_model_without_vision_gets_no_image(workspace: Workspace, ollama: FakeOllamaServer, tmp_path: Path):
    from tests.unit.test_images import tiny_png

    (tmp_path / "chart.png").write_bytes(tiny_png())
    assert not workspace.model.supports_vision()  # type: ignore[attr-defined]
    ollama.enqueue({"tool_calls": [{"name": "view_image", "arguments": {"path": "chart.png"}}]}, {"text": "Blind."})
    result = await workspace.run("look at chart.png")
    assert result.text == "Blind.", result.error
    assert "cannot see images" in messages(ollama)[-1]["content"]


@pytest.mark.parametrize("status", [503, 429])
async def test_a_busy_server_is_retried(ollama: FakeOllamaServer, tmp_path: Path, status: int):
    workspace = ollama_workspace(tmp_path, ollama, model_retries=1)
    ollama.enqueue({"fault": "status", "status": status}, {"text": "Back."})
    result = await workspace.run("hello")
    assert result.text == "Back.", result.error
    assert len(ollama.chat_bodies()) == 2


async def test_a_model_that_was_never_pulled_is_a_clear_error(ollama: FakeOllamaServer, tmp_path: Path):
    workspace = ollama_workspace(tmp_path, ollama, model="ollama_chat/llama9")
    result = await workspace.run("hello")
    error = result.error or ""
    assert result.stop_reason == "error" and "ollama_chat/llama9" in error and "try pulling it first" in error, error
    assert "\n" not in error


async def test_the_servers_num_ctx_is_the_window_so_a_long_history_is_compacted_in_time(tmp_path: Path):
    """Ollama does not refuse a prompt longer than its context: it drops the start. So blitz
    takes the window from the server (`num_ctx` in /api/show) and compacts before that."""
    with FakeOllamaServer(models={"qwen3:8b": {"completion", "tools"}}, num_ctx=1024) as ollama:
        workspace = ollama_workspace(tmp_path, ollama, dotted={"context.retain_events": 2})
        assert workspace.model.context_window() == 1024  # type: ignore[attr-defined]
        ollama.enqueue({"text": "one", "usage": {"prompt": 900, "eval": 3}})
        await workspace.run("first " * 200, session="s")
        ollama.enqueue({"text": "SUMMARY of the first turn"}, {"text": "two"})
        result = await workspace.run("second", session="s")
        assert result.text == "two", result.error
        last = json.dumps(messages(ollama))
        assert "SUMMARY of the first turn" in last and "first first" not in last


async def test_a_stream_cut_after_a_tool_call_is_retried_and_the_history_stays_valid(
    ollama: FakeOllamaServer, tmp_path: Path
):
    workspace = ollama_workspace(tmp_path, ollama, model_retries=1)
    ollama.enqueue(
        {"fault": "reset_mid_stream", "tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"text": "Listed."},
        {"text": "Next."},
    )
    result = await workspace.run("list", session="s")
    assert result.text == "Listed.", result.error
    assert (await workspace.run("again", session="s")).text == "Next."


@pytest.mark.parametrize("fault", ["reset_mid_stream", "stream_error"])
async def test_a_stream_broken_after_text_ends_the_turn_and_the_next_turn_works(
    workspace: Workspace, ollama: FakeOllamaServer, fault: str
):
    ollama.enqueue(
        {"fault": fault, "text": "Let me", "message": "model runner has unexpectedly stopped"}, {"text": "Fine now."}
    )
    broken = await workspace.run("list", session="s")
    assert broken.stop_reason == "error" and MODEL in (broken.error or ""), (broken.text, broken.error)
    result = await workspace.run("again", session="s")
    assert result.text == "Fine now.", result.error
