"""Spend ceilings that hold: the turn's `--max-cost` and the session's
budget, checked before a call and after every usage event.

Checking only after the spend lets one big call blow through a ceiling (pydantic-ai#7133), so
each step first estimates what the next request will cost (prompt size × input price, plus
the expected output — `max_tokens`, else the turn's average so far — × output price) and is
not made when that would pass what is left. The session budget trips once spending
passes it and stays tripped (a field of the session, persisted with it) until the user adds
budget: every later turn is refused before any model call.

A shared budget (`limits.shared_budget_file`, set by `blitz run -j` and `blitz eval` for all
their notebooks) is checked the same way, before each call, by reserving the estimate in the
ledger several kernels share (core/budget_ledger.py), and settled with the call's real cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...core.budget_ledger import BudgetLedger, BudgetRefused
from ...core.numbers import MAX_COST_USD, check_number
from ...core.usage import Price, UsageTotals
from ...errors import BlitzError, MaxCostError, SessionBudgetError
from ..steering import TurnControl
from ..store.session import Session


def budget_spent_text(session: Session, limit: float) -> str:
    """The refusal a tripped session shows (and how to go on)."""
    return (
        f"session budget of ${limit + session.budget_added_usd:.2f} is spent "
        f"(${session.ledger.total.cost_usd:.2f} used); `%blitz_usage --add-budget 1` to go on"
    )


@dataclass
class Budget:
    """The ceilings one turn spends against."""

    session: Session
    turn_ceiling: float | None
    """`--max-cost` / `limits.max_cost_usd`; None: no per-turn ceiling."""
    session_limit: float | None
    """`limits.max_cost_usd_session`; None: no session budget."""
    control: TurnControl | None = None
    """Where side questions asked while the turn runs charge their cost: it counts toward
    the running turn's `--max-cost`."""
    locked: bool = False
    """The session budget is the admin policy's: budget added to it does not count."""
    shared: BudgetLedger | None = None
    """The budget several runs share; only a user's turn has it (a sub-agent's calls pass
    through its caller's checks, so they are reserved once)."""
    _reservation: str | None = field(default=None, init=False, repr=False)

    @property
    def charged_elsewhere(self) -> float:
        return self.control.charged_usd if self.control is not None else 0.0

    @property
    def session_ceiling(self) -> float | None:
        if self.session_limit is None:
            return None
        return self.session_limit + (0.0 if self.locked else self.session.budget_added_usd)

    def refusal_before_start(self) -> str | None:
        """Why the turn may not start at all, or None."""
        ceiling = self.session_ceiling
        if ceiling is None or self.session_limit is None:
            return None
        if self.session.budget_tripped or self.session.ledger.total.cost_usd >= ceiling:
            self.session.trip_budget()
            return budget_spent_text(self.session, self.session_limit)
        return None

    @property
    def limited(self) -> bool:
        """Whether any ceiling applies (else no estimate is worth making)."""
        return self.turn_ceiling is not None or self.session_limit is not None or self.shared is not None

    def check_before_call(
        self, turn_spent: float, prompt_tokens: int, price: Price | None, output_tokens: int = 0
    ) -> None:
        """Stop before a call whose prompt and expected output would pass what is left."""
        if price is None:
            return
        estimate = prompt_tokens * price.input / 1e6 + output_tokens * price.output / 1e6
        if self.turn_ceiling is not None and turn_spent + self.charged_elsewhere + estimate > self.turn_ceiling:
            raise MaxCostError.before_call(estimate, self.turn_ceiling - turn_spent - self.charged_elsewhere, "turn")
        ceiling = self.session_ceiling
        if ceiling is not None and self.session.ledger.total.cost_usd + estimate > ceiling:
            raise MaxCostError.before_call(estimate, ceiling - self.session.ledger.total.cost_usd, "session")
        if self.shared is not None:
            self.release()  # a reserved call that never came back (the provider failed, a retry)
            try:
                self._reservation = self.shared.reserve(estimate)
            except BudgetRefused as refused:
                raise MaxCostError.before_call(refused.estimate, refused.left, "shared") from None

    def settle(self, cost: float | None) -> None:
        """A model call was made: its reservation in the shared budget becomes its cost."""
        if self.shared is not None:
            key, self._reservation = self._reservation, None
            self.shared.settle(key, cost)

    def release(self) -> None:
        """The reserved call was not made (or the turn ended): the shared budget gets it back."""
        if self.shared is not None and self._reservation is not None:
            key, self._reservation = self._reservation, None
            self.shared.release(key)

    def check_after_usage(self, turn_spent: float) -> None:
        """Check the session ceiling after every usage event; once passed, the session trips and
        stays tripped."""
        ceiling = self.session_ceiling
        if ceiling is not None and self.session_limit is not None and self.session.ledger.total.cost_usd > ceiling:
            self.session.trip_budget()
            raise SessionBudgetError(budget_spent_text(self.session, self.session_limit))
        spent = turn_spent + self.charged_elsewhere
        if self.turn_ceiling is not None and spent > self.turn_ceiling:
            raise MaxCostError(spent, self.turn_ceiling)


def expected_output(max_tokens: int | None, spent: UsageTotals) -> int:
    """The output tokens the next call is expected to write: `max_tokens` when set (the most it
    may write), else the average of this turn's calls so far (none yet: nothing is assumed)."""
    if max_tokens is not None:
        return max_tokens
    return spent.output_tokens // spent.calls if spent.calls else 0


def add_session_budget(session: Session, usd: float, limit: float | None) -> float:
    """Add `usd` to the session's budget (lifting a trip); returns what is left."""
    check_number("--add-budget", usd, upper=MAX_COST_USD)
    if limit is None:
        raise BlitzError("no session budget is set (limits.max_cost_usd_session); nothing to add to")
    session.add_budget(usd)
    return limit + session.budget_added_usd - session.ledger.total.cost_usd
