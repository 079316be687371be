"""Compaction: replace the early part of a history by a model-written summary.

The window is chosen so a tool call is never separated from its result. Earlier summaries
inside the window are fed to the summariser as "[Summary of earlier conversation]", so a
second compaction keeps the first one's content. Only prose is kept; an empty summary is an
error and nothing changes. The replaced messages move to the session's archive (the full
transcript stays searchable); nothing is dropped unsummarised.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic import BaseModel

from ...core.history import (
    AssistantMessage,
    Message,
    SummaryMessage,
    TextPart,
    ToolResultMessage,
    UserMessage,
    message_chars,
)
from ...core.terms import SUMMARY_HEADER
from ...core.usage import TokenUsage
from ...errors import CompactionError, ModelError, NothingToCompactError
from ...models.base import Model, ModelRequest, ModelResponse

SUMMARY_TIMEOUT_S = 180.0
RESULT_CHARS = 2000

SUMMARISER_INSTRUCTIONS = """\
You summarise the earlier part of a working session between a user and an assistant that works
inside a Jupyter kernel, so that the assistant can continue without the full transcript.
Write plain prose and short lists (no tool calls), with these sections:
- Goals and constraints the user stated
- Decisions made, and why
- Files, notebook cells and variables read or changed
- Code run and its outcomes
- Unresolved errors
- Next steps
Keep names, paths, numbers and error messages exact. Include everything from earlier summaries
that still matters."""


class CompactionResult(BaseModel):
    """What a compaction did (shown to the user after a compaction)."""

    covered_events: int
    covered_turns: int
    tokens_before: int
    """Estimated prompt size before (about four characters a token)."""
    tokens_after: int
    summary: str
    model: str
    """The model that wrote the summary (its usage is priced by this name)."""
    usage: TokenUsage


def estimate_tokens(system: str, messages: list[Message]) -> int:
    """A cheap, provider-independent size estimate (about four characters a token)."""
    return (len(system) + sum(message_chars(m) for m in messages)) // 4


def manual_window(history: list[Message], keep_turns: int) -> int:
    """The index where the keep_turns-th most recent user turn starts; everything
    before it is the window. User prompts only: not tool results, not summaries."""
    if keep_turns < 1:
        raise ValueError("keep_turns must be at least 1")
    prompts = [i for i, message in enumerate(history) if isinstance(message, UserMessage)]
    split = prompts[-keep_turns] if len(prompts) >= keep_turns else 0
    _require_content(history[:split])
    return split


def automatic_window(history: list[Message], retain_events: int, max_tail_tokens: int | None = None) -> int:
    """All but the last `retain_events` messages, never starting the kept tail with a
    result whose call would be summarised away. With `max_tail_tokens`, fewer messages are kept
    when the tail alone would be that large, so the prompt after compaction fits."""
    split = _unit_start(history, max(0, len(history) - retain_events))
    if max_tail_tokens is not None:
        tail_tokens = sum(message_chars(m) for m in history[split:]) // 4
        while tail_tokens > max_tail_tokens and split < len(history) - 1:
            next_split = _unit_start(history, split + 1, forward=True)
            if next_split >= len(history):
                break
            tail_tokens -= sum(message_chars(m) for m in history[split:next_split]) // 4
            split = next_split
    _require_content(history[:split])
    return split


def _unit_start(history: list[Message], index: int, *, forward: bool = False) -> int:
    """The nearest index at or around `index` where the tail may start: not on a tool result
    (moving back to its call, or forward past the results)."""
    step = 1 if forward else -1
    while 0 < index < len(history) and isinstance(history[index], ToolResultMessage):
        index += step
    return index


def _require_content(window: list[Message]) -> None:
    if not any(not isinstance(message, SummaryMessage) for message in window):
        raise NothingToCompactError("nothing to compact: no turns before the ones to keep")


def render_window(window: list[Message]) -> str:
    """The window as a transcript the summariser reads."""
    lines: list[str] = []
    for message in window:
        if isinstance(message, SummaryMessage):
            lines.append(f"{SUMMARY_HEADER}\n{message.text}")
        elif isinstance(message, UserMessage):
            images = sum(1 for part in message.parts if not isinstance(part, TextPart))
            lines.append(f"User: {message.text}" + (f" [{images} image(s)]" if images else ""))
        elif isinstance(message, AssistantMessage):
            if message.text:
                lines.append(f"Assistant: {message.text}")
            lines += [f"Assistant called {call.name}({call.arguments})" for call in message.tool_calls]
        else:
            body = message.output if message.ok else f"ERROR: {message.error}"
            body = body or ""
            if len(body) > RESULT_CHARS:
                body = body[:RESULT_CHARS] + f" [... {len(body) - RESULT_CHARS} more characters]"
            lines.append(f"Result of {message.name}: {body}")
            if message.message_from_user is not None:
                lines.append(f"User (while the assistant worked): {message.message_from_user}")
    return "\n\n".join(lines)


@dataclass
class Compactor:
    """Summarises a window with the session's current model and records the usage."""

    model: Model
    system: str
    """The turn's system prompt, counted in the size estimates."""

    async def summarise(
        self, history: list[Message], split: int, focus: str | None
    ) -> tuple[SummaryMessage, CompactionResult]:
        """The summary of `history[:split]` and what it does; raises CompactionError. The
        caller puts it in place (`Session.replace_window`): nothing changes here."""
        window, tail = history[:split], history[split:]
        prompt = render_window(window)
        if focus:
            prompt += f"\n\nPay particular attention to: {focus}"
        request = ModelRequest(system=SUMMARISER_INSTRUCTIONS, messages=[UserMessage(parts=[TextPart(text=prompt)])])
        response = await self._summarise(request)
        summary = response.text.strip()
        if not summary:
            raise CompactionError(f"model {response.model!r} returned an empty summary; the history is unchanged")
        covered = sum(m.covered_events if isinstance(m, SummaryMessage) else 1 for m in window)
        message = SummaryMessage(text=summary, covered_events=covered)
        return message, CompactionResult(
            covered_events=covered,
            covered_turns=sum(1 for m in window if isinstance(m, UserMessage)),
            tokens_before=estimate_tokens(self.system, history),
            tokens_after=estimate_tokens(self.system, [message, *tail]),
            summary=summary,
            model=response.model,
            usage=response.usage,
        )

    async def _summarise(self, request: ModelRequest) -> ModelResponse:
        try:
            async with asyncio.timeout(SUMMARY_TIMEOUT_S):
                response: ModelResponse | None = None
                async for item in self.model.stream(request):
                    if isinstance(item, ModelResponse):
                        response = item
        except TimeoutError:
            raise CompactionError(
                f"summarising timed out after {SUMMARY_TIMEOUT_S:g} s; the history is unchanged"
            ) from None
        except ModelError as exc:
            raise CompactionError(f"summarising failed: {exc}; the history is unchanged") from None
        if response is None:
            raise CompactionError("the summariser's stream ended without a response; the history is unchanged")
        return response
