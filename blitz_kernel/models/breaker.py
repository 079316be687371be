"""Circuit breakers: one per model name per kernel process.

Why: a provider that is down costs every turn its full retry budget (backoff, stall budgets)
before the fallback answers. After `failures` consecutive failures the breaker *opens* and
the fallback chain skips that model at once; after `cooldown_s` it *half-opens* and lets one
trial call through; a success closes it, a failure opens it again for another cool-down.

The registry is module-level on purpose: a model's health is a fact about the provider, not
about one workspace or session, so every workspace and sub-agent in the kernel shares it.
Tests reset it with `reset_breakers()` and drive time through an injected clock.
"""

from __future__ import annotations

import enum
import math
import threading
import time
from collections.abc import Callable

Clock = Callable[[], float]


class BreakerState(enum.Enum):
    CLOSED = "closed"
    """Calls go through; failures are counted."""
    OPEN = "open"
    """Calls are refused until the cool-down ends."""
    HALF_OPEN = "half_open"
    """The cool-down ended: one trial call may go through."""


class CircuitBreaker:
    """The health of one model: closed → open after `failures` failures in a row → half-open
    after `cooldown_s` → closed on one success (or open again on a failed trial).

    Not thread-safe by itself beyond what the registry guards: the engine calls it from the
    kernel's one event loop.
    """

    def __init__(
        self, model: str, *, failures: int = 3, cooldown_s: float = 60.0, clock: Clock = time.monotonic
    ) -> None:
        self.model = model
        self.clock = clock
        self.failures = 0
        """Consecutive failures so far (reset by a success)."""
        self._opened_at: float | None = None
        self._trial_running = False
        self.configure(failures=failures, cooldown_s=cooldown_s)

    def configure(self, *, failures: int, cooldown_s: float) -> None:
        """New thresholds (a configuration change) keep the breaker's current state."""
        if failures < 1:
            raise ValueError(f"breaker.failures must be at least 1, got {failures!r}")
        if not (math.isfinite(cooldown_s) and cooldown_s > 0):
            raise ValueError(f"breaker.cooldown_s must be a finite number of seconds > 0, got {cooldown_s!r}")
        self.threshold = failures
        self.cooldown_s = cooldown_s

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self.clock() - self._opened_at < self.cooldown_s:
            return BreakerState.OPEN
        return BreakerState.HALF_OPEN

    def allow(self) -> bool:
        """Whether a call may go now. In half-open state the first caller gets the one trial;
        it must end with `record_success`, `record_failure` or `abandon`."""
        state = self.state
        if state is BreakerState.CLOSED:
            return True
        if state is BreakerState.HALF_OPEN and not self._trial_running:
            self._trial_running = True
            return True
        return False

    def record_success(self) -> None:
        self.failures = 0
        self._opened_at = None
        self._trial_running = False

    def record_failure(self) -> None:
        self.failures += 1
        if self._trial_running or self.failures >= self.threshold:
            self._opened_at = self.clock()  # a failed trial opens it for another cool-down
        self._trial_running = False

    def abandon(self) -> None:
        """The call ended without a verdict (cancelled, or failed for a reason that says
        nothing about the model's health): a half-open trial slot is free again."""
        self._trial_running = False

    def describe(self) -> str:
        """Why calls are refused, in one line (for the switch event and the error)."""
        if self._opened_at is None:
            return "circuit closed"
        left = max(self.cooldown_s - (self.clock() - self._opened_at), 0.0)
        if self.state is BreakerState.HALF_OPEN:
            return "circuit half-open: a trial call is already running"
        return (
            f"circuit open after {self.failures} consecutive failure(s); "
            f"next try in {math.ceil(left):d} s (breaker.cooldown_s)"
        )


_registry: dict[str, CircuitBreaker] = {}
_registry_lock = threading.Lock()


def breaker_for(
    model: str, *, failures: int | None = None, cooldown_s: float | None = None, clock: Clock | None = None
) -> CircuitBreaker:
    """The process-wide breaker of `model`, created on first use (defaults: 3 failures, 60 s).
    Settings given later replace its thresholds (and clock) but keep its state; settings left
    out keep theirs, so a plain look-up changes nothing."""
    with _registry_lock:
        breaker = _registry.get(model)
        if breaker is None:
            breaker = _registry[model] = CircuitBreaker(
                model,
                failures=3 if failures is None else failures,
                cooldown_s=60.0 if cooldown_s is None else cooldown_s,
                clock=clock or time.monotonic,
            )
        else:
            breaker.configure(
                failures=breaker.threshold if failures is None else failures,
                cooldown_s=breaker.cooldown_s if cooldown_s is None else cooldown_s,
            )
            if clock is not None:
                breaker.clock = clock
        return breaker


def reset_breakers() -> None:
    """Forget every breaker (tests; a fresh kernel starts this way)."""
    with _registry_lock:
        _registry.clear()
