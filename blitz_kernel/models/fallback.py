"""The fallback chain: the configured model, then each of `fallback_models` in order.

Why a `Model` of its own: the engine keeps talking to one model and never learns about
providers; the chain is a model that answers a request with whichever of its models can,
and says so: every move to the next model is a `ModelSwitch` (the rules: FallbackModel).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from ..core.usage import Price
from ..errors import (
    CircuitOpenError,
    ContextWindowError,
    FallbackExhaustedError,
    ModelBadRequestError,
    ModelError,
)
from .base import Model, ModelRequest, ModelSwitch, StreamItem, TextDelta, supports_response_schema, supports_vision
from .breaker import CircuitBreaker, Clock, breaker_for


class FallbackModel:
    """A `Model` over `models` (the primary first, then the fallbacks in order).

    Rules, in the order they apply to each model of the chain:

    - Its circuit breaker (`breaker.py`) is open: it is skipped without a call.
    - It answers: its output passes through, and its `ModelResponse.model` names it, so usage is
      priced by the model that answered.
    - It fails with a `ModelError` after its own retries, before any `TextDelta` reached the
      caller: the next model answers the same request. This covers every kind of failure that
      another model or provider may not share: rate limits, 5xx, timeouts, stalls, broken
      connections, and also rejected credentials, unknown model names and bad requests (another
      provider may accept what this one refused).
    - It fails after text was shown: the error is raised as it is. Streamed text cannot be taken
      back, and silently replacing it with another model's answer would show the user two
      answers run together.
    - It fails with `ContextWindowError`: raised as it is. The engine answers that by compacting
      the history and asking again, which beats a model that forgets less context.
    - Anything that is not a `ModelError` (a bug, a cancellation) is raised as it is.

    Every move to the next model is yielded as a `ModelSwitch` before that model's output, one
    per model that failed or was skipped. When no model answers, `FallbackExhaustedError` lists
    every model's cause.

    Breaker verdicts: a success closes the model's breaker; a failure that says the model is
    unhealthy (every kind above except bad requests and context-window errors, which are the
    request's fault) counts toward opening it; a cancelled call gives no verdict.

    `name`, `context_window()`, `price()` and `supports_vision()` are the primary's: the
    engine plans a turn (compaction threshold, vision refusals, span names) for the model the
    user chose. `price(name)` looks up any name, so a fallback's usage is priced by the
    fallback's name through the same source.
    """

    def __init__(
        self,
        models: Sequence[Model],
        *,
        breaker_failures: int = 3,
        breaker_cooldown_s: float = 60.0,
        clock: Clock | None = None,
    ) -> None:
        if len(models) < 2:
            raise ValueError("a fallback chain needs the primary model and at least one fallback")
        self.models = list(models)
        self.primary = self.models[0]
        self.name = self.primary.name
        self._failures = breaker_failures
        self._cooldown_s = breaker_cooldown_s
        self._clock = clock
        for model in self.models:  # validates the settings now, not on the first call
            self.breaker(model)

    def __repr__(self) -> str:
        return f"FallbackModel({[model.name for model in self.models]!r})"

    def breaker(self, model: Model) -> CircuitBreaker:
        """The process-wide breaker of `model` (one per model name in the kernel)."""
        return breaker_for(model.name, failures=self._failures, cooldown_s=self._cooldown_s, clock=self._clock)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The first model that answers, with a `ModelSwitch` for each one that did not."""
        # (chain member, its error), one per model that failed or was skipped, in order; named
        # by the member, since a model that could not be built fails under a placeholder name
        failures: list[tuple[str, ModelError]] = []
        announced = 0
        for model in self.models:
            breaker = self.breaker(model)
            if not breaker.allow():
                failures.append((model.name, CircuitOpenError(model.name, breaker.describe())))
                continue
            shown = False
            stream: AsyncIterator[StreamItem] | None = None
            try:
                # announced only now, once the model that takes over is really called
                for failed, error in failures[announced:]:
                    yield ModelSwitch(failed=failed, reason=error.cause, next=model.name)
                announced = len(failures)
                stream = model.stream(request)
                async for item in stream:
                    shown = shown or isinstance(item, TextDelta)
                    yield item
            except ModelError as error:
                _record_verdict(breaker, error)
                if shown or isinstance(error, ContextWindowError):
                    raise
                failures.append((model.name, error))
                continue
            except BaseException:
                breaker.abandon()  # cancelled, or a bug: nothing learned about the model
                raise
            finally:
                # closes the model's own stream now (its connection), not when it is collected
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
            breaker.record_success()
            return
        raise FallbackExhaustedError(self.name, failures)

    def price(self, model: str) -> Price | None:
        return self.primary.price(model)

    def context_window(self) -> int | None:
        return self.primary.context_window()

    def supports_vision(self) -> bool:
        return supports_vision(self.primary)

    def supports_response_schema(self) -> bool:
        """Every model of the chain must take it: any of them may answer the final request."""
        return all(supports_response_schema(model) for model in self.models)


def _record_verdict(breaker: CircuitBreaker, error: ModelError) -> None:
    """A failure counts toward opening the breaker unless it was the request's fault."""
    if isinstance(error, (ModelBadRequestError, ContextWindowError)):
        breaker.abandon()
    else:
        breaker.record_failure()
