"""The engine on an `ollama_chat/...` model, through litellm's real Ollama path, against the
fake Ollama server (tests/fake_ollama.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.engine.workspace import Workspace
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
