"""Spend ceilings that hold: the turn's `--max-cost` and the session's
budget, checked before a call and after every usage event.

Checking only after the spend lets one big call blow through a ceiling (pydantic-ai#7133), so
each step first estimates what the next request will cost (prompt size × input price) and is
not made when that alone would pass what is left. The session budget trips once spending
passes it and stays tripped (a field of the session, persisted with it) until the user adds
budget: every later turn is refused before any model call.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.numbers import MAX_COST_USD, check_number
from ...core.usage import Price
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

    @property
    def charged_elsewhere(self) -> float:
        return self.control.charged_usd if self.control is not None else 0.0

    @property
    def session_ceiling(self) -> float | None:
        if self.session_limit is None:
            return None
        return self.session_limit + self.session.budget_added_usd

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
        return self.turn_ceiling is not None or self.session_limit is not None

    def check_before_call(self, turn_spent: float, prompt_tokens: int, price: Price | None) -> None:
        """Stop before a call whose prompt alone would pass what is left."""
        if price is None:
            return
        estimate = prompt_tokens * price.input / 1e6
        if self.turn_ceiling is not None and turn_spent + self.charged_elsewhere + estimate > self.turn_ceiling:
            raise MaxCostError.before_call(estimate, self.turn_ceiling - turn_spent - self.charged_elsewhere, "turn")
        ceiling = self.session_ceiling
        if ceiling is not None and self.session.ledger.total.cost_usd + estimate > ceiling:
            raise MaxCostError.before_call(estimate, ceiling - self.session.ledger.total.cost_usd, "session")

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


def add_session_budget(session: Session, usd: float, limit: float | None) -> float:
    """Add `usd` to the session's budget (lifting a trip); returns what is left."""
    check_number("--add-budget", usd, upper=MAX_COST_USD)
    if limit is None:
        raise BlitzError("no session budget is set (limits.max_cost_usd_session); nothing to add to")
    session.add_budget(usd)
    return limit + session.budget_added_usd - session.ledger.total.cost_usd
