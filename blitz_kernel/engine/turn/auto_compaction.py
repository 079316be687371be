"""Automatic compaction inside a turn: before a step whose prompt (tool schemas included) would
pass the window's threshold, and once when a provider rejects a prompt as too long. A failed
automatic compaction is a notice, not the turn's end: the call is tried as it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ...core.usage import TokenUsage
from ...errors import CompactionError, NothingToCompactError
from ..events import CompactionEvent, Event, NoticeEvent
from .compaction import Compactor, automatic_window
from .setup import TurnSetup


class AutoCompaction:
    """Compacts the running turn's session when its next prompt would not fit."""

    def __init__(
        self,
        setup: TurnSetup,
        schema_tokens: int,
        emit: Callable[[Event], Awaitable[None]],
        record_usage: Callable[[str, TokenUsage], Awaitable[None]],
    ) -> None:
        self._setup = setup
        self._schema_tokens = schema_tokens
        self._emit = emit
        self._record_usage = record_usage

    @property
    def enabled(self) -> bool:
        return self._setup.choice.compaction

    def prompt_estimate(self, system: str) -> int:
        """Tokens the next request will carry: system prompt, history and the tool schemas
        (about 2.5K tokens for the built-in tools, sent with every step). The session keeps
        its history's size, so this does not walk the history (`estimate_tokens` would)."""
        return (len(system) + self._setup.session.prompt_chars()) // 4 + self._schema_tokens

    async def if_needed(self, system: str) -> None:
        """Before a step whose prompt would pass the threshold."""
        if not self.enabled or self.prompt_estimate(system) <= self._setup.choice.context.threshold:
            return
        try:
            await self.compact(required=False)
        except CompactionError as exc:  # the threshold is below the window: try the call as is
            await self._emit(
                NoticeEvent(kind="compaction", message=f"automatic compaction failed, going on without it: {exc}")
            )

    async def compact(self, *, required: bool) -> bool:
        """Summarise all but the retained tail; False when there was nothing to compact."""
        setup = self._setup
        history = setup.session.history
        try:
            budget = setup.choice.context.threshold // 2  # room for the summary
            split = automatic_window(history, setup.choice.retain_events, budget)
        except NothingToCompactError:
            if required:
                raise
            return False
        with setup.observers.telemetry.child_span("blitz.compaction", {"blitz.automatic": True}):
            summary, result = await Compactor(setup.choice.model, setup.choice.system).summarise(history, split, None)
        setup.session.replace_window(split, summary)
        await self._record_usage(result.model, result.usage)
        await self._emit(
            CompactionEvent(
                covered_events=result.covered_events,
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
                automatic=True,
            )
        )
        return True
