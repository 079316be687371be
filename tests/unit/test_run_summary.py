"""The summary of many runs and `blitz report merge` (docs/blitz-run.md): totals are the sums
of the runs' own, the exit status is the worst, and a file that is not a report is one line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from blitz_kernel.cli.report import RunReport, Totals, TurnReport
from blitz_kernel.cli.summary import SummaryReport, from_report, merge_main, summarise, worst
from blitz_kernel.core.usage import UsageTotals


def run_report(name: str, outcome: str, code: int, *costs: float, stops: tuple[str, ...] = ()) -> RunReport:
    turns = [
        TurnReport(cell_index=i, stop_reason=stop, usage=UsageTotals(cost_usd=cost, calls=1, input_tokens=10))
        for i, (cost, stop) in enumerate(zip(costs, stops or ("end_turn",) * len(costs), strict=True))
    ]
    totals = Totals(
        turns=len(turns), usage=UsageTotals(cost_usd=sum(costs), calls=len(costs), input_tokens=10 * len(costs))
    )
    return RunReport(notebook=f"/nb/{name}.ipynb", outcome=outcome, exit_code=code, turns=turns, totals=totals)  # type: ignore[arg-type]


def test_the_worst_outcome_wins():
    assert worst([]) == "ok"
    assert worst(["ok", "limit"]) == "limit"
    assert worst(["limit", "blocked", "ok"]) == "blocked"
    assert worst(["blocked", "cell_failed", "limit"]) == "cell_failed"
    assert worst(["cell_failed", "usage"]) == "usage"


def test_merging_reports_and_summaries_sums_their_totals(tmp_path: Path):
    a = run_report("a", "ok", 0, 0.1, 0.2)
    b = run_report("b", "limit", 3, 0.3, stops=("max_cost",))
    c = run_report("c", "ok", 0, 0.05)
    (tmp_path / "a.json").write_text(a.model_dump_json())
    earlier = summarise([from_report(b), from_report(c)])
    (tmp_path / "bc.json").write_text(earlier.model_dump_json())
    out, err = io.StringIO(), io.StringIO()
    assert merge_main([str(tmp_path / "a.json"), str(tmp_path / "bc.json")], "blitz", err, out) == 0
    merged = SummaryReport.model_validate_json(out.getvalue())
    assert [r.name for r in merged.runs] == ["a", "b", "c"]
    assert merged.totals.usage.cost_usd == pytest.approx(0.65) and merged.totals.usage.calls == 4
    assert merged.totals.turns == 4 and merged.totals.usage.input_tokens == 40
    assert (merged.outcome, merged.exit_code) == ("limit", 3)
    assert merged.counts == {"ok": 2, "limit": 1} and merged.stop_reasons == {"end_turn": 3, "max_cost": 1}


def test_a_file_that_is_not_a_report_is_one_line_and_exit_2(tmp_path: Path):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    (tmp_path / "y.json").write_text("not json")
    for name, message in (
        ("x.json", "is not a blitz run report (notebook: Field required)"),
        ("y.json", "is not a JSON report"),
    ):
        err = io.StringIO()
        assert merge_main([str(tmp_path / name)], "blitz", err, io.StringIO()) == 2
        assert message in err.getvalue() and len(err.getvalue().strip().splitlines()) == 1
