"""The model a workspace opens on when none is configured or the configured one cannot be
built: opening never fails, every call explains what to do."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ..core.usage import Price
from ..errors import ModelNotConfiguredError
from .base import ModelRequest, StreamItem

HOW_TO_SET_A_MODEL = (
    "no model is configured. Set one with `%blitz_model openai/gpt-4.1-mini` (or any litellm "
    "model name), or the environment variable BLITZ_MODEL (with BLITZ_API_BASE for an "
    "OpenAI-compatible server, e.g. BLITZ_MODEL=openai/my-model "
    'BLITZ_API_BASE=http://localhost:8000/v1), or `model = "..."` in blitz.toml.'
)


class PlaceholderModel:
    """Fails every call with `reason`. `name` is "(none)" where it stands for the workspace's
    model, and the configured name where it stands in a fallback chain for a model that could
    not be built (so the switch event and the breaker name that model)."""

    def __init__(self, reason: str = HOW_TO_SET_A_MODEL, *, name: str = "(none)") -> None:
        self.name = name
        self.reason = reason

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        raise ModelNotConfiguredError(self.reason)
        yield  # pragma: no cover - makes this an async generator

    def price(self, model: str) -> Price | None:
        return None

    def context_window(self) -> int | None:
        return None

    def supports_vision(self) -> bool:
        return False
