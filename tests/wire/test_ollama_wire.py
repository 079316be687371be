"""The engine on an `ollama_chat/...` model, through litellm's real Ollama path, against the
fake Ollama server (tests/fake_ollama.py)."""

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

MODEL = "ollama_chat/llama3.1"


@pytest.fixture
def fake() -> Iterator[FakeOllamaServer]:
    with FakeOllamaServer() as server:
        yield server


def workspace_for(root: Path, server: FakeOllamaServer, model: str = MODEL, **overrides: Any) -> Workspace:
    settings: dict[str, Any] = {"api_base": server.base_url, "model_retries": 0, **overrides}
    return open_workspace(root, model, overrides=settings)


async def test_parallel_tool_calls_over_several_steps_and_the_next_turn(fake: FakeOllamaServer, tmp_path: Path):
    (tmp_path / "a.txt").write_text("alpha")
    fake.enqueue(
        {
            "text": "Reading.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "list_files", "arguments": {}},
            ],
            "usage": {"prompt_eval_count": 300, "eval_count": 12},
        },
        {"tool_calls": [{"name": "glob", "arguments": {"pattern": "*.txt"}}]},
        {"text": "alpha; one text file.", "usage": {"prompt_eval_count": 500, "eval_count": 6}},
        {"text": "Still here."},
    )
    workspace = workspace_for(tmp_path, fake)
    result = await workspace.run("read a.txt and look around", session="s")
    assert result.stop_reason == "end_turn", result.error
    assert result.text == "alpha; one text file." and fake.refusals == []
    second = fake.bodies[1]["messages"]
    assert [m["role"] for m in second[-3:]] == ["assistant", "tool", "tool"]
    assert [c["function"]["name"] for c in second[-3]["tool_calls"]] == ["read_file", "list_files"]
    assert "alpha" in second[-2]["content"]
    assert result.usage.input_tokens >= 800 and result.usage.output_tokens >= 18
    again = await workspace.run("and now?", session="s")
    assert again.text == "Still here."


async def test_a_model_that_was_not_pulled_is_one_line_and_not_retried(fake: FakeOllamaServer, tmp_path: Path):
    result = await workspace_for(tmp_path, fake, "ollama_chat/qwen3", model_retries=2).run("hello")
    assert result.stop_reason == "error" and result.error is not None
    assert result.error == "model 'ollama_chat/qwen3' failed: HTTP 404: model \"qwen3\" not found, try pulling it first"
    assert len(fake.bodies) == 1


async def test_a_stream_cut_before_done_fails_the_turn_and_the_session_goes_on(fake: FakeOllamaServer, tmp_path: Path):
    fake.enqueue({"fault": "cut", "text": "Half an ans"}, {"text": "Whole."})
    workspace = workspace_for(tmp_path, fake)
    broken = await workspace.run("answer", session="s")
    assert broken.stop_reason == "error"
    again = await workspace.run("again", session="s")
    assert again.text == "Whole."


async def test_think_on_an_ollama_model_is_one_line(fake: FakeOllamaServer, tmp_path: Path):
    result = await workspace_for(tmp_path, fake).run("hello", think="high")
    assert result.stop_reason == "error" and result.error is not None
    assert "no thinking setting" in result.error and fake.bodies == []


# -- models with capabilities (/api/show): vision, num_ctx; busy servers and cut streams

TOOLS_MODEL = "ollama_chat/qwen3:8b"
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
    root: Path,
    server: FakeOllamaServer,
    *,
    model: str = TOOLS_MODEL,
    dotted: dict[str, Any] | None = None,
    **overrides: Any,
) -> Workspace:
    """A workspace on `model` at the fake; `dotted` holds overrides like "context.retain_events"."""
    settings: dict[str, Any] = {"api_base": server.base_url, "model_retries": 0, **overrides, **(dotted or {})}
    return open_workspace(root, model, overrides=settings)


@pytest.fixture
def workspace(ollama: FakeOllamaServer, tmp_path: Path) -> Workspace:
    return ollama_workspace(tmp_path, ollama)


def messages(server: FakeOllamaServer, index: int = -1) -> list[dict[str, Any]]:
    return server.chat_bodies()[index]["messages"]


async def test_thinking_parallel_calls_arguments_as_objects_and_exact_usage(
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
    assert broken.stop_reason == "error" and TOOLS_MODEL in (broken.error or ""), (broken.text, broken.error)
    result = await workspace.run("again", session="s")
    assert result.text == "Fine now.", result.error
