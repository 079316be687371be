"""One budget that several processes spend from (`blitz run -j N`, `blitz eval`: each notebook
runs in its own kernel, and the budget is for all of them together).

The ledger is a small JSON file, read and rewritten only under an exclusive `fcntl` lock on a
sibling `.lock` file, so two kernels never both see the same money left. Before each model call
a kernel *reserves* the call's estimate (the same estimate the session budget checks); the call
is refused when what was spent, plus every reservation still in flight, plus this estimate,
would pass the limit. After the call its reservation is replaced by its real cost. A
reservation of a process that is gone (killed mid-call) no longer counts. Calls with no price
are not counted, as for the session budget (docs/blitz-run.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ..errors import BlitzError


class Reservation(BaseModel):
    pid: int
    usd: float


class LedgerState(BaseModel):
    """What the ledger file holds."""

    limit_usd: float
    spent_usd: float = 0.0
    calls: int = 0
    """Priced model calls counted."""
    refused: int = 0
    """Calls not made because the budget would have passed its limit."""
    largest_total_usd: float = 0.0
    """The most that was ever spent plus reserved at once: never above `limit_usd`."""
    reservations: dict[str, Reservation] = Field(default_factory=dict)

    @property
    def reserved_usd(self) -> float:
        return sum(r.usd for r in self.reservations.values())

    @property
    def left_usd(self) -> float:
        return self.limit_usd - self.spent_usd - self.reserved_usd


class BudgetRefused(BlitzError):
    """The call's estimate would pass what is left of the shared budget."""

    def __init__(self, estimate: float, left: float) -> None:
        super().__init__(f"the next call would cost about ${estimate:.4f}, more than the ${left:.4f} left")
        self.estimate = estimate
        self.left = left


_counter = itertools.count(1)


class BudgetLedger:
    """The ledger at `path` (created by `create`, then shared by path)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    @classmethod
    def create(cls, path: Path, limit_usd: float) -> BudgetLedger:
        ledger = cls(path)
        with ledger._locked():
            ledger._write(LedgerState(limit_usd=limit_usd))
        return ledger

    def state(self) -> LedgerState:
        with self._locked():
            return self._read()

    def reserve(self, estimate: float) -> str:
        """Hold `estimate` USD for a call about to be made; its id, or BudgetRefused."""
        with self._locked():
            state = self._read()
            left = state.left_usd
            if estimate > left:
                state.refused += 1
                self._write(state)
                raise BudgetRefused(estimate, max(left, 0.0))
            key = f"{os.getpid()}-{next(_counter)}"
            state.reservations[key] = Reservation(pid=os.getpid(), usd=estimate)
            state.largest_total_usd = max(state.largest_total_usd, state.spent_usd + state.reserved_usd)
            self._write(state)
            return key

    def settle(self, key: str | None, cost: float | None) -> None:
        """The call is made: its reservation (if any) becomes its real cost (None: unpriced)."""
        with self._locked():
            state = self._read()
            if key is not None:
                state.reservations.pop(key, None)
            if cost is not None:
                state.spent_usd += cost
                state.calls += 1
            state.largest_total_usd = max(state.largest_total_usd, state.spent_usd + state.reserved_usd)
            self._write(state)

    def release(self, key: str) -> None:
        """A reserved call that was never made (the provider failed, the turn stopped)."""
        self.settle(key, None)

    # -- the file ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            handle = open(self._lock_path, "a+b")  # noqa: SIM115 (held for the block)
        except OSError as error:
            raise BlitzError(f"cannot open the shared budget ledger {self.path}: {error.strerror or error}") from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read(self) -> LedgerState:
        try:
            state = LedgerState.model_validate_json(self.path.read_bytes())
        except FileNotFoundError:
            raise BlitzError(f"the shared budget ledger {self.path} does not exist") from None
        except (OSError, ValidationError, ValueError):
            raise BlitzError(f"the shared budget ledger {self.path} cannot be read") from None
        state.reservations = {key: r for key, r in state.reservations.items() if _alive(r.pid)}
        return state

    def _write(self, state: LedgerState) -> None:
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        partial.write_text(state.model_dump_json(), encoding="utf-8")
        os.replace(partial, self.path)  # readers see the old state or the new one, never half


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
