"""The summary of many notebook runs (`blitz run -j`, `blitz report merge`): one line per
notebook (outcome, stop reasons, cost, time) and totals that are the sums of the runs' own.

A summary is built from each run's `RunReport` (cli/report.py), so merging the reports of
separate runs (a CI matrix, a workflow fan-out) gives the same summary as one `-j` run over the
same notebooks. The exit status of many runs is the worst of theirs (`SEVERITY`).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from .report import EXIT_CODES, Outcome, RunReport, Totals

SEVERITY: tuple[Outcome, ...] = ("ok", "limit", "blocked", "cell_failed", "usage")
"""Best first: a run that failed is worse than one a limit stopped, bad usage worst of all."""


class NotebookRun(BaseModel):
    """One notebook's run, as the summary lists it."""

    notebook: str
    name: str = ""
    """Its name in the report folder (`NAME.ipynb`, `NAME.json`, `NAME.log`)."""
    model: str | None = None
    outcome: Outcome
    exit_code: int
    started: bool = True
    """False when it was never started (the shared budget was spent before its turn)."""
    headline: str = ""
    """Why it stopped: the failing cell's headline, or why it did not start."""
    output: str | None = None
    report: str | None = None
    log: str | None = None
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    """How many of its agent turns ended with each stop reason."""
    duration_s: float = 0.0
    totals: Totals = Field(default_factory=Totals)


class SharedBudget(BaseModel):
    """What the shared budget saw: the limit, what was spent, calls counted and refused."""

    limit_usd: float
    spent_usd: float = 0.0
    calls: int = 0
    refused: int = 0
    largest_total_usd: float = 0.0
    """The most that was ever spent plus reserved at once (never above the limit)."""


class SummaryReport(BaseModel):
    """What `blitz run -j … --report FILE` and `blitz report merge` write."""

    kind: Literal["summary"] = "summary"
    outcome: Outcome = "ok"
    exit_code: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    """Runs per outcome."""
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    """Agent turns per stop reason, over all runs."""
    budget: SharedBudget | None = None
    duration_s: float = 0.0
    runs: list[NotebookRun] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)


def worst(outcomes: list[Outcome]) -> Outcome:
    return max(outcomes, key=SEVERITY.index, default="ok")


def from_report(report: RunReport, *, name: str = "", report_path: str | None = None) -> NotebookRun:
    stops = Counter(turn.stop_reason or "none" for turn in report.turns)
    return NotebookRun(
        notebook=report.notebook,
        name=name or Path(report.notebook).stem,
        model=report.model,
        outcome=report.outcome,
        exit_code=report.exit_code,
        headline=report.failed_cell.headline if report.failed_cell else "",
        output=report.output,
        report=report_path,
        stop_reasons=dict(stops),
        duration_s=report.duration_s,
        totals=report.totals,
    )


def summarise(runs: list[NotebookRun], *, budget: SharedBudget | None = None, duration_s: float = 0.0) -> SummaryReport:
    outcome = worst([run.outcome for run in runs])
    totals = Totals()
    stops: Counter[str] = Counter()
    for run in runs:
        totals.turns += run.totals.turns
        totals.tool_calls += run.totals.tool_calls
        totals.usage.merge(run.totals.usage)
        totals.elapsed_s += run.totals.elapsed_s
        stops.update(run.stop_reasons)
    totals.elapsed_s = round(totals.elapsed_s, 3)
    return SummaryReport(
        outcome=outcome,
        exit_code=EXIT_CODES[outcome],
        counts=dict(Counter(run.outcome for run in runs)),
        stop_reasons=dict(stops),
        budget=budget,
        duration_s=round(duration_s, 3),
        runs=runs,
        totals=totals,
    )


class MergeProblem(Exception):
    """A file given to `blitz report merge` that is not a report (exit status 2)."""


def read_runs(path: Path) -> list[NotebookRun]:
    """The runs in a report file: one for a `RunReport`, all of them for a summary."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MergeProblem(f"no report at {path}") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise MergeProblem(f"{path} is not a JSON report: {error}") from None
    try:
        if isinstance(data, dict) and data.get("kind") == "summary":
            return SummaryReport.model_validate(data).runs
        return [from_report(RunReport.model_validate(data), report_path=str(path))]
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise MergeProblem(f"{path} is not a blitz run report ({where}: {first['msg']})") from None


def merge(paths: list[Path]) -> SummaryReport:
    runs = [run for path in paths for run in read_runs(path)]
    return summarise(runs, duration_s=sum(run.duration_s for run in runs))


def table_lines(summary: SummaryReport) -> list[str]:
    """The summary for the terminal: one line per run, then the totals."""
    lines = []
    for run in summary.runs:
        stops = ", ".join(f"{reason} {count}" for reason, count in sorted(run.stop_reasons.items())) or "no turns"
        lines.append(
            f"  {run.name or run.notebook}: {run.outcome} (exit {run.exit_code}) · {stops} · "
            f"{run.totals.usage.describe_cost()} · {run.duration_s:.1f} s"
            + (f" · {run.headline}" if run.headline else "")
        )
    counts = ", ".join(f"{count} {outcome}" for outcome, count in sorted(summary.counts.items()))
    lines.append(
        f"{len(summary.runs)} notebook(s): {counts or 'none'} · {summary.totals.turns} agent turn(s), "
        f"{summary.totals.tool_calls} tool call(s), {summary.totals.usage.describe()}"
    )
    return lines


def merge_main(argv: list[str], prog: str, err: Any, out: Any) -> int:
    """`blitz report merge REPORT.json… [-o FILE]`."""
    import argparse

    parser = argparse.ArgumentParser(
        prog=f"{prog} report merge",
        description="Combine blitz run reports (single runs or summaries) into one summary.",
    )
    parser.add_argument("reports", nargs="+", type=Path, help="report files (blitz run --report)")
    parser.add_argument("-o", "--output", type=Path, help="write the merged summary here (default: stdout)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if args.output is not None and (args.output.is_dir() or not args.output.parent.is_dir()):
        print(f"{prog} report merge: -o {args.output} must be a file in an existing folder", file=err)
        return EXIT_CODES["usage"]
    try:
        summary = merge(args.reports)
    except MergeProblem as problem:
        print(f"{prog} report merge: {problem}", file=err)
        return EXIT_CODES["usage"]
    text = summary.model_dump_json(indent=2) + "\n"
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
        for line in table_lines(summary):
            print(line, file=err)
    else:
        out.write(text)
    return 0
