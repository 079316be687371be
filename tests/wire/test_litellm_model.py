"""Wire tests: the real litellm adapter against the fake OpenAI server.

Each test checks what came back *and* what the server received. Backoff is shrunk through
the adapter's own parameters so retries take milliseconds; no test sleeps to wait.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import traceback
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import (
    AssistantMessage,
    ImagePart,
    SummaryMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    user_prompt,
)
from blitz_kernel.core.tools import ToolSpec
from blitz_kernel.core.usage import TokenUsage
from blitz_kernel.errors import (
    ContextWindowError,
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelStallError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from blitz_kernel.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    StreamItem,
    TextDelta,
)
from blitz_kernel.models.litellm_model import LiteLLMModel, load_litellm
from blitz_kernel.models.openai_wire import to_openai_messages
from tests.fakeserver import FakeOpenAIServer

pytestmark = pytest.mark.usefixtures("model_path")  # the direct OpenAI path and litellm

MODEL = "openai/fake-model"
API_KEY = "sk-test-Zq81sEcReTkEy0000xyzw"
REPO = Path(__file__).resolve().parents[2]

both_stream_paths = pytest.mark.parametrize("fast_stream", [True, False], ids=["sdk-stream", "litellm-wrapper"])


def make_model(server: FakeOpenAIServer, **options: Any) -> LiteLLMModel:
    options.setdefault("backoff_base", 0.001)
    options.setdefault("backoff_cap", 0.01)
    return LiteLLMModel(MODEL, api_base=server.base_url, api_key=API_KEY, **options)


def simple_request(text: str = "hello", **options: Any) -> ModelRequest:
    return ModelRequest(system="You are a test.", messages=[user_prompt(text)], **options)


async def collect(model: LiteLLMModel, request: ModelRequest, into: list[StreamItem] | None = None) -> list[StreamItem]:
    """Everything the model yields; `into` keeps what was shown before an error."""
    items = into if into is not None else []
    async for item in model.stream(request):
        items.append(item)
    return items


def split(items: list[StreamItem]) -> tuple[list[TextDelta], ModelResponse]:
    deltas = [item for item in items if isinstance(item, TextDelta)]
    responses = [item for item in items if isinstance(item, ModelResponse)]
    assert len(responses) == 1 and items[-1] is responses[0], "exactly one response, last"
    return deltas, responses[0]


# -- streaming ------------------------------------------------------------------------------


def test_the_adapter_satisfies_the_model_protocol() -> None:
    assert isinstance(LiteLLMModel(MODEL), Model)


@both_stream_paths
async def test_text_streams_in_several_deltas_then_one_response_with_usage(
    fake_server: FakeOpenAIServer, fast_stream: bool
) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    fake_server.enqueue(
        {
            "text": text,
            "usage": {
                "prompt_tokens": 1200,
                "completion_tokens": 9,
                "cached_tokens": 1000,
                "cache_creation_input_tokens": 150,
            },
        }
    )

    deltas, response = split(await collect(make_model(fake_server, fast_stream=fast_stream), simple_request()))

    assert len(deltas) >= 5 and not any(delta.thought for delta in deltas)
    assert "".join(delta.text for delta in deltas) == text
    assert response.text == text and response.tool_calls == [] and response.thought == ""
    assert response.usage == TokenUsage(input_tokens=1200, cached_tokens=1000, cache_write_tokens=150, output_tokens=9)
    assert response.model == MODEL
    (received,) = fake_server.requests
    assert received.path == "/v1/chat/completions"
    assert received.body["model"] == "fake-model"
    assert received.body["stream"] is True
    assert received.body["stream_options"] == {"include_usage": True}
    assert received.body["messages"] == [
        {"role": "system", "content": "You are a test."},
        {"role": "user", "content": "hello"},
    ]
    assert "tools" not in received.body  # omitted when there are none
    assert received.headers["authorization"] == f"Bearer {API_KEY}"


@both_stream_paths
async def test_parallel_tool_calls_are_assembled_from_fragments(
    fake_server: FakeOpenAIServer, fast_stream: bool
) -> None:
    first = {"path": "data/measurements.csv", "limit": 200}
    second = {"code": "df.describe()\nprint(len(df))"}
    fake_server.enqueue(
        {
            "text": "Let me look.",
            "tool_calls": [
                {"id": "call_read", "name": "read_file", "arguments": first},
                {"id": "call_run", "name": "run_python", "arguments": second},
            ],
        }
    )
    tools = [
        ToolSpec(
            name="read_file",
            description="Read a file.",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}},
        ),
        ToolSpec(
            name="run_python",
            description="Run code.",
            parameters={"type": "object", "properties": {"code": {"type": "string"}}},
        ),
    ]

    _, response = split(await collect(make_model(fake_server, fast_stream=fast_stream), simple_request(tools=tools)))

    assert [(call.id, call.name) for call in response.tool_calls] == [
        ("call_read", "read_file"),
        ("call_run", "run_python"),
    ]
    assert [call.parsed_arguments() for call in response.tool_calls] == [first, second]
    assert response.text == "Let me look."
    (received,) = fake_server.requests
    assert received.body["tools"] == [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        }
        for tool in tools
    ]


async def test_raw_argument_strings_are_kept_as_sent(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"tool_calls": [{"name": "run_python", "arguments": '{"code": "1+1"'}]})

    _, response = split(await collect(make_model(fake_server), simple_request()))

    assert response.tool_calls[0].arguments == '{"code": "1+1"'  # invalid JSON is the engine's call
    assert response.tool_calls[0].id  # a provider always names its calls; we keep that id


@both_stream_paths
async def test_reasoning_deltas_are_thoughts(fake_server: FakeOpenAIServer, fast_stream: bool) -> None:
    fake_server.enqueue({"reasoning": "Think about foxes first.", "text": "Foxes."})

    deltas, response = split(await collect(make_model(fake_server, fast_stream=fast_stream), simple_request()))

    assert "".join(d.text for d in deltas if d.thought) == "Think about foxes first."
    assert "".join(d.text for d in deltas if not d.thought) == "Foxes."
    assert (response.thought, response.text) == ("Think about foxes first.", "Foxes.")


async def test_litellm_callbacks_the_user_registered_still_see_our_calls(
    fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    litellm = load_litellm()
    seen = threading.Event()
    logged: list[Any] = []

    async def record(kwargs: Any, response: Any, start_time: Any, end_time: Any) -> None:
        logged.append(response)
        seen.set()

    monkeypatch.setattr(litellm, "success_callback", [record])
    monkeypatch.setattr(litellm, "_async_success_callback", [])  # litellm moves async ones here
    fake_server.enqueue({"text": "logged answer"})

    _, response = split(await collect(make_model(fake_server), simple_request()))

    assert response.text == "logged answer"
    assert await asyncio.to_thread(seen.wait, 10), "the success callback never ran"
    assert logged[0].choices[0].message.content == "logged answer"


async def test_generation_settings_are_sent_when_set(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"text": "ok"}, {"text": "ok"})
    model = make_model(fake_server)

    await collect(model, simple_request(temperature=0.2, max_tokens=64))
    await collect(model, simple_request())

    with_settings, without = (request.body for request in fake_server.requests)
    assert (with_settings["temperature"], with_settings["max_tokens"]) == (0.2, 64)
    assert "temperature" not in without and "max_tokens" not in without
    assert "num_retries" not in with_settings  # litellm's own argument, not the provider's


async def test_history_arrives_in_openai_format(fake_server: FakeOpenAIServer) -> None:
    history = [
        SummaryMessage(text="The user loaded sales.csv.", covered_events=12),
        UserMessage(
            parts=[
                ImagePart(media_type="image/png", data_base64="iVBORw0KGgo="),
                TextPart(text="What is in this chart?"),
            ]
        ),
        AssistantMessage(
            text="I will check.",
            thought="secret reasoning",
            model=MODEL,
            tool_calls=[
                ToolCall(id="call_1", name="read_file", arguments='{"path": "a.txt"}'),
                ToolCall(id="call_2", name="run_python", arguments='{"code": "1/0"}'),
            ],
        ),
        ToolResultMessage(call_id="call_1", name="read_file", output="alpha"),
        ToolResultMessage(
            call_id="call_2", name="run_python", error="ZeroDivisionError", message_from_user="use pandas instead"
        ),
        AssistantMessage(text="Done.", model=MODEL),
        user_prompt("thanks"),
    ]
    fake_server.enqueue({"text": "You're welcome."})

    await collect(make_model(fake_server), ModelRequest(system="Be brief.", messages=history))

    assert fake_server.requests[0].body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "[Summary of earlier conversation]\nThe user loaded sales.csv."},
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "text", "text": "What is in this chart?"},
            ],
        },
        {
            "role": "assistant",
            "content": "I will check.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "run_python", "arguments": '{"code": "1/0"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"result": "alpha"}'},
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": '{"error": "ZeroDivisionError", "message_from_user": "use pandas instead"}',
        },
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "thanks"},
    ]


def test_an_empty_system_prompt_is_left_out() -> None:
    assert to_openai_messages("", [user_prompt("hi")]) == [{"role": "user", "content": "hi"}]


async def test_stopping_early_releases_the_connection(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"text": "word " * 200}, {"text": "second answer"})
    model = make_model(fake_server)

    stream = model.stream(simple_request())
    first = await stream.__anext__()
    await stream.aclose()  # the consumer stops (e.g. the user pressed Stop)

    assert isinstance(first, TextDelta)
    _, response = split(await collect(model, simple_request()))
    assert response.text == "second answer"


# -- retries --------------------------------------------------------------------------------


async def test_429_with_retry_after_is_retried_after_the_requested_wait(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"fault": "status", "status": 429, "retry_after": 0.2}, {"text": "finally"})

    _, response = split(await collect(make_model(fake_server), simple_request()))

    assert response.text == "finally"
    first, second = fake_server.requests
    assert second.received_at - first.received_at >= 0.2  # Retry-After beat the 1 ms backoff
    assert second.body == first.body


async def test_a_429_for_an_exhausted_quota_is_not_retried(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue(
        {
            "fault": "status",
            "status": 429,
            "code": "insufficient_quota",
            "message": "You exceeded your current quota, please check your plan.",
        }
    )

    with pytest.raises(ModelRateLimitError, match="exceeded your current quota"):
        await collect(make_model(fake_server), simple_request())
    assert len(fake_server.requests) == 1


async def test_a_retry_after_beyond_the_limit_is_not_waited_for(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"fault": "status", "status": 429, "retry_after": 3600})

    with pytest.raises(ModelRateLimitError, match="HTTP 429"):
        await collect(make_model(fake_server, max_retry_after=30), simple_request())
    assert len(fake_server.requests) == 1


async def test_500s_that_exhaust_the_retries_raise_unavailable_naming_the_model(
    fake_server: FakeOpenAIServer,
) -> None:
    fake_server.enqueue(*[{"fault": "status", "status": 500, "message": "upstream exploded"}] * 3)

    with pytest.raises(ModelUnavailableError) as raised:
        await collect(make_model(fake_server, retries=2), simple_request())

    assert raised.value.model == MODEL
    assert str(raised.value) == f"model {MODEL!r} failed: HTTP 500: upstream exploded"
    assert len(fake_server.requests) == 3  # the first try and two retries
    assert fake_server.pending_steps == 0


@both_stream_paths
async def test_a_connection_reset_before_any_output_is_retried(
    fake_server: FakeOpenAIServer, fast_stream: bool
) -> None:
    fake_server.enqueue({"fault": "reset_mid_stream"}, {"text": "second try"})

    deltas, response = split(await collect(make_model(fake_server, fast_stream=fast_stream), simple_request()))

    assert response.text == "second try" == "".join(delta.text for delta in deltas)
    assert len(fake_server.requests) == 2


async def test_a_reset_after_tool_call_fragments_but_no_text_is_retried(fake_server: FakeOpenAIServer) -> None:
    # tool-call fragments are never shown to the user, so nothing needs taking back
    fake_server.enqueue({"fault": "malformed"}, {"tool_calls": [{"name": "todo", "arguments": {}}]})

    _, response = split(await collect(make_model(fake_server), simple_request()))

    assert [call.name for call in response.tool_calls] == ["todo"]
    assert len(fake_server.requests) == 2


@both_stream_paths
async def test_a_reset_after_text_was_shown_is_not_retried(fake_server: FakeOpenAIServer, fast_stream: bool) -> None:
    fake_server.enqueue({"fault": "reset_mid_stream", "text": "The answer is"}, {"text": "never sent"})
    shown: list[StreamItem] = []

    with pytest.raises(ModelUnavailableError, match="after part of the answer was shown") as raised:
        await collect(make_model(fake_server, fast_stream=fast_stream), simple_request(), into=shown)

    assert raised.value.model == MODEL
    assert "".join(item.text for item in shown if isinstance(item, TextDelta)) == "The answer is"
    assert len(fake_server.requests) == 1 and fake_server.pending_steps == 1


async def test_a_stall_raises_a_timeout(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"fault": "stall", "seconds": 30})

    with pytest.raises(ModelTimeoutError, match=r"no answer within 0\.3 s") as raised:
        await collect(make_model(fake_server, request_timeout=0.3, retries=0), simple_request())

    assert raised.value.model == MODEL
    assert len(fake_server.requests) == 1


async def test_a_stall_before_any_output_is_retried(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"fault": "stall", "seconds": 30}, {"text": "awake"})

    # the timeout also bounds the healthy second answer: generous, so a busy machine passes
    model = make_model(fake_server, request_timeout=1.0, retries=1)

    _, response = split(await collect(model, simple_request()))

    assert response.text == "awake"
    assert len(fake_server.requests) == 2


async def test_a_stall_after_text_was_shown_is_a_timeout_without_retry(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"fault": "stall", "seconds": 30, "text": "Half an"}, {"text": "never sent"})

    with pytest.raises(ModelTimeoutError, match="stalled after part of the answer was shown"):
        await collect(make_model(fake_server, request_timeout=0.5, retries=3), simple_request())

    assert len(fake_server.requests) == 1


# -- stall detection ------------------------------------------------------------------


@both_stream_paths
async def test_GR03_a_stall_before_the_first_byte_ends_with_a_stall_error_after_the_retries(
    fake_server: FakeOpenAIServer, fast_stream: bool
) -> None:
    # the server accepts the request and sends nothing, not even headers
    fake_server.enqueue(*[{"fault": "stall", "seconds": 30}] * 2, {"text": "never sent"})
    model = make_model(
        fake_server, retries=1, fast_stream=fast_stream, stall_first_byte_s=0.2, stall_between_chunks_s=30
    )

    with pytest.raises(ModelStallError) as raised:
        await collect(model, simple_request())

    assert str(raised.value) == f"model {MODEL!r} failed: sent nothing for 0.2 s (stall.first_byte_s)"
    assert raised.value.budget == "stall.first_byte_s" and raised.value.retryable
    assert len(fake_server.requests) == 2 and fake_server.pending_steps == 1  # first try + one retry


@both_stream_paths
async def test_GR03_a_stall_between_chunks_ends_with_a_stall_error_after_the_retries(
    fake_server: FakeOpenAIServer, fast_stream: bool
) -> None:
    # headers and a role chunk arrive at once, then nothing: the between-chunks budget runs out
    fake_server.enqueue(*[{"fault": "stall", "seconds": 30, "started": True}] * 3, {"text": "never sent"})
    model = make_model(
        fake_server, retries=2, fast_stream=fast_stream, stall_first_byte_s=30, stall_between_chunks_s=0.2
    )

    with pytest.raises(ModelStallError, match=r"sent nothing for 0\.2 s between chunks \(stall\.between_chunks_s\)"):
        await collect(model, simple_request())

    assert len(fake_server.requests) == 3 and fake_server.pending_steps == 1


async def test_GR03_a_stalled_attempt_is_retried_and_the_retry_answers(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"fault": "stall", "seconds": 30}, {"text": "awake"})
    # the budget also bounds the healthy answer: generous enough for a busy machine
    model = make_model(fake_server, retries=1, stall_first_byte_s=0.5)

    _, response = split(await collect(model, simple_request()))

    assert response.text == "awake" and len(fake_server.requests) == 2


async def test_GR03_a_stall_after_text_was_shown_is_not_retried(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"fault": "stall", "seconds": 30, "text": "Half an"}, {"text": "never sent"})
    shown: list[StreamItem] = []

    with pytest.raises(ModelStallError, match="stalled after part of the answer was shown: sent nothing"):
        await collect(make_model(fake_server, retries=3, stall_between_chunks_s=0.2), simple_request(), into=shown)

    assert "".join(item.text for item in shown if isinstance(item, TextDelta)) == "Half an"
    assert len(fake_server.requests) == 1


async def test_GR03_a_slow_consumer_is_not_a_stalled_provider(fake_server: FakeOpenAIServer) -> None:
    # only time spent waiting on the provider counts: a consumer that takes longer than the
    # budget between chunks (a busy front end) does not make the provider look stalled
    fake_server.enqueue({"text": "one two three four"})
    model = make_model(fake_server, retries=0, stall_first_byte_s=5, stall_between_chunks_s=0.05)
    items: list[StreamItem] = []

    async for item in model.stream(simple_request()):
        items.append(item)
        if isinstance(item, TextDelta):
            await asyncio.sleep(0.1)  # the consumer's own work, not a wait for the server

    _, response = split(items)
    assert response.text == "one two three four"


async def test_GR03_stopping_during_a_stall_is_a_cancellation_not_a_stall(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue({"fault": "stall", "seconds": 30})
    model = make_model(fake_server, retries=0, stall_first_byte_s=30)

    task = asyncio.ensure_future(collect(model, simple_request()))
    await asyncio.to_thread(fake_server.wait_for_requests, 1)
    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("budget", [0, -1, float("inf"), float("nan")])
def test_GR03_stall_budgets_must_be_finite_and_positive(budget: float) -> None:
    with pytest.raises(ValueError, match="stall.first_byte_s must be a finite number of seconds > 0"):
        LiteLLMModel(MODEL, stall_first_byte_s=budget)


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "error_type", "cause"),
    [
        ({"status": 401, "message": "Invalid credentials"}, ModelAuthError, "HTTP 401: Invalid credentials"),
        ({"status": 403, "message": "Not allowed"}, ModelAuthError, "HTTP 403: Not allowed"),
        (
            {"status": 404, "message": "The model `fake-model` does not exist", "code": "model_not_found"},
            ModelNotFoundError,
            "HTTP 404: The model `fake-model` does not exist",
        ),
        (
            {
                "status": 400,
                "code": "context_length_exceeded",
                "message": "This model's maximum context length is 8192 tokens. However, your messages "
                "resulted in 9000 tokens.",
            },
            ContextWindowError,
            "HTTP 400: This model's maximum context length is 8192 tokens.",
        ),
        (
            {"status": 400, "message": "Invalid value for 'temperature'"},
            ModelBadRequestError,
            "HTTP 400: Invalid value for 'temperature'",
        ),
    ],
    ids=["401", "403", "404", "context-window", "400"],
)
async def test_client_errors_are_typed_and_not_retried(
    fake_server: FakeOpenAIServer, step: dict[str, Any], error_type: type[ModelError], cause: str
) -> None:
    fake_server.enqueue({"fault": "status", **step})

    with pytest.raises(error_type) as raised:
        await collect(make_model(fake_server), simple_request())

    assert type(raised.value) is error_type
    assert raised.value.model == MODEL
    assert raised.value.cause.startswith(cause)
    assert len(fake_server.requests) == 1


async def test_the_api_key_never_appears_in_an_error(fake_server: FakeOpenAIServer) -> None:
    fake_server.enqueue(
        {
            "fault": "status",
            "status": 401,
            "message": f"Incorrect API key provided: {API_KEY}. Authorization: Bearer {API_KEY}",
        }
    )

    with pytest.raises(ModelAuthError) as raised:
        await collect(make_model(fake_server), simple_request())

    printed = "".join(traceback.format_exception(raised.value))  # chained exceptions included
    assert API_KEY not in printed and API_KEY[8:20] not in printed
    assert "Incorrect API key provided: ***" in str(raised.value)
    assert API_KEY not in repr(make_model(fake_server))


async def test_an_exhausted_script_fails_loudly(fake_server: FakeOpenAIServer) -> None:
    with pytest.raises(ModelUnavailableError, match="fake server: script exhausted"):
        await collect(make_model(fake_server, retries=0), simple_request())


# -- prices, context window, loading --------------------------------------------------------


def test_price_comes_from_litellms_cost_map() -> None:
    entry = load_litellm().model_cost["gpt-4o-mini"]
    model = LiteLLMModel(MODEL)

    price = model.price("gpt-4o-mini")

    assert price is not None
    assert price.input == pytest.approx(entry["input_cost_per_token"] * 1e6)
    assert price.output == pytest.approx(entry["output_cost_per_token"] * 1e6)
    assert price.cached_input == pytest.approx(entry["cache_read_input_token_cost"] * 1e6)
    assert model.price("openai/gpt-4o-mini") == price  # provider prefix dropped when needed


def test_an_unknown_model_has_no_price_and_no_context_window() -> None:
    model = LiteLLMModel("openai/unknown-xyz")

    assert model.price("openai/unknown-xyz") is None
    assert model.context_window() is None


def test_context_window_of_a_known_model() -> None:
    expected = load_litellm().model_cost["gpt-4o-mini"]["max_input_tokens"]

    assert LiteLLMModel("openai/gpt-4o-mini").context_window() == expected > 0


def test_importing_the_adapter_does_not_import_litellm() -> None:
    code = "import blitz_kernel.models.litellm_model, sys; assert 'litellm' not in sys.modules"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# -- the test harness itself ----------------------------------------------------------------


def test_the_network_guard_refuses_non_loopback_addresses(no_real_network: list[str]) -> None:
    import socket

    with pytest.raises(ConnectionRefusedError, match="may not reach the network"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)  # TEST-NET-1, never routable
    assert no_real_network == ["('192.0.2.1', 443)"]
    no_real_network.clear()  # seen and expected: do not fail this test at teardown


def _control(server: FakeOpenAIServer, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}",
        data=data,
        method="GET" if data is None else "POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


async def test_the_fake_server_is_driven_over_http(fake_server: FakeOpenAIServer) -> None:
    assert _control(fake_server, "/_control/script", [{"text": "from another process"}])["pending"] == 1

    _, response = split(await collect(make_model(fake_server), simple_request("over http")))

    assert response.text == "from another process"
    (recorded,) = _control(fake_server, "/_control/requests")
    assert recorded["body"]["messages"][-1] == {"role": "user", "content": "over http"}
    _control(fake_server, "/_control/reset", {})
    assert _control(fake_server, "/_control/requests") == [] and fake_server.pending_steps == 0
    with pytest.raises(urllib.error.HTTPError) as rejected:
        _control(fake_server, "/_control/script", [{"fault": "no-such-fault"}])
    assert rejected.value.code == 400


def test_the_fake_server_runs_as_its_own_process(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "looped"}]))
    process = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "fakeserver.py"), "--port", "0", "--repeat-script", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        for _ in range(3):  # the loop replays its script forever
            request = urllib.request.Request(
                f"{base_url}/chat/completions", method="POST", data=json.dumps({"model": "m", "messages": []}).encode()
            )
            with urllib.request.urlopen(request, timeout=5) as response:
                answer = json.loads(response.read())
            assert answer["choices"][0]["message"]["content"] == "looped"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_refused_connection_says_nothing_answered_at_the_address():
    """Nothing listens at the address: litellm reports "HTTP 500: Connection error."; the
    user reads which address could not be reached and why, as a typed, retryable error."""
    from blitz_kernel.errors import ModelConnectionError

    api_base = f"http://127.0.0.1:{_closed_port()}/v1"
    model = LiteLLMModel(MODEL, api_base=api_base, api_key=API_KEY, retries=1, backoff_base=0.001, backoff_cap=0.01)
    with pytest.raises(ModelConnectionError) as caught:
        await collect(model, simple_request())
    assert str(caught.value) == f"model '{MODEL}' failed: could not connect to {api_base}: connection refused"
    assert caught.value.retryable and "HTTP" not in str(caught.value)


async def test_the_fallback_chain_answers_when_the_primary_refuses_the_connection():
    from blitz_kernel.models.fallback import FallbackModel
    from blitz_kernel.models.scripted import ScriptedModel

    api_base = f"http://127.0.0.1:{_closed_port()}/v1"
    primary = LiteLLMModel(MODEL, api_base=api_base, api_key=API_KEY, retries=0)
    chain = FallbackModel([primary, ScriptedModel([{"text": "the fallback answers"}], name="scripted:fallback")])
    items = await collect(chain, simple_request())  # type: ignore[arg-type]
    [switch] = [item for item in items if getattr(item, "kind", None) == "model_switch"]
    assert (switch.failed, switch.next) == (MODEL, "scripted:fallback")
    assert switch.reason == f"could not connect to {api_base}: connection refused"
    assert isinstance(items[-1], ModelResponse) and items[-1].text == "the fallback answers"
