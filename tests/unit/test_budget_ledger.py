"""The ledger several processes share a budget through (core/budget_ledger.py): reservations
made at once from several processes never pass the limit together, a refusal is counted, and a
dead process's reservation stops counting."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from blitz_kernel.core.budget_ledger import BudgetLedger, BudgetRefused, LedgerState, Reservation
from blitz_kernel.errors import BlitzError


def _spend(path: str, calls: int) -> None:
    ledger = BudgetLedger(Path(path))
    for _ in range(calls):
        try:
            key = ledger.reserve(0.3)
        except BudgetRefused:
            continue
        ledger.settle(key, 0.25)


def test_processes_spending_at_once_never_pass_the_limit_together(tmp_path: Path):
    ledger = BudgetLedger.create(tmp_path / "budget.json", 2.0)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_spend, args=(str(ledger.path), 5)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    state = ledger.state()
    assert state.spent_usd <= 2.0 and state.largest_total_usd <= 2.0
    assert state.refused >= 1 and state.calls + state.refused == 20
    assert state.spent_usd == pytest.approx(0.25 * state.calls)
    assert state.reservations == {}


def test_a_refusal_says_what_is_left_and_a_released_call_costs_nothing(tmp_path: Path):
    ledger = BudgetLedger.create(tmp_path / "budget.json", 1.0)
    key = ledger.reserve(0.7)
    with pytest.raises(BudgetRefused, match=r"about \$0.5000, more than the \$0.3000 left"):
        ledger.reserve(0.5)
    ledger.release(key)
    ledger.settle(ledger.reserve(0.5), 0.4)
    state = ledger.state()
    assert (state.spent_usd, state.calls, state.refused, state.reservations) == (pytest.approx(0.4), 1, 1, {})


def test_a_dead_processs_reservation_no_longer_counts(tmp_path: Path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    ledger = BudgetLedger.create(tmp_path / "budget.json", 1.0)
    held = LedgerState(limit_usd=1.0, reservations={"x": Reservation(pid=int(gone.stdout), usd=0.9)})
    ledger.path.write_text(held.model_dump_json())
    ledger.settle(ledger.reserve(0.8), 0.8)  # the 0.9 of the dead process is not held any more
    assert ledger.state().spent_usd == pytest.approx(0.8)


def test_a_missing_or_broken_ledger_is_one_clear_error(tmp_path: Path):
    with pytest.raises(BlitzError, match="does not exist"):
        BudgetLedger(tmp_path / "none.json").reserve(0.1)
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(BlitzError, match="cannot be read"):
        BudgetLedger(tmp_path / "bad.json").state()


async def test_a_turn_reserves_each_call_in_the_shared_budget_and_stops_before_passing_it(tmp_path: Path):
    """Each call costs $0.20 (2,000 prompt tokens at $100/M) and is estimated above that (the real
    prompt, tools included): with $0.50 shared, the first call is made, the second refused."""
    from blitz_kernel.core.usage import Price
    from tests.helpers.workspaces import scripted_workspace

    ledger = BudgetLedger.create(tmp_path / "budget.json", 0.5)
    spend = {"usage": {"prompt_tokens": 2000, "completion_tokens": 0}}
    steps = [
        {"text": "", "tool_calls": [{"name": "list_variables", "arguments": {}}], **spend},
        {"text": "never made", **spend},
    ]
    workspace, model = scripted_workspace(
        tmp_path, steps, price=Price(input=100.0, output=0.0), **{"limits.shared_budget_file": str(ledger.path)}
    )
    result = await workspace.run("go")
    assert result.stop_reason == "max_cost" and "left of the shared budget" in (result.error or "")
    assert len(model.requests) == 1
    state = ledger.state()
    assert state.spent_usd == pytest.approx(0.2) and (state.calls, state.refused) == (1, 1)
    assert state.reservations == {}  # nothing is held once the turn is over
    assert 0.2 < state.largest_total_usd <= 0.5  # the call was reserved at more than it cost
