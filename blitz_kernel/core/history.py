"""A session's history: typed messages and parts, valid by construction.

The history is what the model sees. It is a list of messages discriminated on `kind`, saved
and loaded whole through `HISTORY_ADAPTER` (so the durable store can persist it as JSON).
Validity rule: every tool call of an assistant message has exactly one result message, and
results follow their call. `check_history` enforces it; the turn loop only ever appends a
step's messages together with all of their results.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter


class TextPart(BaseModel):
    """Plain text inside a user message."""

    part_kind: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    """An image attached to a user message (attachments come before the prompt)."""

    part_kind: Literal["image"] = "image"
    media_type: str = "image/png"
    data_base64: str


UserPart = Annotated[TextPart | ImagePart, Field(discriminator="part_kind")]


class UserMessage(BaseModel):
    """A prompt typed by the user: one per turn."""

    kind: Literal["user"] = "user"
    parts: list[UserPart]

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))


class ToolCall(BaseModel):
    """One tool call requested by the model."""

    id: str
    """The provider's call id; results refer to it."""
    name: str
    arguments: str
    """The raw JSON argument string as the model produced it (possibly invalid)."""

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict, or {} when the model sent something that is not an object."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


class ThinkingPart(BaseModel):
    """A provider's signed thinking block (Anthropic extended thinking). Kept as sent: with
    thinking on, the provider refuses a tool step whose call is not preceded by it, and the
    signature proves the text unchanged, so neither may be edited."""

    part_kind: Literal["thinking"] = "thinking"
    text: str = ""
    signature: str = ""


class RedactedThinkingPart(BaseModel):
    """Thinking the provider encrypted: opaque data that goes back as it came."""

    part_kind: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


ThinkingBlock = Annotated[ThinkingPart | RedactedThinkingPart, Field(discriminator="part_kind")]


class AssistantMessage(BaseModel):
    """One model response (one step)."""

    kind: Literal["assistant"] = "assistant"
    text: str = ""
    thought: str = ""
    """Reasoning text, shown collapsed and never sent back as the answer."""
    thinking: list[ThinkingBlock] = Field(default_factory=list)
    """The provider's thinking blocks of this step, sent back only to the model that wrote them
    (a signature is valid for that model alone)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    model: str = ""
    """The model that actually answered (for pricing)."""


class ToolResultMessage(BaseModel):
    """The result of one tool call, as the model will read it."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    output: str | None = None
    error: str | None = None
    """Set when the call failed or was refused; the model sees it under `error`."""
    message_from_user: str | list[str] | None = None
    """Steer messages delivered with this result."""
    images: list[ImagePart] = Field(default_factory=list)
    """Images the tool showed the model (view_image). Chat APIs take no images in a tool
    result, so adapters send them in a user message right after the step's results."""
    subagent: SubagentTurn | None = Field(default=None, exclude_if=lambda value: value is None)
    """The whole turn of the sub-agent this call ran (`invoke_agent`), nested in the caller's
    turn: kept and reloaded with the session, never sent to the model (which reads `output`)."""

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_model_content(self) -> str:
        """The JSON object the model receives as this call's result."""
        body: dict[str, Any] = {"error": self.error} if self.error is not None else {"result": self.output}
        if self.message_from_user is not None:
            body["message_from_user"] = self.message_from_user
        return json.dumps(body, ensure_ascii=False)


class SubagentTurn(BaseModel):
    """What a sub-agent saw and did in one call: its own session's messages (its prompt, its
    steps, its tool results, its nested sub-agents' turns in theirs) and how it ended."""

    agent: str
    session: str
    stop_reason: str
    messages: list[Message] = Field(default_factory=list)

    def tool_calls(self) -> int:
        """The calls it made, those of the sub-agents it ran included."""
        count = 0
        for message in self.messages:
            if isinstance(message, AssistantMessage):
                count += len(message.tool_calls)
            elif isinstance(message, ToolResultMessage) and message.subagent is not None:
                count += message.subagent.tool_calls()
        return count


class SummaryMessage(BaseModel):
    """A compaction summary standing in for the events it covers."""

    kind: Literal["summary"] = "summary"
    text: str
    covered_events: int = 0


Message = Annotated[
    UserMessage | AssistantMessage | ToolResultMessage | SummaryMessage,
    Field(discriminator="kind"),
]
SubagentTurn.model_rebuild()
ToolResultMessage.model_rebuild()
HISTORY_ADAPTER: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def subagent_turns(messages: list[Message]) -> list[SubagentTurn]:
    """The sub-agents' turns nested in these messages' results, oldest first (not their own
    nested ones: those are inside each)."""
    return [m.subagent for m in messages if isinstance(m, ToolResultMessage) and m.subagent is not None]


def for_model(messages: list[Message]) -> list[Message]:
    """The history as the model reads it: a sub-agent's nested turn stays in the session (the
    same objects where there is none)."""
    return [
        m.model_copy(update={"subagent": None}) if isinstance(m, ToolResultMessage) and m.subagent is not None else m
        for m in messages
    ]


def keep_signed_thinking(original: Message, redacted: Message) -> Message:
    """`redacted` (a message after secret redaction), without thinking blocks the redaction
    changed: a changed block no longer matches its signature, and the provider refuses a
    request that carries it. Dropping it keeps the secret out of the history; the provider
    then may ask for the thinking of that step, but never sees a forged one."""
    if (
        isinstance(original, AssistantMessage)
        and isinstance(redacted, AssistantMessage)
        and redacted.thinking != original.thinking
    ):
        kept = [block for block in redacted.thinking if block in original.thinking]
        return redacted.model_copy(update={"thinking": kept})
    return redacted


class InvalidHistoryError(ValueError):
    """A history broke the call ↔ result rule; raised before anything is written."""


def check_history(messages: list[Any]) -> None:
    """Raise InvalidHistoryError unless every tool call has exactly one later result."""
    open_calls: dict[str, str] = {}
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            if open_calls:
                raise InvalidHistoryError(f"message {index}: calls {sorted(open_calls)} have no result")
            open_calls = {call.id: call.name for call in message.tool_calls}
        elif isinstance(message, ToolResultMessage):
            if message.call_id not in open_calls:
                raise InvalidHistoryError(f"message {index}: result for unknown call {message.call_id!r}")
            del open_calls[message.call_id]
        elif open_calls:
            raise InvalidHistoryError(f"message {index}: calls {sorted(open_calls)} have no result")
    if open_calls:
        raise InvalidHistoryError(f"calls {sorted(open_calls)} have no result")


def user_prompt(text: str, images: list[ImagePart] | None = None) -> UserMessage:
    """The user message of a turn: attachments (images first), then the prompt text."""
    parts: list[TextPart | ImagePart] = [*(images or []), TextPart(text=text)]
    return UserMessage(parts=parts)


def unique_call_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Results are matched to calls by id; a provider that repeats an id (or sends none) would
    leave a call without its result. Rename the repeats (`id~2`) so every call has its own."""
    seen: set[str] = set()
    unique: list[ToolCall] = []
    for index, call in enumerate(calls):
        call_id = call.id or f"call_{index}"
        suffix = 2
        while call_id in seen:
            call_id, suffix = f"{call.id or 'call'}~{suffix}", suffix + 1
        seen.add(call_id)
        unique.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
    return unique


def message_chars(message: Message) -> int:
    """The characters a message puts into a prompt, without serialising it (hot path: the
    loop sizes the whole history before every step)."""
    if isinstance(message, UserMessage):
        return sum(len(p.text) if isinstance(p, TextPart) else 1000 for p in message.parts) + 10
    if isinstance(message, AssistantMessage):
        calls = sum(len(c.name) + len(c.arguments) + 40 for c in message.tool_calls)
        return len(message.text) + calls + 10
    if isinstance(message, ToolResultMessage):
        steer = message.message_from_user
        steer_chars = len(steer) if isinstance(steer, str) else sum(len(s) for s in steer or [])
        return len(message.output or message.error or "") + steer_chars + 1000 * len(message.images) + 40
    return len(message.text) + 40
