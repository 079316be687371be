"""`blitz run` over many notebooks: N worker processes, each its own kernel, one budget shared by
all of them, a summary report, and `blitz report merge` over the per-notebook reports. Offline, on
a scripted model whose calls have a price (docs/blitz-run.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from blitz_kernel.cli.report import RunReport
from blitz_kernel.cli.summary import SummaryReport

from .test_blitz_run import notebook, script

ROOT = Path(__file__).resolve().parents[2]


def blitz(*args: str | Path, home: Path, timeout: float = 420) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    env.update(
        HOME=str(home), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True", PYDEVD_DISABLE_FILE_VALIDATION="1"
    )
    return subprocess.run(
        [sys.executable, "-m", "blitz_kernel", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def priced_home(home: Path) -> None:
    """The user's own price for the scripted model: $100 per million prompt tokens."""
    (home / ".blitz").mkdir()
    (home / ".blitz" / "config.toml").write_text("[prices.scripted]\ninput = 100.0\noutput = 0.0\n")


def test_eight_notebooks_four_at_a_time_share_one_budget_that_runs_out(tmp_path: Path):
    """Each answer costs $0.20 (2,000 prompt tokens); each call's estimate (its real prompt,
    system and tool schemas included) is reserved in the shared ledger before it is made. With
    $1.00 for eight notebooks the budget runs out part-way: the refused turn stops its notebook
    with exit 3, the notebooks not yet started are not started, and no call passes the budget."""
    priced_home(tmp_path)
    script(tmp_path / "script.json", {"text": "The answer.", "usage": {"prompt_tokens": 2000, "completion_tokens": 1}})
    books = [
        notebook(tmp_path / f"nb{i}.ipynb", "%load_ext blitz_kernel", "%%blitz\nA question.", "assert True")
        for i in range(8)
    ]
    out = tmp_path / "out"
    done = blitz(
        "run", *books, "-j", "4", "--model", "scripted:script.json", "--budget", "1.0",
        "--report-dir", out, "--report", tmp_path / "summary.json", home=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    summary = SummaryReport.model_validate_json((tmp_path / "summary.json").read_text())
    assert (summary.outcome, summary.exit_code, len(summary.runs)) == ("limit", 3, 8)
    assert summary.counts.get("ok", 0) >= 1 and summary.counts["limit"] >= 1
    assert sum(summary.counts.values()) == 8
    # no call past the budget: what was spent, and spent plus reserved at any moment
    assert summary.budget is not None and summary.budget.refused >= 1
    assert summary.totals.usage.cost_usd <= 1.0 + 1e-9
    assert summary.budget.largest_total_usd <= 1.0 + 1e-9
    assert summary.budget.spent_usd == pytest.approx(summary.totals.usage.cost_usd, abs=1e-6)
    assert summary.totals.usage.cost_usd == pytest.approx(0.2 * summary.totals.usage.calls, abs=1e-6)
    for run in summary.runs:
        if run.outcome == "ok":
            assert run.stop_reasons == {"end_turn": 1} and Path(run.output or "").is_file()
        elif run.started:
            assert run.stop_reasons == {"max_cost": 1}
            assert "shared budget" in run.headline
        else:
            assert run.headline == "not started: the shared budget is spent"
    # progress: a start and an end line per started notebook, with the running total
    lines = done.stderr.splitlines()
    started = [run for run in summary.runs if run.started]
    assert sum(line.startswith("[start ") for line in lines) == len(started), done.stderr
    assert sum(line.startswith(("[done ", "[skip ")) for line in lines) == 8
    assert any("— total: 8/8 done" in line for line in lines)
    # the per-notebook reports, merged, give the same totals as the sum of their own
    reports = sorted(out.glob("*.json"))
    assert len(reports) == len(started)
    merged_path = tmp_path / "merged.json"
    merged = blitz("report", "merge", *reports, "-o", merged_path, home=tmp_path)
    assert merged.returncode == 0, merged.stderr
    merged_summary = SummaryReport.model_validate_json(merged_path.read_text())
    singles = [RunReport.model_validate_json(path.read_text()) for path in reports]
    assert merged_summary.totals.turns == sum(r.totals.turns for r in singles) == summary.totals.turns
    assert merged_summary.totals.usage.calls == sum(r.totals.usage.calls for r in singles)
    assert merged_summary.totals.usage.cost_usd == pytest.approx(sum(r.totals.usage.cost_usd for r in singles))
    assert merged_summary.totals.usage.cost_usd == pytest.approx(summary.totals.usage.cost_usd)
    assert merged_summary.exit_code == 3


def test_bad_input_is_one_line_and_exit_2_before_any_kernel_starts(tmp_path: Path):
    nb = notebook(tmp_path / "a.ipynb", "1")
    other = notebook(tmp_path / "b.ipynb", "2")
    cases = [
        (["run", nb, other, "-o", tmp_path / "x.ipynb"], "-o/--output is for one notebook"),
        (["run", nb, other, "-j", "0"], "-j must be a whole number from 1 to 64"),
        (["run", nb, tmp_path / "missing.ipynb"], "no notebook at"),
        (["run", nb, other, "--store", "mysql://x"], "--store: unknown store"),
        (["run", nb, other, "--report-dir", nb], "is a file; give a folder"),
        (["report", "merge", nb], "is not a blitz run report"),
        (["report", "merge", tmp_path / "none.json"], "no report at"),
    ]
    for args, message in cases:
        done = blitz(*args, home=tmp_path, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert json.loads(nb.read_text())["cells"]  # nothing was written over
