"""Structured output on the wire: the `final_result` tool the provider receives carries the
schema, a wrong answer goes back as that call's tool result, and the next turn's request is a
valid history; a model whose provider has structured output (litellm's map says so) gets the
schema as `response_format` in one final request without tools, and the fake server refuses a
`response_format` OpenAI would refuse, with OpenAI's words (docs/structured-output.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from blitz_kernel.core.history import user_prompt
from blitz_kernel.engine.turn.structured import output_schema
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import ModelBadRequestError, ModelError
from blitz_kernel.models.base import ModelRequest, ModelResponse, ResponseSchema
from blitz_kernel.models.litellm_model import LiteLLMModel
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import sent_messages
from tests.helpers.workspaces import wire_workspace

pytestmark = pytest.mark.usefixtures("model_path")  # the direct OpenAI path and litellm


class Summary(BaseModel):
    rows: int
    columns: list[str]


@pytest.fixture
def workspace(fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")
    return wire_workspace(tmp_path, fake_server, "openai/fake-model")


async def test_the_schema_reaches_the_provider_and_a_retry_fixes_the_answer(
    workspace: Workspace, fake_server: FakeOpenAIServer
):
    fake_server.enqueue(
        {"tool_calls": [{"name": "final_result", "arguments": {"rows": "two", "columns": ["a"]}}]},
        {"tool_calls": [{"name": "final_result", "arguments": {"rows": 2, "columns": ["a", "b"]}}]},
        {"text": "Two rows."},
    )
    result = await workspace.run("summarise data.csv", output_type=Summary)
    assert result.output == Summary(rows=2, columns=["a", "b"])
    [tool] = [t for t in fake_server.requests[0].body["tools"] if t["function"]["name"] == "final_result"]
    assert tool["function"]["parameters"]["properties"]["columns"]["type"] == "array"
    refused = [m for m in sent_messages(fake_server, 1) if m["role"] == "tool"][0]
    assert "rows" in refused["content"] and "Summary" in refused["content"]

    later = await workspace.run("and in words?")  # the next turn is an ordinary one
    assert later.text == "Two rows." and later.output is None
    roles = [m["role"] for m in sent_messages(fake_server, 2)]
    assert roles[-3:] == ["assistant", "tool", "user"]
    assert "final_result" not in json.dumps(fake_server.requests[2].body.get("tools", []))


NATIVE_MODEL = "openai/gpt-4o-mini"
"""In litellm's map with `supports_response_schema` (the fake server answers for it)."""


async def test_a_model_with_structured_output_gets_the_schema_in_a_final_request_without_tools(
    fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")
    workspace = wire_workspace(tmp_path, fake_server, NATIVE_MODEL)
    (tmp_path / "data.csv").write_text("a,b\n1,2\n3,4\n")
    fake_server.enqueue(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "data.csv"}}]},
        {"text": "Two rows, columns a and b."},
        {"json": {"rows": 2, "columns": ["a", "b"]}},
    )
    result = await workspace.run("summarise data.csv", output_type=Summary)
    assert result.error is None and result.output == Summary(rows=2, columns=["a", "b"])
    first, final = fake_server.requests[0].body, fake_server.requests[2].body
    assert "response_format" not in first and "final_result" not in json.dumps(first["tools"])
    assert "tools" not in final
    shape = final["response_format"]
    assert shape["type"] == "json_schema" and shape["json_schema"]["name"] == "Summary"
    assert shape["json_schema"]["schema"]["properties"]["columns"]["type"] == "array"
    assert shape["json_schema"]["strict"] is False
    roles = [m["role"] for m in final["messages"]]
    assert roles[-3:] == ["tool", "assistant", "user"]  # the tool step stays in the history


def native_request(shape: ResponseSchema) -> ModelRequest:
    return ModelRequest(system="You are a test.", messages=[user_prompt("data")], response_schema=shape)


async def answer(server: FakeOpenAIServer, shape: ResponseSchema) -> ModelResponse:
    model = LiteLLMModel(NATIVE_MODEL, api_base=server.base_url, api_key="sk-wire-not-a-real-key", retries=0)
    items = [item async for item in model.stream(native_request(shape))]
    response = items[-1]
    assert isinstance(response, ModelResponse)
    return response


async def test_the_schema_blitz_sends_is_one_openai_takes_and_the_answer_is_the_json(fake_server: FakeOpenAIServer):
    closed = {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    for spec, name in ((closed, "count by region!"), (list[int], None)):
        fake_server.enqueue({"json": {"n": 3} if name else {"result": [1]}})
        shape = output_schema(spec, name).response_schema()
        response = await answer(fake_server, shape)
        assert json.loads(response.text) == ({"n": 3} if name else {"result": [1]})
        sent = fake_server.requests[-1].body["response_format"]["json_schema"]
        assert sent["strict"] is (name is not None)


@pytest.mark.parametrize(
    ("shape", "wording"),
    [
        (ResponseSchema(name="no spaces", json_schema={"type": "object"}), "string does not match pattern"),
        (ResponseSchema(name="x" * 65, json_schema={"type": "object"}), "string too long"),
        (ResponseSchema(name="Rows", json_schema={"type": "array"}), "must be a JSON Schema of 'type: \"object\"'"),
        (
            ResponseSchema(name="Rows", json_schema={"type": "object", "properties": {"a": {}}}, strict=True),
            "'additionalProperties' is required to be supplied and to be false",
        ),
    ],
)
async def test_a_response_format_openai_refuses_is_refused_with_its_words(
    fake_server: FakeOpenAIServer, shape: ResponseSchema, wording: str
):
    fake_server.enqueue({"text": "never sent"})
    # litellm files OpenAI's "string too long" under context-window errors; the words are OpenAI's
    # either way, and blitz never sends a name over 64 characters (OutputSchema.response_schema).
    refused = ModelError if "too long" in wording else ModelBadRequestError
    with pytest.raises(refused, match=wording):
        await answer(fake_server, shape)
    assert fake_server.pending_steps == 1  # refused before any answer
