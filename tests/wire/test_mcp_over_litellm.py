"""MCP tools through the real litellm adapter: what the fake OpenAI server *received*."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from blitz_kernel.engine.workspace import Workspace
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.workspaces import wire_workspace

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


@pytest.fixture
async def workspace(
    fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Workspace]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")
    ws = wire_workspace(
        tmp_path,
        fake_server,
        **{"mcp.servers.warehouse": {"command": sys.executable, "args": [SERVER], "timeout_s": 30}},
    )
    yield ws
    await ws.mcp.aclose()


async def test_mcp_names_and_schemas_are_in_the_request_and_the_result_comes_back(
    workspace: Workspace, fake_server: FakeOpenAIServer
):
    fake_server.enqueue(
        {"tool_calls": [{"name": "mcp__warehouse__echo", "arguments": {"text": "rows", "times": 2}}]},
        {"text": "Echoed."},
    )
    result = await workspace.run("echo rows twice", approve="allow")
    assert result.stop_reason == "end_turn", result.error
    tools = {t["function"]["name"]: t["function"] for t in fake_server.requests[0].body["tools"]}
    echo = tools["mcp__warehouse__echo"]
    assert echo["parameters"]["properties"]["text"]["type"] == "string"
    assert echo["parameters"]["required"] == ["text"]
    assert "Echo the text back" in echo["description"]
    assert {"list_mcp_resources", "read_mcp_resource", "mcp__warehouse__slow"} <= set(tools)
    [tool_message] = [m for m in fake_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "rows rows" in tool_message["content"]
    assert json.loads(tool_message["content"])
