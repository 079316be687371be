"""The fake Gemini and Ollama servers refuse what the real services refuse, with their error
shapes: without this, a wire test passing against them would prove nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fake_gemini import FakeGeminiServer
from tests.fake_ollama import FakeOllamaServer

KEY = "AIza-fake-key"
USER = {"role": "user", "parts": [{"text": "hi"}]}
CALL = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}


def gemini_post(server: FakeGeminiServer, body: Any, *, key: str | None = KEY, stream: bool = False) -> httpx.Response:
    action = "streamGenerateContent?alt=sse" if stream else "generateContent"
    headers = {"x-goog-api-key": key} if key else {}
    return httpx.post(f"{server.base_url}/models/gemini-2.5-flash:{action}", json=body, headers=headers)


@pytest.mark.parametrize(
    ("contents", "tools", "words"),
    [
        ([], None, "contents is not specified"),
        ([{"role": "assistant", "parts": [{"text": "x"}]}], None, "valid role"),
        ([{"role": "user", "parts": []}], None, "must not be empty"),
        ([CALL], None, "first turn is a user turn"),
        ([USER, USER], None, "alternate between user and model"),
        ([USER, CALL, USER], None, "function response turn comes immediately after a function call turn"),
        (
            [USER, CALL, {"role": "user", "parts": [{"functionResponse": {"name": "g", "response": {}}}]}],
            None,
            "do not match",
        ),
        (
            [USER, CALL, {"role": "user", "parts": [{"function_response": {"name": "f", "response": {}}}] * 2}],
            None,
            "number of function response parts",
        ),
        ([USER], [{"functionDeclarations": [{"name": "9bad"}]}], "Invalid function name"),
        ([USER], [{"function_declarations": [{"name": "f"}, {"name": "f"}]}], "Duplicate function declaration"),
    ],
)
def test_gemini_refuses_what_the_service_refuses(contents: list[Any], tools: Any, words: str) -> None:
    with FakeGeminiServer() as server:
        server.enqueue({"text": "never"})
        body: dict[str, Any] = {"contents": contents}
        if tools is not None:
            body["tools"] = tools
        answer = gemini_post(server, body)
        assert answer.status_code == 400
        error = answer.json()["error"]
        assert error["status"] == "INVALID_ARGUMENT" and words in error["message"], error
        assert server.pending_steps == 1  # a refused request consumes no step


def test_gemini_needs_a_key_and_a_known_model() -> None:
    with FakeGeminiServer(api_key=KEY, models={"gemini-2.5-flash"}) as server:
        assert gemini_post(server, {"contents": [USER]}, key=None).json()["error"]["status"] == "PERMISSION_DENIED"
        assert gemini_post(server, {"contents": [USER]}, key="other").status_code == 400
        other = httpx.post(
            f"{server.base_url}/models/gemini-9:generateContent",
            json={"contents": [USER]},
            headers={"x-goog-api-key": KEY},
        )
        assert other.status_code == 404 and other.json()["error"]["status"] == "NOT_FOUND"


def test_gemini_answers_a_valid_conversation_and_streams_sse() -> None:
    with FakeGeminiServer(max_input_tokens=50) as server:
        server.enqueue({"text": "Hello there", "usage": {"cached": 3, "thoughts": 2}}, {"text": "plain"})
        answer = gemini_post(
            server,
            {
                "contents": [
                    USER,
                    CALL,
                    {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"ok": 1}}}]},
                ]
            },
            stream=True,
        )
        events = [line for line in answer.text.splitlines() if line.startswith("data: ")]
        assert answer.status_code == 200 and len(events) == 3
        assert '"finishReason":"STOP"' in events[-1] and '"cachedContentTokenCount":3' in events[-1]
        assert gemini_post(server, {"contents": [USER]}).json()["candidates"][0]["content"]["parts"] == [
            {"text": "plain"}
        ]
        too_long = gemini_post(server, {"contents": [{"role": "user", "parts": [{"text": "x" * 1000}]}]})
        assert (
            too_long.status_code == 400
            and "exceeds the maximum number of tokens" in too_long.json()["error"]["message"]
        )


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"messages": []}, 400, "model is required"),
        ({"model": "nope", "messages": []}, 404, "try pulling it first"),
        ({"model": "tiny", "messages": [], "tools": [{"type": "function"}]}, 400, "does not support tools"),
        ({"model": "m", "messages": [{"role": "robot", "content": "x"}]}, 400, "invalid role"),
        (
            {"model": "m", "messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}]},
            400,
            "must follow",
        ),
        (
            {
                "model": "m",
                "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}],
            },
            400,
            "cannot unmarshal string",
        ),
        (
            {"model": "tiny", "messages": [{"role": "user", "content": "x", "images": ["aGk="]}]},
            500,
            "does not support images",
        ),
    ],
)
def test_ollama_refuses_what_ollama_refuses(body: dict[str, Any], status: int, words: str) -> None:
    with FakeOllamaServer(models={"m": {"tools", "vision"}, "tiny": set()}) as server:
        server.enqueue({"text": "never"})
        answer = httpx.post(f"{server.base_url}/api/chat", json=body)
        assert answer.status_code == status and words in answer.json()["error"], answer.text
        assert server.pending_steps == 1


def test_ollama_streams_ndjson_with_usage_in_the_done_line() -> None:
    with FakeOllamaServer(models={"m": {"tools"}}) as server:
        server.enqueue(
            {"text": "Hi you", "tool_calls": [{"name": "f", "arguments": {"a": 1}}], "usage": {"prompt": 7, "eval": 3}}
        )
        answer = httpx.post(
            f"{server.base_url}/api/chat", json={"model": "m", "messages": [{"role": "user", "content": "x"}]}
        )
        lines = [line for line in answer.text.splitlines() if line]
        assert answer.status_code == 200 and len(lines) == 4
        assert '"tool_calls":[{"function":{"index":0,"name":"f","arguments":{"a":1}}}]' in lines[2]
        assert '"done":true' in lines[-1] and '"prompt_eval_count":7' in lines[-1] and '"eval_count":3' in lines[-1]
