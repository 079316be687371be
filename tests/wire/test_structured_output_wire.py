"""Structured output on the wire: the `final_result` tool the provider receives carries the
schema, a wrong answer goes back as that call's tool result, and the next turn's request is a
valid history (docs/structured-output.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from blitz_kernel.engine.workspace import Workspace
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
