"""`blitz run NOTEBOOK.ipynb`: run a notebook with agent cells unattended (CI, schedules).

papermill runs the cells (parameters, order, stop at the first failure, saving as it goes).
This module adds what papermill cannot know: the kernel's settings through the environment its
config reads, so `%%blitz` cells need no edits; an exit status that says why the run stopped (a
failing `%%blitz` cell raises, so papermill stops there too: papermill#501); progress on stderr
and the JSON report; and the kernel's redaction on everything it prints or writes, since CI logs
keep it. Bad input is one line and exit status 2 before any kernel starts. Several notebooks
(`-j N`, one shared budget) are cli/fanout.py's; `--replay` is cli/replay_run.py's. Options,
report and exit statuses: docs/blitz-run.md.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, TextIO

from ..core.redact import Redactor
from .checks import UsageProblem, check, run_redactor, shorten
from .report import (
    EXIT_CODES,
    INJECTED_TAG,
    FailedCell,
    Outcome,
    RunReport,
    executed_cells,
    source_indices,
    totals,
    turn_records,
)

LIMIT_STOPS = {"max_turns", "max_cost", "timeout", "watchdog"}
_STOPPED = re.compile(r"Blitz turn stopped \((\w+)\)")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TURN_LINE_MARKS = ("⚙", "↳", "— ", "📎", "⚠", "⟲")
"""How the plain renderer's lines start (notebook/render.py): these go to the terminal."""
SESSION_OPTION = re.compile(r"^%%blitz\b.*(\s-s\s|\s--session[\s=])")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="blitz run",
        description="Run a notebook with %%blitz cells unattended (papermill underneath). Exit "
        "status: 0 all cells ran, 1 a cell failed, 2 bad usage, 3 a turn or budget limit "
        "stopped the run, 4 a hook or policy blocked a turn.",
    )
    parser.add_argument("notebooks", nargs="+", type=Path, metavar="notebook", help="the notebook(s) to run")
    parser.add_argument("-o", "--output", type=Path, help="where to save the executed notebook (default: not kept)")
    parser.add_argument(
        "-j", "--jobs", type=int, metavar="N", help="run several notebooks N at a time, each in its own kernel"
    )
    parser.add_argument(
        "--report-dir",
        type=Path,
        metavar="DIR",
        help="several notebooks: keep each one's output notebook, report and log here",
    )
    parser.add_argument("--store", metavar="URL", help="record the sessions in this store (BLITZ_STORE_URL)")
    parser.add_argument(
        "--replay",
        action="store_true",
        help="replay the saved agent cells' tool calls (no model call); exit 5 when a result changed",
    )
    parser.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a papermill parameter (numbers, True/False/None are converted, as papermill's -p does)",
    )
    parser.add_argument("--model", help="model for the agent cells (BLITZ_MODEL): litellm name or scripted:PATH")
    parser.add_argument(
        "--approve",
        choices=["deny", "allow"],
        default="deny",
        help="what mutating tools that would ask get (approval.headless; default deny)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        metavar="USD",
        help="budget in USD for all agent cells (of all the notebooks together, when several run)",
    )
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="write a JSON report of every agent turn (several: the summary)"
    )
    parser.add_argument("--cwd", type=Path, help="the kernel's working directory (default: the notebook's)")
    parser.add_argument("--kernel", help="kernel name (default: the notebook's)")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="per-cell execution timeout (nbclient)")
    return parser


def parameter_value(text: str) -> Any:
    """A `-p` value the way papermill's own CLI reads one: bool/None, int, float, else str."""
    words: dict[str, Any] = {"True": True, "False": False, "None": None}
    if text in words:
        return words[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


# -- what a failure means ------------------------------------------------------------------


def classify(ename: str, evalue: str, traceback_lines: list[str]) -> tuple[Outcome, str]:
    """The outcome of a failed cell and its headline: the `Blitz …` line a failing `%%blitz`
    cell shows, else `ENAME: EVALUE`."""
    text = _ANSI.sub("", "\n".join(traceback_lines))
    first_line = evalue.strip().split("\n", 1)[0]
    headline = f"{ename}: {first_line}" if first_line else ename
    stopped = _STOPPED.search(text)
    if stopped is not None:
        line_start = text.rfind("\n", 0, stopped.start()) + 1
        headline = text[line_start:].split("\n", 1)[0].strip()
        reason = stopped.group(1)
        if reason in LIMIT_STOPS:
            return "limit", headline
        if reason == "blocked":
            return "blocked", headline
    return "cell_failed", headline


# -- progress in the terminal ---------------------------------------------------------------


class Progress:
    """One line per code cell as it starts, its agent turn's lines as they come, and how it
    ended; hooked into papermill's execution manager (`watch`) and stdout stream (`write`)."""

    def __init__(self, out: TextIO, redactor: Redactor | None = None, *, injected_by_run: bool = False) -> None:
        self.out = out
        self.redactor = redactor or Redactor()
        self._total = 0
        self._agent_cell = False
        self._partial = ""
        self._injected_by_run = injected_by_run
        self._numbers: list[int | None] = []

    def watch(self, manager: Any) -> None:
        self._total = sum(1 for c in manager.nb.cells if c.get("cell_type") == "code")
        # papermill counts the cell it injects; `[cell N]` counts the notebook as given
        self._numbers = source_indices(list(manager.nb.cells), injected_by_run=self._injected_by_run)
        start, complete = manager.cell_start, manager.cell_complete

        def cell_start(cell: Any, cell_index: int | None = None, **kwargs: Any) -> Any:
            outcome = start(cell, cell_index, **kwargs)
            self.cell_started(cell, self._number(cell_index))
            return outcome

        def cell_complete(cell: Any, cell_index: int | None = None, **kwargs: Any) -> Any:
            outcome = complete(cell, cell_index, **kwargs)
            self.cell_completed(cell)
            return outcome

        manager.cell_start, manager.cell_complete = cell_start, cell_complete

    def _number(self, cell_index: int | None) -> int | None:
        in_range = cell_index is not None and 0 <= cell_index < len(self._numbers)
        return self._numbers[cell_index] if in_range and cell_index is not None else cell_index

    def cell_started(self, cell: Any, index: int | None) -> None:
        if cell.get("cell_type") != "code":
            self._agent_cell = False
            return
        if index is None and INJECTED_TAG in (cell.get("metadata", {}).get("tags") or []):
            self._agent_cell = False
            self._print(f"[parameters] {shorten(' '.join(str(cell.get('source', '')).split()), 100)}")
            return
        source = str(cell.get("source", ""))
        self._agent_cell = source.lstrip().startswith("%%blitz")
        lines = [line.strip() for line in source.splitlines() if line.strip()]
        if self._agent_cell and len(lines) > 1:
            first = f"{lines[0]} · {' '.join(lines[1:])}"
        else:
            first = lines[0] if lines else "(empty)"
        self._print(f"[cell {index}] {shorten(first, 100)}")

    def cell_completed(self, cell: Any) -> None:
        if cell.get("cell_type") != "code":
            return
        self._flush_partial()
        meta = cell.get("metadata", {}).get("papermill", {})
        duration = meta.get("duration")
        took = f" {duration:.1f} s" if isinstance(duration, int | float) else ""
        if meta.get("exception"):
            error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
            _, headline = (
                classify(error.get("ename", ""), error.get("evalue", ""), error.get("traceback", []))
                if error
                else ("", "failed")
            )
            self._print(f"    ✗{took} {shorten(headline, 160)}")
        else:
            self._print(f"    ✓{took}")
        self._agent_cell = False

    # papermill writes the cells' stdout here (its `stdout_file`), as the outputs arrive
    def write(self, text: str) -> int:
        if not self._agent_cell:
            return len(text)
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._turn_line(line)
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def _flush_partial(self) -> None:
        if self._partial and self._agent_cell:
            self._turn_line(self._partial)
        self._partial = ""

    def _turn_line(self, line: str) -> None:
        if line.strip().startswith(TURN_LINE_MARKS):
            self._print(f"    {shorten(line.rstrip(), 160)}")

    def note(self, line: str) -> None:
        """A line of the run's own (not a cell's)."""
        self._print(line)

    def _print(self, line: str) -> None:
        print(self.redactor.redact(line), file=self.out, flush=True)


def _progress_engine(progress: Progress) -> str:
    """Register (once per process) a papermill engine that reports progress; returns its name."""
    from papermill.engines import NBClientEngine, papermill_engines

    from .notebook_host import execute_hosted

    class ProgressEngine(NBClientEngine):
        watcher: ClassVar[Progress | None] = None

        @classmethod
        def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, **kwargs: Any) -> Any:
            if cls.watcher is not None:
                cls.watcher.watch(nb_man)
            # the kernel's notebook tools edit papermill's notebook in memory (notebook_host.py)
            return execute_hosted(nb_man, kernel_name, **kwargs)

    ProgressEngine.watcher = progress
    papermill_engines.register("blitz-run", ProgressEngine)
    return "blitz-run"


# -- the run --------------------------------------------------------------------------------


@contextlib.contextmanager
def kernel_environment(values: dict[str, str]) -> Iterator[None]:
    """The kernel papermill starts inherits this process's environment: set, then restore."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def settings_environment(args: argparse.Namespace, notebook: Path) -> dict[str, str]:
    env = {"BLITZ_APPROVAL_HEADLESS": args.approve, "JPY_SESSION_NAME": str(notebook)}
    if args.model:
        env["BLITZ_MODEL"] = args.model
    if args.budget is not None:
        env["BLITZ_BUDGET_USD"] = repr(args.budget)
    if args.store:
        env["BLITZ_STORE_URL"] = args.store
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "True"))
    return env


def _has_injected_cell(notebook: Path) -> bool:
    """Whether the notebook as given already has papermill's injected cell (then `-p` replaces
    it in place, and the cell counts)."""
    import nbformat

    cells = nbformat.read(notebook, as_version=4).cells
    return any(INJECTED_TAG in (c.get("metadata", {}).get("tags") or []) for c in cells)


def _warn_about_own_sessions(notebook: Path, progress: Progress) -> None:
    """`--budget` covers the notebook's session; a cell with `-s NAME` spends its own."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    for index, cell in enumerate(nb.cells):
        first = str(cell.get("source", "")).lstrip().split("\n", 1)[0] + " "
        if cell.get("cell_type") == "code" and SESSION_OPTION.search(first):
            progress.note(f"note: cell {index} uses its own session; --budget applies to each session separately")


def execute(
    args: argparse.Namespace, notebook: Path, output: Path, progress: Progress
) -> tuple[Outcome, FailedCell | None]:
    """Run the notebook with papermill; the outcome and, if one failed, the failing cell."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    parameters = {name: parameter_value(value) for name, value in args.parameter}
    engine = _progress_engine(progress)
    cwd = args.cwd or notebook.parent
    extra: dict[str, Any] = {"execution_timeout": args.timeout} if args.timeout else {}
    from jupyter_client.kernelspec import NoSuchKernel
    from nbclient.exceptions import CellTimeoutError

    with kernel_environment(settings_environment(args, notebook)):
        try:
            papermill.execute_notebook(
                str(notebook),
                str(output),
                parameters=parameters,
                engine_name=engine,
                kernel_name=args.kernel,
                progress_bar=False,
                stdout_file=progress,
                cwd=str(cwd),
                kernel_manager_class="blitz_kernel.cli.local_kernel.LocalKernelManager",  # no TCP warning
                **extra,
            )
        except PapermillExecutionError as error:
            outcome, headline = classify(error.ename, error.evalue, list(error.traceback))
            failed = FailedCell(
                cell_index=error.cell_index,
                execution_count=error.exec_count,
                ename=error.ename,
                evalue=error.evalue,
                headline=headline,
            )
            return outcome, failed
        except NoSuchKernel as error:
            raise UsageProblem(f"no kernel named {error.args[0]!r} (see `jupyter kernelspec list`)") from None
        except CellTimeoutError as error:  # `--timeout`: a limit stopped the run
            first = str(error).strip().split("\n", 1)[0]
            return "limit", FailedCell(ename="CellTimeoutError", evalue=str(error), headline=first)
        except Exception as error:  # the kernel died, or nbclient gave up: the run failed
            headline = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            return "cell_failed", FailedCell(ename=type(error).__name__, evalue=str(error), headline=headline)
    return "ok", None


class _QuietCommTargets(logging.Filter):
    """nbclient logs every comm the kernel opens that it has no handler for (our front-end
    probe and bridge ping, which exist to find out that nobody is there): not news here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "No handler found for comm target" not in record.getMessage()


def run(args: argparse.Namespace, err: TextIO) -> int:
    """`blitz run` with parsed arguments; returns the exit status."""
    import nbformat

    started = time.monotonic()
    try:
        notebook = check(args)
    except UsageProblem as problem:
        print(f"blitz run: {problem}", file=err)
        return EXIT_CODES["usage"]
    injected_by_run = bool(args.parameter) and not _has_injected_cell(notebook)
    redactor = run_redactor(args.cwd or notebook.parent)
    progress = Progress(err, redactor, injected_by_run=injected_by_run)
    _warn_about_own_sessions(notebook, progress)
    logging.getLogger("papermill").addFilter(_QuietCommTargets())
    with tempfile.TemporaryDirectory(prefix="blitz-run-") as scratch:
        output = args.output.expanduser().resolve() if args.output else Path(scratch) / notebook.name
        try:
            outcome, failed = execute(args, notebook, output, progress)
        except UsageProblem as problem:
            print(f"blitz run: {problem}", file=err)
            return EXIT_CODES["usage"]
        executed = nbformat.read(output, as_version=4) if output.exists() else {"cells": []}
    turns = turn_records(executed, injected_by_run=injected_by_run)
    if failed is not None and failed.cell_index is not None:  # papermill's index counts what it injected
        ran = source_indices(executed_cells(executed), injected_by_run=injected_by_run)
        failed.cell_index = ran[failed.cell_index] if failed.cell_index < len(ran) else None
    report = RunReport(
        notebook=str(notebook),
        output=str(output) if args.output else None,
        outcome=outcome,
        exit_code=EXIT_CODES[outcome],
        failed_cell=failed,
        parameters={name: parameter_value(value) for name, value in args.parameter},
        model=args.model,
        approve=args.approve,
        budget_usd=args.budget,
        duration_s=round(time.monotonic() - started, 3),
        turns=turns,
        totals=totals(turns),
    )
    report = redactor.redact_value(report)
    if args.report:
        try:
            args.report.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            print(f"blitz run: cannot write the report {args.report}: {error.strerror or error}", file=err)
    summed = report.totals
    failed = report.failed_cell
    line = (
        f"blitz run: {outcome} (exit {report.exit_code}) · {summed.turns} agent turn(s), "
        f"{summed.tool_calls} tool call(s), {summed.usage.describe()}"
        + (f" · stopped{_at(failed)}: {failed.headline}" if failed else "")
    )
    print(redactor.redact(line), file=err)
    return report.exit_code


def _at(failed: FailedCell) -> str:
    return f" at cell {failed.cell_index}" if failed.cell_index is not None else ""


def main(argv: list[str] | None = None, err: TextIO | None = None) -> int:
    """Entry point of `blitz run` and `python -m blitz_kernel run`."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse printed the usage; its status is already 2
        return int(exit_.code or 0)
    if args.replay:
        return replay(args, err or sys.stderr)
    if len(args.notebooks) > 1 or args.jobs is not None or args.report_dir is not None:
        from .fanout import run_many

        return run_many(args, err or sys.stderr)
    args.notebook = args.notebooks[0]
    return run(args, err or sys.stderr)


def replay(args: argparse.Namespace, err: TextIO) -> int:
    """`blitz run --replay NOTEBOOK` (cli/replay_run.py), on this module's papermill run."""
    from .replay_run import run_replay

    if len(args.notebooks) > 1 or args.jobs is not None or args.report_dir is not None:
        print("blitz run: --replay takes one notebook (no -j, no --report-dir)", file=err)
        return EXIT_CODES["usage"]
    args.notebook = args.notebooks[0]
    logging.getLogger("papermill").addFilter(_QuietCommTargets())
    return run_replay(args, err, execute, Progress(err, run_redactor(args.cwd or args.notebook.parent)))
