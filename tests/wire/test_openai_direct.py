"""The direct OpenAI path: which calls take it, what it reuses, and that an OpenAI-only kernel
never imports litellm (the shared behaviour runs on both paths in test_litellm_model.py and
tests/robustness/test_fault_injection.py)."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import AssistantMessage, ToolCall, ToolResultMessage, user_prompt
from blitz_kernel.core.tools import ToolSpec
from blitz_kernel.models import openai_direct, openai_wire, price_map
from blitz_kernel.models.base import ModelRequest, ModelResponse
from blitz_kernel.models.factory import needs_litellm
from blitz_kernel.models.litellm_model import LiteLLMModel, load_litellm
from tests.fakeserver import FakeOpenAIServer

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-direct-not-a-real-key"


async def answer(model: LiteLLMModel, request: ModelRequest) -> ModelResponse:
    response = None
    async for item in model.stream(request):
        if isinstance(item, ModelResponse):
            response = item
    assert response is not None
    return response


@pytest.mark.parametrize(
    ("name", "direct"),
    [
        ("openai/gpt-4o-mini", True),
        ("openai/my-local-model", True),  # any OpenAI-compatible api_base
        ("gpt-4o-mini", True),  # a bare name litellm files under openai
        ("anthropic/claude-3-5-sonnet-20240620", False),
        ("my-unknown-model", False),
        ("openai/", False),
    ],
)
def test_which_models_take_the_direct_path(name: str, direct: bool) -> None:
    assert LiteLLMModel(name).takes_direct_path() is direct
    assert needs_litellm(name) is not direct


def test_extra_litellm_arguments_or_direct_false_keep_litellm() -> None:
    assert not LiteLLMModel("openai/gpt-4o", extra={"reasoning_effort": "low"}).takes_direct_path()
    assert not LiteLLMModel("openai/gpt-4o", direct=False).takes_direct_path()
    assert not needs_litellm("scripted:demo.json") and not needs_litellm(None)


def test_registered_litellm_callbacks_send_calls_through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    model = LiteLLMModel("openai/gpt-4o")
    litellm = load_litellm()
    monkeypatch.setattr(litellm, "success_callback", [lambda *args: None])

    assert not model.takes_direct_path()
    monkeypatch.setattr(litellm, "success_callback", [])
    assert model.takes_direct_path()


async def test_one_client_per_endpoint_is_reused_across_calls(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"text": "one"}, {"text": "two"})
    model = LiteLLMModel("openai/fake-model", api_base=fake_server.base_url, api_key=KEY, direct=True)
    request = ModelRequest(system="s", messages=[user_prompt("hi")])

    assert (await answer(model, request)).text == "one"
    first = openai_direct.client_for(fake_server.base_url, KEY, model.request_timeout)
    assert (await answer(model, request)).text == "two"

    assert openai_direct.client_for(fake_server.base_url, KEY, model.request_timeout) is first
    assert openai_direct.client_for(fake_server.base_url, "sk-another-key-000000", 600) is not first


@pytest.mark.usefixtures("model_path")
async def test_reasoning_models_get_max_completion_tokens_as_litellm_sends_them(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"text": "a"}, {"text": "b"})
    request = ModelRequest(system="s", messages=[user_prompt("hi")], max_tokens=99)

    for name in ("openai/o3-mini", "openai/gpt-4o"):
        await answer(LiteLLMModel(name, api_base=fake_server.base_url, api_key=KEY), request)

    reasoning, plain = (recorded.body for recorded in fake_server.requests)
    assert reasoning.get("max_completion_tokens") == 99 and "max_tokens" not in reasoning
    assert plain.get("max_tokens") == 99 and "max_completion_tokens" not in plain


def test_committed_messages_are_converted_once_and_released_with_them() -> None:
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "a"}')
    history = [
        user_prompt("hi"),
        AssistantMessage(text="", tool_calls=[call], model="m"),
        ToolResultMessage(call_id="c1", name="read_file", output="alpha"),
    ]

    first = openai_wire.to_openai_messages("sys", history, reuse=True)
    again = openai_wire.to_openai_messages("sys", [*history, user_prompt("more")], reuse=True)

    assert first == openai_wire.to_openai_messages("sys", history)  # the same wire format
    assert all(a is b for a, b in zip(first[1:], again[1:4], strict=True))  # built once, reused
    before = len(openai_wire._MESSAGE_DICTS)
    del history, first, again
    gc.collect()
    assert len(openai_wire._MESSAGE_DICTS) <= before - 3


def test_a_tool_set_is_converted_once() -> None:
    specs = [ToolSpec(name="f", description="F.", parameters={"type": "object", "properties": {}})]

    first = openai_wire.to_openai_tools(specs, reuse=True)

    assert openai_wire.to_openai_tools(list(specs), reuse=True) is first
    assert first == openai_wire.to_openai_tools(specs)


@pytest.mark.parametrize("name", ["gpt-4o", "gpt-4o-mini", "openai/gpt-4.1-mini", "o3-mini", "openai/unknown-xyz"])
def test_prices_windows_and_vision_match_litellms_own_answers(name: str) -> None:
    litellm = load_litellm()
    entry = price_map.entry_of(litellm.model_cost, name)

    assert price_map.price_of(name) == price_map.price_from(entry)
    assert price_map.context_window_of(name) == ((entry or {}).get("max_input_tokens") or None)
    assert price_map.supports_vision_of(name) == litellm.supports_vision(model=name)


def test_an_openai_only_kernel_never_imports_litellm(fake_server: FakeOpenAIServer, tmp_path: Path) -> None:
    """A whole turn with a tool call, priced, through the workspace: litellm stays unloaded."""
    (tmp_path / "a.txt").write_text("alpha\n")
    fake_server.enqueue(
        {
            "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 10},
        },
        {"text": "It says alpha.", "usage": {"prompt_tokens": 1200, "completion_tokens": 5}},
    )
    code = textwrap.dedent(f"""
        import asyncio, json, sys
        from pathlib import Path
        from blitz_kernel.engine.workspace import Workspace
        from blitz_kernel.models.factory import warm_up
        warm_up(["openai/gpt-4o-mini"])
        ws = Workspace.open(Path({str(tmp_path)!r}), model="openai/gpt-4o-mini",
                            overrides={{"api_base": {fake_server.base_url!r}}}, home=Path({str(tmp_path / "home")!r}))
        result = asyncio.run(ws.run("what is in a.txt?"))
        print(json.dumps({{"text": result.text, "cost": result.usage.cost_usd, "priced": result.usage.priced,
                          "window": ws.model.context_window(), "litellm": "litellm" in sys.modules}}))
    """)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "OPENAI_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    expected = price_map.price_of("gpt-4o-mini")
    assert expected is not None
    assert outcome["text"] == "It says alpha." and outcome["priced"] is True
    assert outcome["cost"] == pytest.approx((2200 * expected.input + 15 * expected.output) / 1e6)
    assert outcome["window"] == price_map.context_window_of("gpt-4o-mini") > 0
    assert outcome["litellm"] is False


def test_the_warm_up_loads_litellm_only_for_a_model_that_needs_it(tmp_path: Path) -> None:
    code = (
        "import sys; from blitz_kernel.models.factory import warm_up; warm_up([sys.argv[1]]); "
        "print('litellm' in sys.modules, 'openai' in sys.modules)"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    seen = {
        name: subprocess.run(
            [sys.executable, "-c", code, name], env=env, capture_output=True, text=True, timeout=120
        ).stdout.split()
        for name in ("openai/gpt-4o-mini", "anthropic/claude-3-5-sonnet-20240620")
    }
    assert seen == {"openai/gpt-4o-mini": ["False", "True"], "anthropic/claude-3-5-sonnet-20240620": ["True", "True"]}


def test_a_call_without_any_key_is_a_clear_auth_error_and_not_retried(
    fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from blitz_kernel.errors import ModelAuthError

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = LiteLLMModel("openai/fake-model", api_base=fake_server.base_url, direct=True, retries=3)

    with pytest.raises(ModelAuthError, match="no API key: set OPENAI_API_KEY"):
        asyncio.run(answer(model, ModelRequest(system="s", messages=[user_prompt("hi")])))
    assert fake_server.requests == []


async def test_the_request_sent_as_given_is_what_the_sdks_create_would_send() -> None:
    """The direct path posts its body as built (no `create` transform): for every kind of
    message and a tool set, the SDK's transform gives back exactly the same data."""
    from openai._utils._transform import async_maybe_transform
    from openai.types.chat import completion_create_params

    from blitz_kernel.core.history import ImagePart, SummaryMessage, TextPart, UserMessage

    call = ToolCall(id="c1", name="read_file", arguments='{"path": "a"}')
    history = [
        SummaryMessage(text="earlier"),
        UserMessage(parts=[TextPart(text="look"), ImagePart(media_type="image/png", data_base64="aGVsbG8=")]),
        AssistantMessage(text="reading", tool_calls=[call], model="m"),
        ToolResultMessage(call_id="c1", name="read_file", output="alpha"),
    ]
    specs = [
        ToolSpec(
            name="read_file",
            description="Read.",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        )
    ]
    arguments = openai_direct.request_arguments(
        "openai/gpt-4o",
        openai_wire.to_openai_messages("sys", history, reuse=True),
        openai_wire.to_openai_tools(specs, reuse=True),
        temperature=0.2,
        max_tokens=50,
    )

    transformed = await async_maybe_transform(arguments, completion_create_params.CompletionCreateParamsStreaming)

    assert json.dumps(transformed, sort_keys=True) == json.dumps(arguments, sort_keys=True)


async def test_the_direct_path_reads_chunks_as_sent(fake_server: FakeOpenAIServer) -> None:
    """Chunks arrive as the endpoint's JSON: text, reasoning, tool calls and usage are read
    from it as from the SDK's chunk objects."""
    fake_server.enqueue(
        {
            "text": "Let me look.",
            "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 7},
        }
    )
    model = LiteLLMModel("openai/fake-model", api_base=fake_server.base_url, api_key=KEY, direct=True)

    response = await answer(model, ModelRequest(system="s", messages=[user_prompt("hi")]))

    assert response.text == "Let me look."
    assert [(c.name, json.loads(c.arguments)) for c in response.tool_calls] == [("read_file", {"path": "a.txt"})]
    assert (response.usage.input_tokens, response.usage.output_tokens) == (120, 7)


def test_a_chunks_json_reads_like_the_sdks_chunk_object() -> None:
    chunk = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "content": "hi",
                    "reasoning_content": "think",
                    "tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": "{}"}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 4}},
    }
    reader = openai_wire.StreamReader()

    shown = reader.feed(chunk)

    assert [(d.text, d.thought) for d in shown] == [("think", True), ("hi", False)]
    assert reader.finished and reader.usage is not None and reader.usage.cached_tokens == 4
    assert [(c.id, c.name, c.arguments) for c in reader.tool_calls.calls()] == [("c1", "f", "{}")]
    view = openai_wire.WireObject({"choices": []})
    assert view.missing is None and view.choices == [] and not hasattr(view, "__len__")
