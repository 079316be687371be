"""The BlitzError hierarchy.

Front ends word these for the user; the engine raises them. Three families, kept apart on
purpose: configuration and usage mistakes (the user can fix them), run failures (a limit was
reached, a model failed) and control-flow signals.
"""

from __future__ import annotations


class BlitzError(Exception):
    """Base of every error the project raises on purpose."""


# -- configuration and usage -------------------------------------------------------------


class ConfigError(BlitzError):
    """A configuration value is wrong; the message names the key and where it came from."""

    def __init__(self, key: str, source: str, problem: str) -> None:
        self.key = key
        self.source = source
        self.problem = problem
        super().__init__(f"bad configuration {key!r} in {source}: {problem}")


class UnknownAgentError(BlitzError):
    """A run or the configuration named an agent the registry does not have."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        super().__init__(f"unknown agent {name!r} (known: {', '.join(sorted(known)) or 'none'})")


class SubagentDepthError(BlitzError):
    """invoke_agent past the nesting cap; worded for the model, which reads it."""

    def __init__(self, cap: int) -> None:
        super().__init__(
            f"sub-agents nest at most {cap} deep and this call would go deeper; "
            "do this part yourself with your own tools"
        )


class SteerTooLateError(BlitzError):
    """`steer` was called while the session had no running turn."""


class ScriptExhaustedError(BlitzError):
    """A ScriptedModel was asked for more steps than its script holds."""


class SessionBusyError(BlitzError):
    """The session already has a running turn in this workspace."""


class TooManyTurnsError(SessionBusyError):
    """`limits.max_concurrent_turns` turns already run in this workspace or this kernel."""

    def __init__(self, running: int, limit: int, where: str) -> None:
        super().__init__(
            f"busy: {running} turns are running in this {where} (limits.max_concurrent_turns = {limit}); "
            "wait for one to end, or raise the limit"
        )


# -- model failures ------------------------------------------------------------------------


class ModelError(BlitzError):
    """A model call failed; says which model and why."""

    retryable = False

    def __init__(self, model: str, cause: str) -> None:
        self.model = model
        self.cause = cause
        super().__init__(f"model {model!r} failed: {cause}")


class ModelNotConfiguredError(ModelError):
    """No model is configured: every call explains how to set one."""

    def __init__(self, reason: str) -> None:
        super().__init__("(none)", reason)


class ModelAuthError(ModelError):
    """The provider rejected the credentials."""


class ModelNotFoundError(ModelError):
    """The provider does not know the model name."""


class ModelBadRequestError(ModelError):
    """The provider rejected the request as malformed."""


class ModelRefusedError(ModelError):
    """The provider's safety filter blocked the prompt or the answer (nothing came back)."""


class ContextWindowError(ModelError):
    """The prompt is longer than the model's context window."""


class ModelRateLimitError(ModelError):
    """HTTP 429: retried with backoff before it reaches the user."""

    retryable = True


class ModelUnavailableError(ModelError):
    """HTTP 5xx or a broken connection: retried with backoff before it reaches the user."""

    retryable = True


class ModelConnectionError(ModelUnavailableError):
    """Nothing answered at the model's address (connection refused, host not found): no
    request reached a provider. Retried like an outage, then left to the fallback chain;
    the cause names the address, e.g. `could not connect to http://localhost:8000/v1:
    connection refused`."""

    def __init__(self, model: str, address: str, reason: str) -> None:
        self.address = address
        self.reason = reason
        super().__init__(model, f"could not connect to {address}: {reason}")


class ModelTimeoutError(ModelError):
    """The provider did not answer in time."""

    retryable = True


class ModelStallError(ModelError):
    """The provider went quiet: no first byte, or no next chunk, within its stall
    budget. Retried like a timeout while nothing was shown, then left to the fallback chain.

    `budget` is the configuration key whose limit ran out (`stall.first_byte_s` or
    `stall.between_chunks_s`), so the message tells the user what to raise.
    """

    retryable = True

    def __init__(self, model: str, cause: str, *, budget: str | None = None) -> None:
        self.budget = budget
        super().__init__(model, cause)


class CircuitOpenError(ModelError):
    """The model's circuit breaker is open after repeated failures: it is not called
    until its cool-down ends, so a dead provider costs no time while a fallback answers."""


class FallbackExhaustedError(ModelError):
    """No model of the fallback chain answered. Named after the primary model; the
    cause lists each model of the chain with its own one-line cause, in the order they were
    tried, and `errors` keeps the typed errors."""

    def __init__(self, model: str, failures: list[tuple[str, ModelError]]) -> None:
        self.errors = [error for _, error in failures]
        causes = "; ".join(f"{name}: {error.cause}" for name, error in failures)
        super().__init__(model, f"no model of the fallback chain answered ({causes})")


# -- limits: each ends a turn with its own stop reason ---------------------------


class TurnLimitError(BlitzError):
    """A per-turn limit was reached; `stop_reason` is what the TurnResult reports."""

    stop_reason = "error"


class MaxTurnsError(TurnLimitError):
    stop_reason = "max_turns"

    def __init__(self, max_turns: int) -> None:
        super().__init__(f"maximum turns reached ({max_turns} model calls)")


class MaxCostError(TurnLimitError):
    stop_reason = "max_cost"

    def __init__(self, spent: float, ceiling: float) -> None:
        super().__init__(f"maximum cost reached (${spent:.4f} spent, ceiling ${ceiling:.4f})")

    @classmethod
    def before_call(cls, estimate: float, left: float, which: str) -> MaxCostError:
        """The next call was not made because its prompt alone would pass the ceiling."""
        error = cls.__new__(cls)
        TurnLimitError.__init__(
            error,
            f"maximum cost reached: the next call would cost about ${estimate:.4f}, "
            f"more than the ${max(left, 0):.4f} left of the {which} budget",
        )
        return error


class WatchdogError(TurnLimitError):
    """The agent repeated a tool call (or a cycle of calls) too often."""

    stop_reason = "watchdog"

    def __init__(self, what: str) -> None:
        super().__init__(f"stopped by the watchdog: {what}")


class SessionBudgetError(TurnLimitError):
    """The session's budget is spent: no model call until the user adds budget."""

    stop_reason = "max_cost"


class ApprovalOverflowError(TurnLimitError):
    """More permission requests waited at once than `approval.max_pending` allows."""

    stop_reason = "error"


# -- compaction ------------------------------------------------------------------------------


class NothingToCompactError(BlitzError):
    """The session has nothing before the turns to keep."""


class CompactionError(BlitzError):
    """Summarising failed (empty summary, timeout, model error); the history is unchanged."""
