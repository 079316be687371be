"""The engine on a `gemini/...` model, through litellm's real Gemini path, against the fake
Gemini API (tests/fake_gemini.py), which refuses what the real API refuses: every step also
proves that the history blitz sent was a valid Gemini conversation."""

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
    # the usage scripted here is Gemini's implicit caching: the explicit context cache is off
    workspace = workspace_for(tmp_path, fake, reasoning="low", **{"prompt_cache.enabled": False})
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
    assert result.text == "Served." and len(fake.generation_bodies()) == 2


async def test_an_input_over_the_limit_is_a_one_line_error(fake: FakeGeminiServer, tmp_path: Path):
    message = "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
    fake.enqueue({"fault": "status", "status": 400, "message": message})
    result = await workspace_for(tmp_path, fake).run("hello")
    assert result.stop_reason == "error" and result.error is not None
    assert result.error == f"model {MODEL!r} failed: HTTP 400: {message}"


# -- with a key and the models the fake serves; images, retry delays, compaction, cut streams

KEY = "AIza-wire-not-a-real-key-0000"


@pytest.fixture
def gemini() -> Iterator[FakeGeminiServer]:
    server = FakeGeminiServer(api_key=KEY, models={"gemini-2.5-flash", "gemini-2.0-flash"}).start()
    try:
        yield server
    finally:
        server.stop()


def gemini_workspace(
    root: Path, server: FakeGeminiServer, *, model: str = MODEL, dotted: dict[str, Any] | None = None, **overrides: Any
) -> Workspace:
    """A workspace on `model` at the fake; `dotted` holds overrides like "context.retain_events"."""
    settings: dict[str, Any] = {"api_base": server.base_url, "model_retries": 0, **overrides, **(dotted or {})}
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
    gemini: FakeGeminiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # the request as sent uncached (the explicit context cache: test_gemini_cache_wire.py)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    workspace = gemini_workspace(tmp_path, gemini, dotted={"prompt_cache.enabled": False})
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


async def test_an_image_reaches_a_vision_model_as_inline_data(
    workspace: Workspace, gemini: FakeGeminiServer, tmp_path: Path
):
    from tests.unit.test_images import tiny_png

    (tmp_path / "chart.png").write_bytes(tiny_png())
    assert workspace.model.supports_vision()  # type: ignore[attr-defined]
    gemini.enqueue(
        {"tool_calls": [{"name": "view_image", "arguments": {"path": "chart.png"}}]}, {"text": "A tiny red image."}
    )
    result = await workspace.run("look at chart.png")
    assert result.text == "A tiny red image.", result.error
    last = contents(gemini)[-1]  # one user turn: Gemini refuses two in a row
    assert last["role"] == "user" and part_kinds(last) == ["function_response", "inline_data"]
    assert last["parts"][1]["inline_data"]["mime_type"] == "image/png"
    assert gemini.refusals == []


async def test_a_429_is_retried_after_the_delay_the_service_asks_for(
    gemini: FakeGeminiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    workspace = gemini_workspace(tmp_path, gemini, model_retries=2)
    gemini.enqueue({"fault": "status", "status": 429, "retry_delay": "0.05s"}, {"text": "Back."})
    result = await workspace.run("hello")
    assert result.text == "Back.", result.error
    assert len(gemini.generation_bodies()) == 2


async def test_a_daily_quota_429_is_not_retried(
    gemini: FakeGeminiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    workspace = gemini_workspace(tmp_path, gemini, model_retries=2)
    gemini.enqueue(
        {
            "fault": "status",
            "status": 429,
            "retry_delay": "0.05s",
            "quota_id": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
        },
        {"text": "never sent"},
    )
    result = await workspace.run("hello")
    assert result.stop_reason == "error" and "HTTP 429" in (result.error or ""), result.error
    assert len(gemini.generation_bodies()) == 1


async def test_too_long_input_compacts_and_retries(
    gemini: FakeGeminiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Gemini's answer to a too-long prompt is a 400 INVALID_ARGUMENT naming the token count:
    blitz takes it as a context-window error, compacts and sends the turn again."""
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    workspace = gemini_workspace(tmp_path, gemini, dotted={"context.retain_events": 3})
    gemini.enqueue({"text": "one"}, {"text": "two"})
    await workspace.run("first " * 50, session="s")
    await workspace.run("second", session="s")
    gemini.enqueue(
        {
            "fault": "status",
            "status": 400,
            "message": "The input token count (1200345) exceeds the maximum number of tokens allowed (1048576).",
        },
        {"text": "SUMMARY of the first turn"},
        {"text": "three"},
    )
    result = await workspace.run("third", session="s")
    assert result.text == "three", result.error
    after = contents(gemini)
    assert "SUMMARY of the first turn" in json.dumps(after) and "first first" not in json.dumps(after)


async def test_a_stream_cut_after_a_function_call_is_retried_and_the_history_stays_valid(
    gemini: FakeGeminiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    workspace = gemini_workspace(tmp_path, gemini, model_retries=1)
    gemini.enqueue(
        {"fault": "reset_mid_stream", "tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"text": "Listed."},
        {"text": "Next."},
    )
    result = await workspace.run("list", session="s")
    assert result.text == "Listed.", result.error
    assert len(gemini.generation_bodies()) == 3
    assert (await workspace.run("again", session="s")).text == "Next."


async def test_a_stream_cut_after_text_ends_the_turn_and_the_next_turn_works(
    workspace: Workspace, gemini: FakeGeminiServer
):
    gemini.enqueue(
        {"fault": "reset_mid_stream", "text": "Let me", "tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"text": "Fine now."},
    )
    broken = await workspace.run("list", session="s")
    assert broken.stop_reason == "error" and "gemini/gemini-2.5-flash" in (broken.error or ""), broken.error
    result = await workspace.run("again", session="s")
    assert result.text == "Fine now.", result.error  # the fake refused nothing: the history is valid


async def test_an_error_event_in_the_stream_before_any_text_is_retried(
    gemini: FakeGeminiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    workspace = gemini_workspace(tmp_path, gemini, model_retries=1)
    gemini.enqueue({"fault": "stream_error", "status": 503}, {"text": "Recovered."})
    result = await workspace.run("hello")
    assert result.text == "Recovered.", result.error
    assert len(gemini.bodies) == 2


async def test_an_error_event_after_text_ends_the_turn_with_googles_message(
    workspace: Workspace, gemini: FakeGeminiServer
):
    gemini.enqueue({"fault": "stream_error", "status": 503, "text": "Half of"}, {"text": "Whole."})
    broken = await workspace.run("hello", session="s")
    error = broken.error or ""
    assert broken.stop_reason == "error" and "The model is overloaded." in error and "\n" not in error, error
    assert (await workspace.run("again", session="s")).text == "Whole."
