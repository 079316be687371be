"""Prompt-cache breakpoints for providers whose caching must be asked for (Anthropic).

Why: an agent turn re-sends its whole history at every step. Anthropic reads a prefix from
its cache only up to a block marked `cache_control`, and allows at most 4 such marks per
request. Three are placed, in the OpenAI-format messages litellm translates:

- the system prompt: tools and instructions, the same for every step of every turn;
- the message before the latest assistant step: where the previous request ended, so this
  request reads everything the previous one wrote, however many blocks the step added;
- the last message: this request's own end, written for the next step to read.

Marks go on a copy of the messages (the direct path reuses its dicts between requests; a mark
must never leak into another request). Cost: one pass over the message list, a few dict copies.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4
"""Anthropic refuses a request with more marked blocks than this."""


def mark_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with cache_control on the system prompt, the end of the previous step and
    the last message (at most 3 marks; see the module doc)."""
    marked = list(messages)
    targets: list[int] = []
    if marked and marked[0].get("role") == "system":
        targets.append(0)
    last_assistant = max((i for i, m in enumerate(marked) if m.get("role") == "assistant"), default=-1)
    if last_assistant > 0 and marked[last_assistant - 1].get("role") != "system":
        targets.append(last_assistant - 1)
    if marked and marked[-1].get("role") != "system":
        targets.append(len(marked) - 1)
    for index in dict.fromkeys(targets):
        marked[index] = _with_mark(marked[index])
    return marked


def _with_mark(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of `message` whose last content block carries the mark (a string becomes one
    text block; a tool result is marked as a whole, which litellm puts on its tool_result)."""
    content = message.get("content")
    if message.get("role") == "tool" or not content:
        return {**message, "cache_control": EPHEMERAL}
    if isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content, "cache_control": EPHEMERAL}]}
    blocks = list(content)
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return {**message, "content": blocks}


def count_marks(messages: list[dict[str, Any]]) -> int:
    """How many breakpoints `messages` carry (for checks: never above MAX_BREAKPOINTS)."""
    count = 0
    for message in messages:
        if message.get("cache_control"):
            count += 1
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for block in content if isinstance(block, dict) and block.get("cache_control"))
    return count
