"""The engine through the real litellm adapter against the fake server: what the model
*received* for steering, asides, compaction and plan mode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from blitz_kernel.engine.workspace import Workspace
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import sent_messages
from tests.helpers.workspaces import wire_workspace

pytestmark = pytest.mark.usefixtures("model_path")  # the direct OpenAI path and litellm

MODEL = "openai/fake-model"


@pytest.fixture
def workspace(fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")
    return wire_workspace(tmp_path, fake_server, MODEL)


async def test_a_tool_round_trip_and_usage(workspace: Workspace, fake_server: FakeOpenAIServer, tmp_path: Path):
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    fake_server.enqueue(
        {
            "text": "Reading.",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "data.csv"}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "cached_tokens": 20},
        },
        {"text": "Columns a and b.", "usage": {"prompt_tokens": 80, "completion_tokens": 6}},
    )
    result = await workspace.run("what is in data.csv?")
    assert result.text == "Columns a and b." and result.stop_reason == "end_turn"
    assert result.usage.input_tokens == 130 and result.usage.cached_tokens == 20 and result.usage.output_tokens == 11
    tool_message = [m for m in sent_messages(fake_server, 1) if m["role"] == "tool"][0]
    assert "1,2" in json.loads(tool_message["content"])["result"]
    assert sent_messages(fake_server, 0)[0]["role"] == "system"
    assert {t["function"]["name"] for t in fake_server.requests[0].body["tools"]} >= {
        "read_file",
        "run_python",
        "exit_plan_mode",
    }


async def test_ENG40_steer_reaches_the_model_inside_the_next_tool_result(
    workspace: Workspace, fake_server: FakeOpenAIServer
):
    fake_server.enqueue(
        {"tool_calls": [{"name": "list_files", "arguments": {}}], "hold": "steered"},
        {"text": "Using pandas."},
    )
    turn = asyncio.ensure_future(workspace.run("analyse", session="s"))
    await asyncio.to_thread(fake_server.wait_for_requests, 1)
    workspace.steer("s", "use pandas")
    fake_server.release("steered")  # the tool call streams on only once the steer is queued
    result = await turn
    tool_message = [m for m in sent_messages(fake_server, 1) if m["role"] == "tool"][0]
    assert json.loads(tool_message["content"])["message_from_user"] == "use pandas"
    assert result.leftovers == []


async def test_ENG50_btw_never_appears_in_later_requests(workspace: Workspace, fake_server: FakeOpenAIServer):
    fake_server.enqueue({"text": "We loaded sales."}, {"text": "It was sales."}, {"text": "Next step."})
    await workspace.run("load sales", session="s")
    aside = await workspace.aside("s", "what did we load?")
    assert aside.text == "It was sales."
    assert sent_messages(fake_server, 1)[-1] == {"role": "user", "content": "what did we load?"}
    await workspace.run("continue", session="s")
    later = json.dumps(sent_messages(fake_server, 2))
    assert "what did we load?" not in later and "It was sales." not in later
    assert workspace.usage("s").total.calls == 3


async def test_ENG61_ENG62_summary_replaces_the_window_and_focus_reaches_the_summariser(
    workspace: Workspace, fake_server: FakeOpenAIServer
):
    fake_server.enqueue({"text": "one"}, {"text": "two"}, {"text": "SUMMARY of one"}, {"text": "three"})
    await workspace.run("first", session="s")
    await workspace.run("second", session="s")
    await workspace.compact("s", focus="the plots", keep_turns=1)
    summariser = sent_messages(fake_server, 2)
    assert summariser[-1]["content"].endswith("Pay particular attention to: the plots")
    await workspace.run("third", session="s")
    after = [(m["role"], m["content"]) for m in sent_messages(fake_server, 3) if m["role"] != "system"]
    assert after == [
        ("user", "[Summary of earlier conversation]\nSUMMARY of one"),
        ("user", "second"),
        ("assistant", "two"),
        ("user", "third"),
    ]


async def test_ENG31_plan_mode_refusal_reaches_the_model(
    workspace: Workspace, fake_server: FakeOpenAIServer, tmp_path: Path
):
    fake_server.enqueue(
        {"tool_calls": [{"name": "run_python", "arguments": {"code": "open('x', 'w')"}}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. do it"}}]},
    )
    result = await workspace.run("plan", plan=True, approve="allow")
    refusal = [m for m in sent_messages(fake_server, 1) if m["role"] == "tool"][0]
    assert json.loads(refusal["content"])["error"] == (
        "plan mode: run_python is disabled because it could change something. Describe this step in the plan instead."
    )
    assert result.text == "1. do it" and result.plan_status == "unreviewed"
    assert not (tmp_path / "x").exists()


async def test_view_image_reaches_a_vision_model_as_an_image_part(
    fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from tests.unit.test_images import tiny_png

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")
    (tmp_path / "chart.png").write_bytes(tiny_png())
    ws = Workspace.open(
        tmp_path,
        model="openai/gpt-4o",
        overrides={"api_base": fake_server.base_url, "model_retries": 0},
        environ={},
        home=tmp_path / "home",
    )
    assert ws.model.supports_vision()  # type: ignore[attr-defined]
    fake_server.enqueue(
        {"tool_calls": [{"name": "view_image", "arguments": {"path": "chart.png"}}]}, {"text": "A tiny image."}
    )
    result = await ws.run("look at chart.png")
    assert result.stop_reason == "end_turn", result.error
    messages = sent_messages(fake_server, 1)
    roles = [m["role"] for m in messages]
    assert roles[-2:] == ["tool", "user"]
    image_parts = [p for p in messages[-1]["content"] if p.get("type") == "image_url"]
    assert image_parts and image_parts[0]["image_url"]["url"].startswith("data:image/png;base64,")


async def test_view_image_on_a_blind_model_is_a_clear_error(
    workspace: Workspace, fake_server: FakeOpenAIServer, tmp_path: Path
):
    from tests.unit.test_images import tiny_png

    (tmp_path / "chart.png").write_bytes(tiny_png())
    fake_server.enqueue(
        {"tool_calls": [{"name": "view_image", "arguments": {"path": "chart.png"}}]}, {"text": "I cannot see it."}
    )
    await workspace.run("look at chart.png")
    tool_message = [m for m in sent_messages(fake_server, 1) if m["role"] == "tool"][0]
    assert "cannot see images" in json.loads(tool_message["content"])["error"]
