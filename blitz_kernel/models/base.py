"""The Model protocol: how the engine talks to any model.

A model streams one response for a request: `TextDelta`s as text arrives, then exactly one
`ModelResponse` with the whole step (text, thought, complete tool calls, usage). A fallback
chain may also yield `ModelSwitch` items before the answer of the model that took over. Errors are
raised as `ModelError` subclasses that name the model. The engine never sees a
provider's wire format; adapters translate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..core.history import AssistantMessage, Message, ThinkingBlock, ToolCall
from ..core.terms import Reasoning
from ..core.tools import ToolSpec
from ..core.usage import Price, TokenUsage


class ResponseSchema(BaseModel):
    """The shape a step's text must have, asked for with the provider's own structured output
    (OpenAI's `response_format` json_schema; litellm maps it to each provider's form)."""

    name: str
    """Letters, digits, `_` and `-` only, at most 64 characters (OpenAI's rule for the name)."""
    json_schema: dict[str, Any]
    """A JSON schema whose root is an object (the only root OpenAI takes)."""
    strict: bool = False
    """Whether the provider must follow the schema exactly (OpenAI takes it only for schemas in
    its strict subset: every object closed, every property required)."""


class ModelRequest(BaseModel):
    """Everything one step sends to the model."""

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning: Reasoning | None = None
    """How hard the model thinks ("off" turns thinking off); None: the provider's default."""
    response_schema: ResponseSchema | None = None
    """Answer with JSON text of this shape (only for models that `supports_response_schema`)."""


class TextDelta(BaseModel):
    """A piece of streamed text."""

    kind: Literal["text_delta"] = "text_delta"
    text: str
    thought: bool = False


class ModelResponse(BaseModel):
    """The complete result of one step."""

    kind: Literal["response"] = "response"
    text: str = ""
    thought: str = ""
    thinking: list[ThinkingBlock] = Field(default_factory=list)
    """Signed or redacted thinking blocks, to be sent back with this step (history.py)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    model: str
    """The model that actually answered (pricing is by this name)."""

    def to_message(self) -> AssistantMessage:
        return AssistantMessage(
            text=self.text, thought=self.thought, thinking=self.thinking, tool_calls=self.tool_calls, model=self.model
        )


class ModelSwitch(BaseModel):
    """The fallback chain moved on: `failed` did not answer and `next` will answer the
    same request. Yielded before `next`'s output, so every switch is visible."""

    kind: Literal["model_switch"] = "model_switch"
    failed: str
    """Name of the model that failed or was skipped."""
    reason: str
    """One-line cause: the model's error, or why its circuit breaker is open."""
    next: str
    """Name of the model that answers instead."""


StreamItem = TextDelta | ModelSwitch | ModelResponse


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a ModelRequest as a stream."""

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Yield TextDeltas (and ModelSwitches), then exactly one ModelResponse; raise
        ModelError on failure."""
        ...

    def price(self, model: str) -> Price | None:
        """The price of `model` from the adapter's own source, or None when unknown."""
        ...

    def context_window(self) -> int | None:
        """The model's context window in tokens, when known."""
        ...


def supports_vision(model: Model) -> bool:
    """Whether `model` can read images (tool results with images, view_image).

    Models say so with an optional `supports_vision()` method (the litellm adapter asks
    `litellm.supports_vision`); a model that does not say is taken to be blind, so the agent
    gets a clear refusal instead of a provider error about image content.
    """
    check = getattr(model, "supports_vision", None)
    return bool(check()) if callable(check) else False


def supports_response_schema(model: Model) -> bool:
    """Whether `model` can be asked for JSON of a given shape with the provider's own structured
    output (`ModelRequest.response_schema`).

    Models say so with an optional `supports_response_schema()` method (the litellm adapter asks
    `litellm.supports_response_schema`); a model that does not say gets the schema as a tool
    (`final_result`, docs/structured-output.md) instead.
    """
    check = getattr(model, "supports_response_schema", None)
    return bool(check()) if callable(check) else False
