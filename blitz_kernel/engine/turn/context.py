"""Context windows: how many tokens each model can read, and when to compact.

The window comes from `models."<prefix>".context_window`, else from the model's adapter
(litellm's map), else DEFAULT_CONTEXT_WINDOW, so auto-compaction also works for models litellm
does not know (local `openai/<name>` servers). Looking a window up may load the provider
library (seconds on first use), so it runs off the event loop, once per model and setting.
"""

from __future__ import annotations

import asyncio

from ...config.settings import BlitzConfig
from ...models.base import Model
from .setup import DEFAULT_CONTEXT_WINDOW, THRESHOLD_SHARE, ContextWindow

CacheKey = tuple[str, int | None, int | None]


class ContextWindows:
    """Context windows by model and configuration, looked up once each."""

    def __init__(self) -> None:
        self._known: dict[CacheKey, ContextWindow] = {}

    async def lookup(self, model: Model, config: BlitzConfig) -> ContextWindow:
        """The window, off the event loop the first time (a thread hop per turn is
        measurable in bench/overhead.py)."""
        key = (model.name, config.context.token_threshold, config.model_settings(model.name).context_window)
        if key not in self._known:
            self._known[key] = await asyncio.to_thread(resolve_window, model, config)
        return self._known[key]

    def known(self, model: Model, config: BlitzConfig) -> ContextWindow:
        """The window as last looked up for `model`, else resolved now (for `%blitz_session
        show`, which must not wait)."""
        cached = [window for key, window in self._known.items() if key[0] == model.name]
        return cached[-1] if cached else resolve_window(model, config)

    def fill(self, used: int, model: Model, config: BlitzConfig) -> str | None:
        """How full a context is after a prompt of `used` tokens ("ctx 42 % of 128K (litellm)");
        None before any model call."""
        if not used:
            return None
        window = self.known(model, config)
        return f"{window.fill(used)} ({window.source})"


def resolve_window(model: Model, config: BlitzConfig) -> ContextWindow:
    """Configured, litellm's, or the default window; the threshold is configured or
    80 % of it."""
    configured = config.model_settings(model.name).context_window
    known = None if configured else model.context_window()
    if configured:
        tokens, source = configured, "models setting"
    elif known:
        tokens, source = known, "litellm"
    else:
        tokens, source = DEFAULT_CONTEXT_WINDOW, "default"
    threshold = config.context.token_threshold or int(tokens * THRESHOLD_SHARE)
    return ContextWindow(tokens=tokens, source=source, threshold=threshold)
