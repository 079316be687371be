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
    RedactedThinkingPart,
    SummaryMessage,
    TextPart,
    ThinkingBlock,
    ThinkingPart,
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


def _assistant_message(message: AssistantMessage, thinking_model: str | None = None) -> dict[str, Any]:
    converted: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.thinking and thinking_model is not None and message.model == thinking_model:
        converted["thinking_blocks"] = [_thinking_block(block) for block in message.thinking]
    if message.tool_calls:
        converted["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments or "{}"}}
            for call in message.tool_calls
        ]
    elif not message.text:
        converted["content"] = ""  # an assistant turn needs content or tool calls
    return converted


def _thinking_block(block: ThinkingBlock) -> dict[str, Any]:
    """A thinking part in litellm's `thinking_blocks` shape (it maps them to the provider's)."""
    if isinstance(block, RedactedThinkingPart):
        return {"type": "redacted_thinking", "data": block.data}
    return {"type": "thinking", "thinking": block.text, "signature": block.signature}


def to_openai_message(message: Message, thinking_model: str | None = None) -> dict[str, Any]:
    """One message of our history as an OpenAI chat message; an assistant step written by
    `thinking_model` carries its thinking blocks (litellm's `thinking_blocks` field)."""
    if isinstance(message, UserMessage):
        return {"role": "user", "content": _user_content(message)}
    if isinstance(message, AssistantMessage):
        return _assistant_message(message, thinking_model)
    if isinstance(message, ToolResultMessage):
        return {"role": "tool", "tool_call_id": message.call_id, "content": message.to_model_content()}
    if isinstance(message, SummaryMessage):
        return {"role": "user", "content": SUMMARY_PREFIX + message.text}
    raise TypeError(f"cannot send {type(message).__name__} to a model")  # pragma: no cover - closed union


def to_openai_messages(
    system: str,
    messages: Iterable[Message],
    *,
    reuse: bool = False,
    thinking_model: str | None = None,
    images_with_results: bool = False,
) -> list[dict[str, Any]]:
    """Our history as OpenAI chat messages (the format litellm takes for every provider).

    Reasoning text is not sent back: it is shown to the user, not part of the conversation.
    Signed thinking blocks are, but only in a request to `thinking_model`, the model that wrote
    them: a provider that requires them (Anthropic with thinking on) checks their signature,
    and any other model would refuse or misread them. The direct OpenAI path never sends them.
    A summary becomes a user message, because it stands in for earlier turns of both sides.
    `reuse`: hand out each message's dict built for an earlier request (see the module doc).
    `images_with_results`: a result's images go in its own tool message instead of a user
    message after the results; for Gemini, where litellm makes them parts of the function
    response turn, since Gemini refuses two user turns in a row.
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
        elif images_with_results and isinstance(message, ToolResultMessage) and message.images:
            converted.append(_tool_message_with_images(message))
            continue
        else:
            converted.append(to_openai_message(message, thinking_model))
        if isinstance(message, ToolResultMessage):
            seen.extend(message.images)
    if seen:
        converted.append(_tool_images_message(seen))
    return converted


def _tool_message_with_images(message: ToolResultMessage) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": message.to_model_content()}]
    for part in message.images:
        url = f"data:{part.media_type};base64,{part.data_base64}"
        content.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "tool", "tool_call_id": message.call_id, "content": content}


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


def _field(block: Any, name: str) -> Any:
    return block.get(name) if isinstance(block, dict) else getattr(block, name, None)


class ThinkingAssembler:
    """Joins litellm's streamed `thinking_blocks` deltas into whole blocks: thinking text
    arrives in pieces under its block's index, its signature in a last piece; a redacted block
    arrives whole. A thinking block that never got its signature is dropped: it could not be
    sent back, and the provider would refuse it."""

    def __init__(self) -> None:
        self._blocks: dict[int, list[Any]] = {}  # index -> [kind, text pieces, signature or data]

    def add(self, deltas: Iterable[Any]) -> None:
        for delta in deltas:
            kind = _field(delta, "type")
            index = _field(delta, "index")
            index = int(index) if index is not None else len(self._blocks)
            block = self._blocks.setdefault(index, [kind, [], ""])
            if kind == "redacted_thinking":
                block[0], block[2] = kind, str(_field(delta, "data") or "")
                continue
            text = _field(delta, "thinking")
            if text:
                block[1].append(str(text))
            signature = _field(delta, "signature")
            if signature:
                block[2] = str(signature)

    def blocks(self) -> list[ThinkingBlock]:
        found: list[ThinkingBlock] = []
        for index in sorted(self._blocks):
            kind, pieces, tail = self._blocks[index]
            if kind == "redacted_thinking" and tail:
                found.append(RedactedThinkingPart(data=tail))
            elif tail:
                found.append(ThinkingPart(text="".join(pieces), signature=tail))
        return found


def usage_from(usage: Any) -> TokenUsage:
    """Token counts (input, cached, cache writes, output, reasoning) from an OpenAI-style usage object
    (SDK or litellm; extra fields allowed)."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    cache_write = getattr(usage, "cache_creation_input_tokens", None)
    if cache_write is None and details is not None:
        cache_write = getattr(details, "cache_write_tokens", None)
    completion = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(completion, "reasoning_tokens", None) if completion is not None else None
    return TokenUsage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        cached_tokens=int(cached or 0),
        cache_write_tokens=int(cache_write or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        reasoning_tokens=int(reasoning or 0),
    )


def _reasoning_of(delta: Any) -> str | None:
    """Reasoning text of a delta: `reasoning_content` (litellm, DeepSeek, vLLM) or `reasoning`."""
    reasoning = getattr(delta, "reasoning_content", None)
    if reasoning is None:
        reasoning = getattr(delta, "reasoning", None)
    return reasoning if isinstance(reasoning, str) else None


class WireObject:
    """A chunk as the endpoint sent it (decoded JSON), read the way SDK objects are read:
    `chunk.choices[0].delta.content`; a field that is missing reads as None. Nested objects
    are wrapped as they are reached, so a chunk costs what its reader touches."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_fields":  # protocols (copy, pickle) and an unset slot
            raise AttributeError(name)
        value = self._fields.get(name)
        if isinstance(value, dict):
            return WireObject(value)
        if isinstance(value, list):
            return [WireObject(item) if isinstance(item, dict) else item for item in value]
        return value

    def __repr__(self) -> str:
        return f"WireObject({self._fields!r})"


class StreamReader:
    """Accumulates one streamed response; `feed` returns the deltas to show for a chunk
    (an SDK or litellm chunk object, or the chunk's JSON on the direct path)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thought: list[str] = []
        self.tool_calls = ToolCallAssembler()
        self.thinking = ThinkingAssembler()
        self.usage: TokenUsage | None = None
        self.finished = False
        self.finish_reason: str | None = None

    def feed(self, chunk: Any) -> list[TextDelta]:
        if isinstance(chunk, dict):
            chunk = WireObject(chunk)
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
                blocks = getattr(delta, "thinking_blocks", None)
                if blocks:
                    self.thinking.add(blocks)
            if choice.finish_reason:
                self.finished = True
                self.finish_reason = str(choice.finish_reason)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage_from(usage)
        return shown

    @property
    def blocked(self) -> bool:
        """The provider's content filter ended the answer before anything came (a Gemini
        SAFETY finish): an empty answer would pass for a real one."""
        return self.finish_reason == "content_filter" and not self.text and not self.tool_calls.calls()

    def response(self, model: str) -> ModelResponse:
        return ModelResponse(
            text="".join(self.text),
            thought="".join(self.thought),
            thinking=self.thinking.blocks(),
            tool_calls=self.tool_calls.calls(),
            usage=self.usage or TokenUsage(),
            model=model,
        )
