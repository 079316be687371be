"""Usage and cost.

Token counts per call, prices per model (config table first, then a price source the model
adapter supplies, e.g. litellm's cost map), and a per-session ledger. A call with no price
marks the ledger `priced=False`: the display says "unpriced", never a silent $0.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field


class TokenUsage(BaseModel):
    """Tokens of one model call: input (cached included), cached, cache writes, output."""

    input_tokens: int = 0
    """Prompt tokens, cached ones included (= the current context size)."""
    cached_tokens: int = 0
    """Prompt tokens read from the provider's cache."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the cache (clamped to the uncached input)."""
    output_tokens: int = 0
    """Completion tokens, reasoning included."""
    reasoning_tokens: int = 0
    """Of the output, the tokens spent thinking (where the provider reports them)."""

    def clamped(self) -> TokenUsage:
        """Cached ≤ input, cache writes ≤ uncached input."""
        cached = min(self.cached_tokens, self.input_tokens)
        write = min(self.cache_write_tokens, self.input_tokens - cached)
        if cached == self.cached_tokens and write == self.cache_write_tokens:
            return self  # the usual case: every call's usage passes here several times
        return self.model_copy(update={"cached_tokens": cached, "cache_write_tokens": write})


class Price(BaseModel):
    """USD per one million tokens."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, usage: TokenUsage) -> float:
        """Uncached, cached, cache-write and output tokens at their own rates."""
        usage = usage.clamped()
        uncached = usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens
        cached_rate = self.cached_input if self.cached_input is not None else self.input
        write_rate = self.cache_write if self.cache_write is not None else self.input
        return (
            uncached * self.input
            + usage.cached_tokens * cached_rate
            + usage.cache_write_tokens * write_rate
            + usage.output_tokens * self.output
        ) / 1e6

    def cache_saving(self, usage: TokenUsage) -> float:
        """What the cache saved on this call: its cost with every input token at the plain
        input rate, less its real cost (negative when writing the cache cost more than it
        saved, as on the first step of a turn)."""
        if not usage.cached_tokens and not usage.cache_write_tokens:
            return 0.0  # the cache was not touched
        uncached = usage.model_copy(update={"cached_tokens": 0, "cache_write_tokens": 0})
        return self.cost(uncached) - self.cost(usage)


PriceSource = Callable[[str], Price | None]
"""Looks a model name up somewhere outside the config (the model adapter's cost map)."""


class PriceBook:
    """Finds the price of a model: config table (exact name, else longest prefix), then the
    fallback source."""

    def __init__(self, configured: dict[str, Price], fallback: PriceSource | None = None) -> None:
        self._configured = configured
        self._fallback = fallback

    def lookup(self, model: str) -> Price | None:
        if model in self._configured:
            return self._configured[model]
        prefixes = [name for name in self._configured if model.startswith(name)]
        if prefixes:
            return self._configured[max(prefixes, key=len)]
        return self._fallback(model) if self._fallback else None


class UsageTotals(BaseModel):
    """Summed usage; `priced` is False as soon as one call had no price."""

    input_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    saved_usd: float = 0.0
    """What prompt caching saved, priced calls only (Price.cache_saving)."""
    priced: bool = True
    calls: int = 0

    def add(self, usage: TokenUsage, cost: float | None, saved: float = 0.0) -> None:
        # Sums of valid counts are valid: the fields are updated in place, not through
        # pydantic's checked assignment (a turn adds to three of these per model call).
        usage = usage.clamped()
        fields = self.__dict__
        fields["saved_usd"] += saved
        fields["input_tokens"] += usage.input_tokens
        fields["cached_tokens"] += usage.cached_tokens
        fields["cache_write_tokens"] += usage.cache_write_tokens
        fields["output_tokens"] += usage.output_tokens
        fields["reasoning_tokens"] += usage.reasoning_tokens
        fields["calls"] += 1
        if cost is None:
            fields["priced"] = False
        else:
            fields["cost_usd"] += cost

    def merge(self, other: UsageTotals) -> None:
        fields, theirs = self.__dict__, other.__dict__
        for name in _SUMMED:
            fields[name] += theirs[name]
        fields["priced"] = fields["priced"] and theirs["priced"]

    def describe_cost(self) -> str:
        """ "$0.0123", or "unpriced" (with the priced part) when any call had no price; "—"
        before any call has ended, when nothing is known yet (an unpriced model's footer must
        not show $0.0000 first and "unpriced" after its first call)."""
        if not self.calls and not self.cost_usd:
            return "—"
        if self.priced:
            return f"${self.cost_usd:.4f}"
        if self.cost_usd:
            return f"${self.cost_usd:.4f} + unpriced calls"
        return "unpriced"

    def describe_saving(self) -> str:
        """ "cache saved $0.0123", or "" when the cache was not read (or saved nothing)."""
        if not self.cached_tokens or self.saved_usd <= 0:
            return ""
        return f"cache saved ${self.saved_usd:.4f}"

    def describe(self) -> str:
        cached = f" ({self.cached_tokens:,} cached)" if self.cached_tokens else ""
        saving = self.describe_saving()
        return (
            f"{self.input_tokens:,} in{cached} · {self.output_tokens:,} out · "
            f"{self.calls} call{'s' if self.calls != 1 else ''} · {self.describe_cost()}"
            + (f" · {saving}" if saving else "")
        )


_SUMMED = tuple(name for name, info in UsageTotals.model_fields.items() if info.annotation in (int, float))
"""The fields `merge` adds up (all but `priced`)."""


class UsageLedger(BaseModel):
    """Usage of one session, total and per model."""

    total: UsageTotals = Field(default_factory=UsageTotals)
    by_model: dict[str, UsageTotals] = Field(default_factory=dict)
    last_prompt_tokens: int = 0

    def merge(self, other: UsageLedger) -> None:
        """Add another ledger's usage (an aside's tokens count toward its session)."""
        self.total.merge(other.total)
        for model, totals in other.by_model.items():
            self.by_model.setdefault(model, UsageTotals()).merge(totals)

    def record(self, model: str, usage: TokenUsage, cost: float | None, saved: float = 0.0) -> None:
        self.total.add(usage, cost, saved)
        self.by_model.setdefault(model, UsageTotals()).add(usage, cost, saved)
        self.last_prompt_tokens = usage.input_tokens
