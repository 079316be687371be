"""`blitz run NB1.ipynb NB2.ipynb … -j N`: many notebooks, N at a time, one budget for all.

Each notebook runs in its own worker process — `blitz run` on that one notebook, so each gets
its own kernel, its output notebook, its JSON report and its exit status exactly as a single run
would — and this process only schedules them, prints one line as each starts and ends (with a
running total), and writes the summary (cli/summary.py). `--budget` here is one budget shared
by every notebook: a ledger file (core/budget_ledger.py) the kernels reserve each model call's
estimate in before the call, so together they never pass it. Once a call was refused, the
notebooks not yet started are not started. Options and report: docs/blitz-run.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from pydantic import ValidationError

from ..core.budget_ledger import BudgetLedger
from ..core.redact import Redactor
from .checks import UsageProblem, check_notebook, check_options, check_writable, run_redactor
from .report import EXIT_CODES, RunReport
from .summary import NotebookRun, SharedBudget, SummaryReport, from_report, summarise, table_lines

SHARED_BUDGET_ENV = "BLITZ_SHARED_BUDGET"


@dataclass
class Job:
    """One notebook to run: its own options go after the notebook on the worker's command line."""

    notebook: Path
    name: str
    options: list[str] = field(default_factory=list)
    model: str | None = None


def unique_names(notebooks: list[Path], suffix: Callable[[int], str] = lambda _: "") -> list[str]:
    """A file name per run for the report folder: the notebook's stem, numbered when two
    notebooks share one."""
    names: list[str] = []
    for index, notebook in enumerate(notebooks):
        base = notebook.stem + suffix(index)
        name, number = base, 2
        while name in names:
            name, number = f"{base}-{number}", number + 1
        names.append(name)
    return names


def common_options(args: argparse.Namespace) -> list[str]:
    """The options every worker gets, as `blitz run` reads them."""
    options: list[str] = ["--approve", args.approve]
    for name, value in args.parameter:
        options += ["-p", name, value]
    for flag, value in (("--cwd", args.cwd), ("--kernel", args.kernel), ("--timeout", args.timeout)):
        if value is not None:
            options += [flag, str(value)]
    if args.store:
        options += ["--store", args.store]
    return options


class Fanout:
    """Runs the jobs N at a time; the progress lines and the summary."""

    def __init__(self, jobs: list[Job], workers: int, folder: Path, err: TextIO, redactor: Redactor) -> None:
        self.jobs = jobs
        self.workers = workers
        self.folder = folder
        self.err = err
        self.redactor = redactor
        self.ledger: BudgetLedger | None = None
        self._lock = threading.Lock()
        self._print_lock = threading.Lock()
        self._done: list[NotebookRun] = []

    def share_budget(self, usd: float, where: Path) -> None:
        self.ledger = BudgetLedger.create(where / "budget.json", usd)

    def run(self) -> SummaryReport:
        started = time.monotonic()
        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="blitz-run") as pool:
            runs = list(pool.map(self._one, range(len(self.jobs))))
        budget = None
        if self.ledger is not None:
            state = self.ledger.state()
            budget = SharedBudget(
                limit_usd=state.limit_usd,
                spent_usd=round(state.spent_usd, 6),
                calls=state.calls,
                refused=state.refused,
                largest_total_usd=round(state.largest_total_usd, 6),
            )
        return summarise(runs, budget=budget, duration_s=time.monotonic() - started)

    def _one(self, index: int) -> NotebookRun:
        job = self.jobs[index]
        tag = f"{index + 1}/{len(self.jobs)}"
        if self.ledger is not None and self.ledger.state().refused:
            run = NotebookRun(
                notebook=str(job.notebook),
                name=job.name,
                model=job.model,
                outcome="limit",
                exit_code=EXIT_CODES["limit"],
                started=False,
                headline="not started: the shared budget is spent",
            )
            return self._finished(tag, run)
        self._print(f"[start {tag}] {job.name}" + (f" · {job.model}" if job.model else ""))
        return self._finished(tag, self._work(job))

    def _work(self, job: Job) -> NotebookRun:
        output, report, log = (self.folder / f"{job.name}{ext}" for ext in (".ipynb", ".json", ".log"))
        command = [sys.executable, "-m", "blitz_kernel", "run", str(job.notebook), "-o", str(output)]
        command += ["--report", str(report), *job.options]
        env = dict(os.environ)
        env.pop(SHARED_BUDGET_ENV, None)
        if self.ledger is not None:
            env[SHARED_BUDGET_ENV] = str(self.ledger.path)
        started = time.monotonic()
        with open(log, "w", encoding="utf-8") as stderr:
            done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr, check=False)
        took = round(time.monotonic() - started, 3)
        try:
            run = from_report(RunReport.model_validate_json(report.read_bytes()), name=job.name)
        except (OSError, ValidationError):  # it stopped before writing one: bad usage, or it died
            last = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
            code = done.returncode if done.returncode in EXIT_CODES.values() else EXIT_CODES["cell_failed"]
            outcome = next(name for name, value in EXIT_CODES.items() if value == code)
            return NotebookRun(
                notebook=str(job.notebook),
                name=job.name,
                model=job.model,
                outcome=outcome,
                exit_code=code,
                headline=last[-1] if last else f"the worker exited with status {done.returncode}",
                log=str(log),
                duration_s=took,
            )
        run.model = job.model or run.model
        run.report, run.log = str(report), str(log)
        run.output = str(output) if output.exists() else None
        return run

    def _finished(self, tag: str, run: NotebookRun) -> NotebookRun:
        with self._lock:
            self._done.append(run)
            spent = sum(r.totals.usage.cost_usd for r in self._done)
            line = (
                f"[{'done' if run.started else 'skip'} {tag}] {run.name}: {run.outcome} (exit {run.exit_code})"
                f" · {run.totals.turns} turn(s) · {run.totals.usage.describe_cost()} · {run.duration_s:.1f} s"
                + (f" · {run.headline}" if run.headline else "")
                + f" — total: {len(self._done)}/{len(self.jobs)} done, ${spent:.4f}"
            )
            self._print(line)
        return run

    def _print(self, line: str) -> None:
        """One whole line at a time: the workers' threads print at once."""
        with self._print_lock:
            self.err.write(self.redactor.redact(line) + "\n")
            self.err.flush()


def write_summary(summary: SummaryReport, path: Path | None, err: TextIO, redactor: Redactor, prog: str) -> None:
    summary = redactor.redact_value(summary)
    for line in table_lines(summary):
        print(redactor.redact(line), file=err)
    if path is not None:
        try:
            path.write_text(summary.model_dump_json(indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            print(f"{prog}: cannot write the report {path}: {error.strerror or error}", file=err)


def report_folder(given: Path | None, scratch: str) -> Path:
    return given.expanduser().resolve() if given is not None else Path(scratch)


def scratch_folder() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="blitz-runs-")


def check_many(args: argparse.Namespace, prog: str = "blitz run") -> list[Path]:
    """The notebooks, each checked as a single run checks it; UsageProblem at the first wrong
    one, before any worker starts."""

    if args.output is not None:
        raise UsageProblem("-o/--output is for one notebook; with several, --report-dir DIR keeps each output")
    if args.jobs is not None and not 1 <= args.jobs <= 64:
        raise UsageProblem(f"-j must be a whole number from 1 to 64, got {args.jobs}")
    check_options(args)
    if args.report is not None:
        check_writable("--report", args.report.expanduser())
    folder = args.report_dir
    if folder is not None and folder.exists() and not folder.is_dir():
        raise UsageProblem(f"--report-dir {folder} is a file; give a folder")
    if folder is not None and not folder.exists() and not folder.expanduser().parent.is_dir():
        raise UsageProblem(f"--report-dir {folder}: the folder {folder.parent} does not exist")
    notebooks = []
    for given in args.notebooks:
        notebook = given.expanduser().resolve()
        if not notebook.is_file():
            raise UsageProblem(f"no notebook at {given}")
        if notebook.suffix != ".ipynb":
            raise UsageProblem(f"{given} is not a .ipynb notebook")
        args.notebook = given
        check_notebook(args, notebook)
        notebooks.append(notebook)
    return notebooks


def run_many(args: argparse.Namespace, err: TextIO) -> int:
    """`blitz run` over several notebooks; returns the worst exit status of the runs."""

    try:
        notebooks = check_many(args)
    except UsageProblem as problem:
        print(f"blitz run: {problem}", file=err)
        return EXIT_CODES["usage"]
    options = common_options(args) + (["--model", args.model] if args.model else [])
    jobs = [Job(nb, name, options, args.model) for nb, name in zip(notebooks, unique_names(notebooks), strict=True)]
    redactor = run_redactor(args.cwd or Path.cwd())
    with scratch_folder() as scratch:
        folder = report_folder(args.report_dir, scratch)
        folder.mkdir(exist_ok=True)
        fanout = Fanout(jobs, args.jobs or 1, folder, err, redactor)
        if args.budget is not None:
            fanout.share_budget(args.budget, Path(scratch))
        summary = fanout.run()
        if args.report_dir is None:  # the outputs go with the scratch folder
            for run in summary.runs:
                run.output = run.report = run.log = None
        write_summary(summary, args.report, err, redactor, "blitz run")
    print(f"blitz run: {summary.outcome} (exit {summary.exit_code})", file=err)
    return summary.exit_code
