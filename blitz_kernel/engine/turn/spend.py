"""What a turn spends, counted at the one place every model call's usage passes: the turn's
totals, the session's ledger, the front end's usage event, the cost ceilings, and — for a
sub-agent — its caller's spend too, so a sub-agent is never a way around the caller's limits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ...core.usage import Price, PriceBook, TokenUsage, UsageTotals
from ...errors import MaxTurnsError
from ..events import Event, NoticeEvent, UsageEvent
from ..store.session import Session
from .budget import Budget


class TurnSpend:
    """The running turn's usage and cost; a sub-agent's charges its caller's as well."""

    def __init__(
        self,
        session: Session,
        prices: PriceBook,
        budget: Budget,
        emit: Callable[[Event], Awaitable[None]],
        caller: TurnSpend | None = None,
    ) -> None:
        self._session = session
        self._prices = prices
        self._budget = budget
        self._emit = emit
        self._caller = caller
        self.usage = UsageTotals()
        self.last_prompt_tokens: int | None = None
        """The input tokens of the latest call: how full the context is."""
        self._warned_unpriced = False

    async def record(self, model: str, usage: TokenUsage) -> None:
        """One model call of this turn: priced, recorded, shown, and checked against the
        ceilings (which raise to end the turn)."""
        self.last_prompt_tokens = usage.input_tokens or self.last_prompt_tokens
        price = self._prices.lookup(model)
        cost = price.cost(usage) if price is not None else None
        saved = price.cache_saving(usage) if price is not None else 0.0
        self.usage.add(usage, cost, saved)
        self._session.ledger.record(model, usage, cost, saved)
        self._budget.settle(cost)
        await self._emit(UsageEvent(model=model, usage=usage, cost_usd=cost, saved_usd=saved))
        if self._caller is not None:
            self._caller.charge(model, usage, cost, saved)
        if cost is None and self._budget.turn_ceiling is not None and not self._warned_unpriced:
            self._warned_unpriced = True
            await self._emit(
                NoticeEvent(
                    kind="unpriced_model",
                    message=f"model {model!r} has no price, so --max-cost cannot count it; "
                    f'set prices."{model}" in the configuration',
                )
            )
        self._budget.check_after_usage(self.usage.cost_usd)

    @property
    def tree_usage(self) -> UsageTotals:
        """The user's turn's usage, its sub-agents' included: what an average is taken over."""
        return self._caller.tree_usage if self._caller is not None else self.usage

    @property
    def limited(self) -> bool:
        """Whether any ceiling applies, this turn's or a caller's."""
        return self._budget.limited or (self._caller is not None and self._caller.limited)

    def check_before_call(self, prompt_tokens: int, price: Price | None, output_tokens: int) -> None:
        """The next call's estimate against this turn's ceilings and every caller's (a
        sub-agent's call spends the caller's budget too)."""
        self._budget.check_before_call(self.usage.cost_usd, prompt_tokens, price, output_tokens)
        if self._caller is not None:
            self._caller.check_before_call(prompt_tokens, price, output_tokens)

    def charge(self, model: str, usage: TokenUsage, cost: float | None, saved: float = 0.0) -> None:
        """A sub-agent's call, counted as this turn's: usage, session ledger and the ceilings
        (a spent ceiling ends the sub-agent; this turn stops before its next call)."""
        self.usage.add(usage, cost, saved)
        self._session.ledger.record(model, usage, cost, saved)
        self._budget.settle(cost)
        if self._caller is not None:
            self._caller.charge(model, usage, cost, saved)
        self._budget.check_after_usage(self.usage.cost_usd)


class StepCount:
    """A turn's model calls, counted toward its `max_turns` and each caller's: a sub-agent's
    steps are its caller's steps, so it may have a lower limit, never a higher one."""

    def __init__(self, limit: int, caller: StepCount | None = None) -> None:
        self.limit = limit
        self.caller = caller
        self.count = 0
        """Calls this turn made, its sub-agents' included."""

    def take(self) -> None:
        """One more call, or MaxTurnsError when this turn or a caller has used its limit."""
        counter: StepCount | None = self
        while counter is not None:
            if counter.count >= counter.limit:
                raise MaxTurnsError(counter.limit)
            counter = counter.caller
        counter = self
        while counter is not None:
            counter.count += 1
            counter = counter.caller
