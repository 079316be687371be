"""Structured output through litellm to providers that are not OpenAI: for Claude, litellm turns
the schema into Anthropic's own `output_format` (the models its map marks
`supports_native_structured_output`), for Gemini into `generationConfig.response_json_schema`;
the answer's JSON text is the turn's data (docs/structured-output.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.fake_anthropic import FakeAnthropicServer
from tests.fake_gemini import FakeGeminiServer
from tests.helpers.workspaces import open_workspace


class Rows(BaseModel):
    rows: int


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropicServer]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wire-not-a-real-key")
    with FakeAnthropicServer() as server:
        yield server


async def test_claude_gets_the_schema_as_its_output_format_in_a_final_request(
    fake: FakeAnthropicServer, tmp_path: Path
):
    workspace = open_workspace(
        tmp_path, "anthropic/claude-sonnet-4-5", overrides={"api_base": fake.base_url, "model_retries": 0}
    )
    fake.enqueue({"text": "There are two rows."}, {"text": '{"rows": 2}'})
    result = await workspace.run("how many rows?", output_type=Rows)
    assert result.error is None and result.output == Rows(rows=2)
    first, final = fake.requests[0].body, fake.requests[1].body
    assert "output_format" not in first
    assert "final_result" not in str(first.get("tools", []))
    assert final["output_format"]["type"] == "json_schema"
    assert final["output_format"]["schema"]["properties"]["rows"]["type"] == "integer"
    assert [m["role"] for m in final["messages"]][-2:] == ["assistant", "user"]


async def test_gemini_gets_the_schema_as_its_response_json_schema_in_a_final_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-wire-not-a-real-key")
    with FakeGeminiServer() as fake:
        workspace = open_workspace(
            tmp_path, "gemini/gemini-2.5-flash", overrides={"api_base": fake.base_url, "model_retries": 0}
        )
        fake.enqueue({"text": "There are two rows."}, {"text": '{"rows": 2}'})
        result = await workspace.run("how many rows?", output_type=Rows)
        assert result.error is None and result.output == Rows(rows=2)
        first, final = fake.generation_bodies()
        assert "final_result" not in str(first.get("tools", []))
        config = final["generationConfig"]
        assert config["response_mime_type"] == "application/json"
        assert config["response_json_schema"]["properties"]["rows"]["type"] == "integer"
        assert "tools" not in final
