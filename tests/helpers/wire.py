"""Assertions on what the provider was sent: the OpenAI chat messages the fake server recorded.

Why shared: the wire, robustness, kernel and browser tiers all check the same things (the tool
messages and what they carried, the last user message, which models were asked, a well-formed
conversation), and each check should read the same in every tier.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakeserver import FakeOpenAIServer

Body = dict[str, Any]


def sent_messages(server: FakeOpenAIServer, index: int = -1) -> list[dict[str, Any]]:
    """The messages of the `index`-th chat request the server received (default: the last)."""
    messages: list[dict[str, Any]] = server.requests[index].body["messages"]
    return messages


def tool_messages(body: Body) -> list[dict[str, Any]]:
    """The tool messages (role "tool") of a request body, in order."""
    return [m for m in body["messages"] if m["role"] == "tool"]


def tool_results(body: Body) -> list[dict[str, Any]]:
    """The tool messages' contents, parsed (each is a JSON object: result, error, ...)."""
    return [json.loads(m["content"]) for m in tool_messages(body)]


def last_tool_result(body: Body) -> dict[str, Any]:
    """The last tool message's content, parsed."""
    [content] = tool_results(body)[-1:]
    return content


def last_user_text(body: Body) -> str:
    """The last user message's content (a list of parts as JSON text)."""
    content = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


def received_models(server: FakeOpenAIServer) -> list[str]:
    """The model named by each chat request, in order (a fallback chain at work)."""
    return [request.body["model"] for request in server.requests]


def check_request(sent: Body | list[dict[str, Any]]) -> None:
    """What the provider was sent (a body, or its messages) is a well-formed conversation:
    each assistant tool call is answered by exactly one tool message before anything else."""
    messages = sent["messages"] if isinstance(sent, dict) else sent
    open_ids: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_ids, messages
            open_ids.remove(message["tool_call_id"])
            continue
        assert not open_ids, f"calls {open_ids} have no result: {messages}"
        if message["role"] == "assistant":
            open_ids = {call["id"] for call in message.get("tool_calls") or []}
    assert not open_ids, messages
