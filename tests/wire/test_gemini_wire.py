"""The engine over litellm's real Gemini path (`gemini/<model>` with an api_base) against the
fake Gemini API, which refuses any request the real service would refuse: every step below
also proves that the history blitz sent was a valid Gemini conversation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.engine.workspace import Workspace
from tests.fake_gemini import FakeGeminiServer
from tests.helpers.workspaces import open_workspace

MODEL = "gemini/gemini-2.5-flash"
KEY = "AIza-wire-not-a-real-key-0000"


@pytest.fixture
def gemini() -> Iterator[FakeGeminiServer]:
    server = FakeGeminiServer(api_key=KEY, models={"gemini-2.5-flash", "gemini-2.0-flash"}).start()
    try:
        yield server
    finally:
        server.stop()


def gemini_workspace(root: Path, server: FakeGeminiServer, model: str = MODEL, **overrides: Any) -> Workspace:
    settings: dict[str, Any] = {"api_base": server.base_url, "model_retries": 0, **overrides}
    return open_workspace(root, model, overrides=settings)


@pytest.fixture
def workspace(gemini: FakeGeminiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    return gemini_workspace(tmp_path, gemini)


def contents(server: FakeGeminiServer, index: int = -1) -> list[dict[str, Any]]:
    return server.generation_bodies()[index]["contents"]


def part_kinds(content: dict[str, Any]) -> list[str]:
    return [
        next(iter(k for k in part if k not in ("thought_signature", "thoughtSignature"))) for part in content["parts"]
    ]


async def test_parallel_tool_calls_over_several_steps_and_the_next_turn(
    workspace: Workspace, gemini: FakeGeminiServer, tmp_path: Path
):
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    gemini.enqueue(
        {
            "text": "Reading both.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}},
                {"name": "read_file", "arguments": {"path": "b.txt"}},
            ],
            "usage": {"prompt": 120, "candidates": 9, "cached": 100, "thoughts": 30},
        },
        {"tool_calls": [{"name": "list_files", "arguments": {}}], "usage": {"prompt": 200, "candidates": 4}},
        {"text": "a is alpha, b is beta.", "usage": {"prompt": 260, "candidates": 6}},
        {"text": "Still alpha."},
    )
    result = await workspace.run("what is in a.txt and b.txt?", session="s")
    assert result.stop_reason == "end_turn", result.error
    assert result.text == "a is alpha, b is beta."
    second = contents(gemini, 1)
    assert [c["role"] for c in second] == ["user", "model", "user"]
    assert part_kinds(second[1]) == ["text", "function_call", "function_call"]
    responses = [p["function_response"] for p in second[2]["parts"]]
    assert [r["name"] for r in responses] == ["read_file", "read_file"]
    assert "alpha" in json.dumps(responses[0]["response"]) and "beta" in json.dumps(responses[1]["response"])
    body = gemini.generation_bodies()[0]
    assert body["system_instruction"]["parts"][0]["text"]  # the system prompt is not a user turn
    names = [d["name"] for d in body["tools"][0]["function_declarations"]]
    assert "read_file" in names and len(names) == len(set(names))
    # usage: cached tokens counted as cached, thoughts billed as output
    assert result.usage.input_tokens == 120 + 200 + 260
    assert result.usage.cached_tokens == 100
    assert result.usage.output_tokens == (9 + 30) + 4 + 6
    again = await workspace.run("and now?", session="s")
    assert again.text == "Still alpha.", again.error
    assert [c["role"] for c in contents(gemini)][-2:] == ["model", "user"]
