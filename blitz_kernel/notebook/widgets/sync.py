"""Coalesced widget updates: at most ~30 comm messages a second, whatever the event rate.

A model streams hundreds of deltas a second; a comm message per delta would flood the
browser. `changed()` is called after every event: it sends at once when the last message is
old enough, otherwise it arms one timer for the moment it will be. Each flush sends only the
fields that changed, all in one message (`hold_sync`). `flush()` sends immediately, for the
final state (the exact text) and for anything a user waits on. The clock and the timer are
injectable, so the rate limit can be tested without waiting for real time to pass.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

from .state import TurnState


class Cancellable(Protocol):
    def cancel(self) -> None: ...


CallLater = Callable[[float, Callable[[], None]], Cancellable]

MIN_INTERVAL_S = 0.035
"""Between two flushes: ≤ 28.6 messages a second."""


class WidgetSync:
    """Pushes a TurnState's dirty fields to a widget's traits, rate-limited."""

    def __init__(
        self,
        view: Any,
        state: TurnState,
        *,
        interval: float = MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        call_later: CallLater | None = None,
    ) -> None:
        self.view = view
        self.state = state
        self.interval = interval
        self.clock = clock
        self._call_later = call_later
        """Arms the timer (default: the running loop's `call_later`)."""
        self.messages = 0
        """Flushes that sent something (one comm message each)."""
        self._last = float("-inf")
        self._timer: Cancellable | None = None

    def changed(self) -> None:
        """Something changed: send now, or once the interval since the last send has passed."""
        if not self.state.dirty or self._timer is not None:
            return
        wait = self._last + self.interval - self.clock()
        if wait <= 0:
            self.flush()
            return
        call_later = self._call_later
        if call_later is None:
            try:
                call_later = asyncio.get_running_loop().call_later
            except RuntimeError:  # no loop (a plain script): nothing can send later, so send now
                self.flush()
                return
        self._timer = call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Send every pending change now, in one message."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        changes = self.state.take_dirty()
        if not changes:
            return
        with self.view.hold_sync():
            for name, value in changes.items():
                setattr(self.view, name, value)
        self._last = self.clock()
        self.messages += 1

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
