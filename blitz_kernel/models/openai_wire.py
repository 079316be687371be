"""The OpenAI chat-completions wire format, both ways: our history and tool specs as the
request litellm sends for every provider, and a streamed answer (SDK or litellm chunks) back
into `TextDelta`s and one `ModelResponse`.

Kept apart from the adapter because it is pure data translation: no litellm import, no I/O,
so it is cheap to import and to test on its own, and the adapter stays about sending,
retrying and timing.

With `reuse=True` (the direct OpenAI path) each message's dict and each tool set's list are
built once and handed out again for every later request: a history only grows by committed
messages that are never changed in place, so a step costs the same at the thousandth turn as
at the first. The SDK only serialises what it is given; litellm may rewrite a request's
messages while adapting it to a provider, so it always gets fresh dicts.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar

from ..core.history import (
    AssistantMessage,
    ImagePart,
    Message,
    SummaryMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..core.terms import SUMMARY_HEADER
from ..core.usage import TokenUsage
from .base import ModelResponse, TextDelta, ToolSpec

SUMMARY_PREFIX = SUMMARY_HEADER + "\n"

K = TypeVar("K")
V = TypeVar("V")


class _PerObject(Generic[K, V]):
    """Values kept per live object, by identity (pydantic models are not hashable): an entry
    goes when its object is collected, so a long kernel does not keep old sessions' dicts."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], V]] = {}

    def get(self, key: K) -> V | None:
        entry = self._entries.get(id(key))
        return entry[1] if entry is not None and entry[0]() is key else None

    def put(self, key: K, value: V) -> V:
        ident = id(key)

        def forget(ref: weakref.ref[Any], ident: int = ident) -> None:
            entry = self._entries.get(ident)
            if entry is not None and entry[0] is ref:
                del self._entries[ident]

        self._entries[ident] = (weakref.ref(key, forget), value)
        return value

    def __len__(self) -> int:
        return len(self._entries)


_MESSAGE_DICTS: _PerObject[Message, dict[str, Any]] = _PerObject()
_TOOL_LISTS: dict[tuple[int, ...], tuple[Sequence[ToolSpec], list[dict[str, Any]]]] = {}
_TOOL_LISTS_MAX = 64

# -- history -> OpenAI chat messages ----------------------------------------------------------


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if all(isinstance(part, TextPart) for part in message.parts):
        return message.text
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ImagePart):
            url = f"data:{part.media_type};base64,{part.data_base64}"
            content.append({"type": "image_url", "image_url": {"url": url}})
        else:
            content.append({"type": "text", "text": part.text})
    return content


def _assistant_message(message: AssistantMessage) -> dict[str, Any]:
    converted: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        converted["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments or "{}"}}
            for call in message.tool_calls
        ]
    elif not message.text:
        converted["content"] = ""  # an assistant turn needs content or tool calls
    return converted


def to_openai_message(message: Message) -> dict[str, Any]:
    """One message of our history as an OpenAI chat message."""
    if isinstance(message, UserMessage):
        return {"role": "user", "content": _user_content(message)}
    if isinstance(message, AssistantMessage):
        return _assistant_message(message)
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.to_model_content()}
    if isinstance(message, SummaryMessage):
        return {"role": "user", "content": SUMMARY_PREFIX + message.text}
    raise TypeError(f"cannot send {type(message).__name__} to a model")  # pragma: no cover - closed union


def to_openai_messages(system: str, messages: Iterable[Message], *, reuse: bool = False) -> list[dict[str, Any]]:
    """Our history as OpenAI chat messages (the format litellm takes for every provider).

    Reasoning text is not sent back: it is shown to the user, not part of the conversation.
    A summary becomes a user message, because it stands in for earlier turns of both sides.
    `reuse`: hand out each message's dict built for an earlier request (see the module doc).
    """
    converted: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    seen: list[ImagePart] = []  # images of the current run of tool results (view_image)
    cache = _MESSAGE_DICTS
    for message in messages:
        if seen and not isinstance(message, ToolResultMessage):
            converted.append(_tool_images_message(seen))
            seen = []
        if reuse:
            entry = cache.get(message)
            converted.append(entry if entry is not None else cache.put(message, to_openai_message(message)))
        else:
            converted.append(to_openai_message(message))
        if isinstance(message, ToolResultMessage):
            seen.extend(message.images)
    if seen:
        converted.append(_tool_images_message(seen))
    return converted


def _tool_images_message(images: list[ImagePart]) -> dict[str, Any]:
    """Tool messages carry text only, so the images of a step's results follow them as a user
    message (works with every provider litellm maps the OpenAI format to)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": "[images returned by the tool calls above]"}]
    for part in images:
        url = f"data:{part.media_type};base64,{part.data_base64}"
        content.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": content}


def to_openai_tools(tools: Sequence[ToolSpec], *, reuse: bool = False) -> list[dict[str, Any]]:
    """Tool specs in the OpenAI function-tool format; `reuse`: the list built for the same
    specs before (a turn sends the same tool set at every step)."""
    if not reuse:
        return _tool_dicts(tools)
    key = tuple(map(id, tools))
    entry = _TOOL_LISTS.get(key)
    if entry is not None:
        return entry[1]
    if len(_TOOL_LISTS) >= _TOOL_LISTS_MAX:
        _TOOL_LISTS.clear()
    converted = _tool_dicts(tools)
    _TOOL_LISTS[key] = (tuple(tools), converted)  # keeps the specs alive: their ids stay theirs
    return converted


def _tool_dicts(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters},
        }
        for tool in tools
    ]


# -- reading a stream ------------------------------------------------------------------------


class ToolCallAssembler:
    """Joins streamed tool-call fragments: the first fragment of a call carries its index, id
    and name, later ones carry pieces of the argument string."""

    def __init__(self) -> None:
        self._calls: dict[int, list[Any]] = {}  # index -> [id, name, argument pieces]

    def add(self, fragments: Iterable[Any]) -> None:
        for fragment in fragments:
            index = self._index_of(fragment)
            call = self._calls.get(index)
            if call is None:
                call = self._calls[index] = ["", "", []]
            if fragment.id and not call[0]:
                call[0] = fragment.id
            function = fragment.function
            if function is not None:
                if function.name and not call[1]:
                    call[1] = function.name
                if function.arguments:
                    call[2].append(function.arguments)

    def _index_of(self, fragment: Any) -> int:
        """The fragment's index; providers that omit it get one call per new id."""
        index = getattr(fragment, "index", None)
        if index is not None:
            return int(index)
        if fragment.id and all(call[0] != fragment.id for call in self._calls.values()):
            return len(self._calls)
        return max(self._calls, default=0)

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=call_id or f"call_{uuid.uuid4().hex[:24]}", name=name, arguments="".join(pieces))
            for call_id, name, pieces in (self._calls[index] for index in sorted(self._calls))
        ]


def usage_from(usage: Any) -> TokenUsage:
    """Token counts (input, cached, cache writes, output) from an OpenAI-style usage object
    (SDK or litellm; extra fields allowed)."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    cache_write = getattr(usage, "cache_creation_input_tokens", None)
    if cache_write is None and details is not None:
        cache_write = getattr(details, "cache_write_tokens", None)
    return TokenUsage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        cached_tokens=int(cached or 0),
        cache_write_tokens=int(cache_write or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _reasoning_of(delta: Any) -> str | None:
    """Reasoning text of a delta: `reasoning_content` (litellm, DeepSeek, vLLM) or `reasoning`."""
    reasoning = getattr(delta, "reasoning_content", None)
    if reasoning is None:
        reasoning = getattr(delta, "reasoning", None)
    return reasoning if isinstance(reasoning, str) else None


class StreamReader:
    """Accumulates one streamed response; `feed` returns the deltas to show for a chunk."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thought: list[str] = []
        self.tool_calls = ToolCallAssembler()
        self.usage: TokenUsage | None = None
        self.finished = False
        self.finish_reason: str | None = None

    def feed(self, chunk: Any) -> list[TextDelta]:
        shown: list[TextDelta] = []
        choices = chunk.choices
        if choices:
            choice = choices[0]
            delta = choice.delta
            if delta is not None:
                reasoning = _reasoning_of(delta)
                if reasoning:
                    self.thought.append(reasoning)
                    shown.append(TextDelta(text=reasoning, thought=True))
                content = delta.content
                if content:
                    self.text.append(content)
                    shown.append(TextDelta(text=content))
                if delta.tool_calls:
                    self.tool_calls.add(delta.tool_calls)
            if choice.finish_reason:
                self.finished = True
                self.finish_reason = choice.finish_reason
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage_from(usage)
        return shown

    def response(self, model: str) -> ModelResponse:
        return ModelResponse(
            text="".join(self.text),
            thought="".join(self.thought),
            tool_calls=self.tool_calls.calls(),
            usage=self.usage or TokenUsage(),
            model=model,
        )
