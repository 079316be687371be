"""The engine on a `gemini/...` model, through litellm's real Gemini path, against the fake
Gemini API (tests/fake_gemini.py), which refuses what the real API refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.engine.workspace import Workspace
from tests.fake_gemini import FakeGeminiServer
from tests.helpers.workspaces import open_workspace

MODEL = "gemini/gemini-2.5-flash"


@pytest.fixture
def fake() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as server:
        yield server


@pytest.fixture(autouse=True)
def gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-wire-not-a-real-key")


def workspace_for(root: Path, server: FakeGeminiServer, *, retries: int = 0, **overrides: Any) -> Workspace:
    settings: dict[str, Any] = {"api_base": server.base_url, "model_retries": retries, **overrides}
    return open_workspace(root, MODEL, overrides=settings)


async def test_parallel_function_calls_with_a_thought_signature_and_usage_metadata(
    fake: FakeGeminiServer, tmp_path: Path
):
    (tmp_path / "a.txt").write_text("alpha")
    fake.enqueue(
        {
            "thought": "Two reads.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}, "signature": "gemini-sig-1"},
                {"name": "list_files", "arguments": {}},
            ],
            "usage": {"promptTokenCount": 900, "cachedContentTokenCount": 600, "thoughtsTokenCount": 7},
        },
        {"text": "alpha, and one file.", "usage": {"promptTokenCount": 1000, "candidatesTokenCount": 5}},
        {"text": "Still here."},
    )
    workspace = workspace_for(tmp_path, fake, reasoning="low")
    result = await workspace.run("read a.txt and list the files", session="s")
    assert result.stop_reason == "end_turn", result.error
    assert result.text == "alpha, and one file." and fake.refusals == []
    first = fake.bodies[0]
    assert first["generationConfig"]["thinkingConfig"]["thinkingBudget"] > 0
    model_turn = fake.bodies[1]["contents"][1]
    assert model_turn["role"] == "model" and model_turn["parts"][0]["thoughtSignature"] == "gemini-sig-1"
    answers = fake.bodies[1]["contents"][2]["parts"]
    assert [part["function_response"]["name"] for part in answers] == ["read_file", "list_files"]
    assert "alpha" in str(answers[0])
    assert result.usage.cached_tokens == 600 and result.usage.input_tokens == 1900
    assert result.usage.reasoning_tokens == 7
    again = await workspace.run("and now?", session="s")
    assert again.text == "Still here." and fake.refusals == []


@pytest.mark.parametrize("fault", ["safety", "blocked_prompt"])
async def test_a_safety_block_is_one_clear_error_and_the_session_goes_on(
    fake: FakeGeminiServer, tmp_path: Path, fault: str
):
    fake.enqueue({"fault": fault}, {"text": "Fine now."})
    workspace = workspace_for(tmp_path, fake)
    blocked = await workspace.run("something", session="s")
    assert blocked.stop_reason == "error"
    assert blocked.error == f"model {MODEL!r} failed: the provider's safety filter blocked the answer"
    again = await workspace.run("something else", session="s")
    assert again.text == "Fine now." and fake.refusals == []


@pytest.mark.parametrize("status", [429, 503])
async def test_resource_exhausted_and_unavailable_are_retried(fake: FakeGeminiServer, tmp_path: Path, status: int):
    fake.enqueue({"fault": "status", "status": status, "message": "The model is overloaded."}, {"text": "Served."})
    result = await workspace_for(tmp_path, fake, retries=2).run("hello")
    assert result.text == "Served." and len(fake.requests) == 2


async def test_an_input_over_the_limit_is_a_one_line_error(fake: FakeGeminiServer, tmp_path: Path):
    message = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
    fake.enqueue({"fault": "status", "status": 400, "message": message})
    result = await workspace_for(tmp_path, fake).run("hello")
    assert result.stop_reason == "error" and result.error is not None
    assert result.error == f"model {MODEL!r} failed: HTTP 400: {message}"
