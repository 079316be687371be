"""The engine on an `anthropic/...` model, through litellm's real Anthropic path, against the
fake Messages API (tests/fake_anthropic.py), which refuses what the real API refuses.

Each test checks what the turn returned, that the fake refused nothing it should not have, and
that the next turn on the same session is still accepted (the history stayed valid).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import AssistantMessage, ThinkingPart
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import ModelBadRequestError
from blitz_kernel.models.base import ModelRequest
from blitz_kernel.models.litellm_model import LiteLLMModel
from tests.fake_anthropic import FakeAnthropicServer, signature_for
from tests.helpers.workspaces import open_workspace

MODEL = "anthropic/claude-sonnet-4-5"


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture(autouse=True)
def anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wire-not-a-real-key")


def workspace_for(root: Path, server: FakeAnthropicServer, *, retries: int = 0, **overrides: Any) -> Workspace:
    settings: dict[str, Any] = {"api_base": server.base_url, "model_retries": retries, **overrides}
    return open_workspace(root, MODEL, overrides=settings)


def assistant_blocks(server: FakeAnthropicServer, request: int) -> list[list[dict[str, Any]]]:
    """The content blocks of every assistant message of a request, in order."""
    return [m["content"] for m in server.requests[request].body["messages"] if m["role"] == "assistant"]


async def test_thinking_with_parallel_tool_calls_goes_back_signed_and_the_next_turn_is_accepted(
    fake: FakeAnthropicServer, tmp_path: Path
):
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.txt").write_text("beta")
    fake.enqueue(
        {
            "thinking": "I should read both files.",
            "text": "Reading both.",
            "tool_calls": [
                {"name": "read_file", "arguments": {"path": "a.txt"}, "id": "toolu_a"},
                {"name": "read_file", "arguments": {"path": "b.txt"}, "id": "toolu_b"},
            ],
        },
        {"thinking": "Both read.", "text": "alpha and beta."},
        {"text": "Still here."},
    )
    workspace = workspace_for(tmp_path, fake, reasoning="low")
    result = await workspace.run("what is in a.txt and b.txt?", session="s")
    assert result.stop_reason == "end_turn", result.error
    assert result.text == "alpha and beta." and fake.refusals == []
    assert fake.requests[0].body["thinking"]["type"] == "enabled"
    step_two = assistant_blocks(fake, 1)[0]
    assert step_two[0] == {
        "type": "thinking",
        "thinking": "I should read both files.",
        "signature": signature_for("I should read both files."),
    }
    assert [b["id"] for b in step_two if b["type"] == "tool_use"] == ["toolu_a", "toolu_b"]
    results = [b for b in fake.requests[1].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_a", "toolu_b"] and "alpha" in json.dumps(results)
    steps = [m for m in workspace.session("s").history if isinstance(m, AssistantMessage)]
    assert steps[0].thinking == [
        ThinkingPart(text="I should read both files.", signature=signature_for("I should read both files."))
    ]
    assert result.usage.reasoning_tokens > 0
    again = await workspace.run("and now?", session="s")
    assert again.text == "Still here." and fake.refusals == []


async def test_after_compaction_no_signature_goes_back_and_the_next_turn_is_accepted(
    fake: FakeAnthropicServer, tmp_path: Path
):
    fake.enqueue(
        {"thinking": "Look first.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"thinking": "Seen.", "text": "One file."},
        {"text": "Two."},
        {"text": "SUMMARY: the user listed files."},
        {"thinking": "Go on.", "text": "Three."},
    )
    workspace = workspace_for(tmp_path, fake, reasoning="low")
    await workspace.run("list the files", session="s")
    await workspace.run("and again", session="s")
    await workspace.compact("s", keep_turns=1)
    summariser = json.dumps(fake.requests[3].body)
    assert "signature" not in summariser and "Look first." not in summariser
    result = await workspace.run("go on", session="s")
    assert result.text == "Three." and fake.refusals == []
    sent = json.dumps(fake.requests[4].body["messages"])
    assert "SUMMARY: the user listed files." in sent and signature_for("Look first.") not in sent


async def test_redacted_thinking_goes_back_as_it_came(fake: FakeAnthropicServer, tmp_path: Path):
    fake.enqueue(
        {"redacted_thinking": "ENCRYPTED-BLOB", "tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"text": "Done."},
    )
    result = await workspace_for(tmp_path, fake, reasoning="medium").run("list")
    assert result.text == "Done." and fake.refusals == []
    assert assistant_blocks(fake, 1)[0][0] == {"type": "redacted_thinking", "data": "ENCRYPTED-BLOB"}


async def test_prompt_cache_breakpoints_make_later_steps_read_the_earlier_ones(
    fake: FakeAnthropicServer, tmp_path: Path
):
    fake.enqueue(
        *({"tool_calls": [{"name": "list_files", "arguments": {}, "id": f"toolu_{i}"}]} for i in range(3)),
        {"text": "Listed three times."},
    )
    result = await workspace_for(tmp_path, fake).run("list the files three times")
    assert result.stop_reason == "end_turn" and fake.refusals == []
    bodies = [request.body for request in fake.requests]
    marks = [json.dumps(body).count('"cache_control"') for body in bodies]
    assert all(1 <= count <= 4 for count in marks), marks
    assert result.usage.cached_tokens > 0 and result.usage.cache_write_tokens > 0
    # Every step after the first reads at least all the previous request held.
    assert all(bodies[0]["system"][-1]["cache_control"] == {"type": "ephemeral"} for _ in bodies)


async def test_prompt_caching_turned_off_sends_no_cache_mark(fake: FakeAnthropicServer, tmp_path: Path):
    fake.enqueue({"tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": "Listed."})
    result = await workspace_for(tmp_path, fake, **{"prompt_cache.enabled": False}).run("list the files")
    assert result.text == "Listed." and fake.refusals == []
    assert [json.dumps(request.body).count('"cache_control"') for request in fake.requests] == [0, 0]
    assert result.usage.cached_tokens == 0 and result.usage.cache_write_tokens == 0


async def test_an_image_from_view_image_reaches_claude_as_a_base64_block(fake: FakeAnthropicServer, tmp_path: Path):
    from tests.unit.test_images import tiny_png

    (tmp_path / "chart.png").write_bytes(tiny_png())
    fake.enqueue({"tool_calls": [{"name": "view_image", "arguments": {"path": "chart.png"}}]}, {"text": "A dot."})
    result = await workspace_for(tmp_path, fake).run("look at chart.png")
    assert result.text == "A dot." and fake.refusals == []
    last = fake.requests[1].body["messages"][-1]["content"]
    images = [block for block in last if block["type"] == "image"]
    assert images and images[0]["source"]["media_type"] == "image/png"


@pytest.mark.parametrize(
    ("status", "kind"), [(429, "rate_limit_error"), (529, "overloaded_error")], ids=["rate-limited", "overloaded"]
)
async def test_a_refusal_to_serve_now_is_retried(fake: FakeAnthropicServer, tmp_path: Path, status: int, kind: str):
    fake.enqueue({"fault": "status", "status": status, "type": kind, "retry_after": 0}, {"text": "Served."})
    result = await workspace_for(tmp_path, fake, retries=2).run("hello")
    assert result.text == "Served." and len(fake.requests) == 2


async def test_overloaded_mid_stream_is_retried_before_anything_was_shown(fake: FakeAnthropicServer, tmp_path: Path):
    fake.enqueue({"fault": "overloaded_mid_stream"}, {"text": "Served."})
    result = await workspace_for(tmp_path, fake, retries=2).run("hello")
    assert result.text == "Served." and len(fake.requests) == 2


async def test_a_prompt_too_long_for_the_window_is_a_context_window_error(tmp_path: Path):
    with FakeAnthropicServer(context_window=50) as fake:
        result = await workspace_for(tmp_path, fake).run("hello")
    assert result.stop_reason == "error"
    assert result.error is not None and "prompt is too long" in result.error
    assert "\n" not in result.error and "{" not in result.error  # the provider's message, not its raw body


async def test_a_stream_cut_mid_tool_call_leaves_a_history_the_next_turn_can_send(
    fake: FakeAnthropicServer, tmp_path: Path
):
    fake.enqueue(
        {
            "fault": "cut_mid_tool",
            "text": "Let me look.",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "x"}}],
        },
        {"text": "Back again."},
    )
    workspace = workspace_for(tmp_path, fake)
    broken = await workspace.run("read x", session="s")
    assert broken.stop_reason == "error"
    again = await workspace.run("try again", session="s")
    assert again.text == "Back again." and fake.refusals == []


async def test_think_on_a_model_without_a_thinking_setting_is_one_clear_line():
    model = LiteLLMModel("openai/gpt-4o-mini", api_key="sk-not-used")
    request = ModelRequest(system="s", messages=[], reasoning="high")
    with pytest.raises(ModelBadRequestError) as caught:
        async for _ in model.stream(request):
            pass
    assert "no thinking setting" in str(caught.value) and "\n" not in str(caught.value)


async def test_think_off_sends_no_thinking(fake: FakeAnthropicServer, tmp_path: Path):
    fake.enqueue({"text": "Quick."}, {"text": "Quicker."})
    workspace = workspace_for(tmp_path, fake, reasoning="high")
    result = await workspace.run("hi")  # the config says high...
    assert result.text == "Quick." and "thinking" in fake.requests[0].body
    await workspace.run("hi", think="off")  # ...and --think off wins for one turn
    assert "thinking" not in fake.requests[1].body


async def test_a_configured_temperature_and_max_tokens_do_not_break_claude_thinking(
    fake: FakeAnthropicServer, tmp_path: Path
):
    """Claude refuses thinking with a temperature other than 1 or a max_tokens at or below the
    thinking budget; the configured values still apply to turns without thinking."""
    fake.enqueue({"thinking": "Hmm.", "text": "Thought."}, {"text": "Plain."})
    workspace = workspace_for(tmp_path, fake, reasoning="high", temperature=0.2, max_tokens=1000)
    result = await workspace.run("think", session="s")
    assert result.text == "Thought." and fake.refusals == []
    thinking = fake.requests[0].body
    assert "temperature" not in thinking
    assert thinking["max_tokens"] == 1000 + thinking["thinking"]["budget_tokens"]
    await workspace.run("do not think", session="s", think="off")
    plain = fake.requests[1].body
    assert plain["temperature"] == 0.2 and plain["max_tokens"] == 1000 and "thinking" not in plain


async def test_thinking_that_quotes_a_secret_is_not_kept_and_no_forged_signature_goes_back(
    fake: FakeAnthropicServer, tmp_path: Path
):
    """Redaction would change the thinking text, so its signature would no longer match (the
    provider refuses that); the block is left out of the history instead, secret and all."""
    secret = "Zq81sEcReTvAlUe0000xyzw"
    fake.enqueue(
        {"thinking": f"The token is {secret}.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
        {"text": "Done."},
    )
    settings = {"api_base": fake.base_url, "model_retries": 0}
    environ = {"ANTHROPIC_API_KEY": "sk-ant-wire-not-a-real-key", "SERVICE_TOKEN": secret}
    workspace = open_workspace(tmp_path, MODEL, overrides=settings, environ=environ)
    result = await workspace.run("list", session="s")
    assert result.text == "Done."
    assert secret not in json.dumps(fake.requests[1].body)
    assert [b["type"] for b in assistant_blocks(fake, 1)[0]] == ["tool_use"]
    steps = [m for m in workspace.session("s").history if isinstance(m, AssistantMessage)]
    assert steps[0].thinking == [] and secret not in steps[0].model_dump_json()
