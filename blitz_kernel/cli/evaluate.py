"""`blitz eval PATH… [--models M1,M2] [-j N] [--budget USD] [--report FILE] [--html FILE]`: a
folder of agent notebooks as a scored eval, each notebook run once per model.

Each run is a `blitz run` worker (cli/fanout.py: its own kernel, the shared budget), on a copy
of the notebook whose assertion cells — code cells after the last `%%blitz` cell that hold an
`assert` — are tagged `raises-exception`, so one failing assertion does not hide the next. A
run is scored from its report and its output notebook: stop reasons, cost, time, model calls,
tool errors, and each assertion by name (its first `#` comment line, else `cell N`). Output: a
table in the terminal (notebook × model), a JSON report and a self-contained HTML page linking
each run's output notebook. Exit status 0 when every assertion held (docs/eval.md).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import BaseModel, Field, ValidationError

from .checks import UsageProblem, check_notebook, check_options, check_writable, run_redactor
from .fanout import Fanout, Job, common_options, unique_names
from .report import EXIT_CODES, RunReport, source_indices
from .summary import NotebookRun, SharedBudget

ASSERT = re.compile(r"^\s*assert\b", re.MULTILINE)
CONTINUE_TAG = "raises-exception"
"""nbclient's tag for a cell that may raise: the run goes on to the next cell."""
AssertionStatus = Literal["passed", "failed", "not_run"]


class AssertionResult(BaseModel):
    name: str
    cell_index: int
    """The cell's position in the notebook as given, counting from 0 over all cells."""
    status: AssertionStatus
    error: str = ""


class EvalRun(BaseModel):
    """One notebook with one model, scored."""

    notebook: str
    model: str | None
    name: str
    verdict: Literal["passed", "failed", "stopped"]
    """passed: every assertion held; failed: one did not; stopped: the run ended before them."""
    outcome: str
    exit_code: int
    headline: str = ""
    stop_reasons: dict[str, int] = Field(default_factory=dict)
    cost_usd: float = 0.0
    priced: bool = True
    duration_s: float = 0.0
    model_calls: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    assertions: list[AssertionResult] = Field(default_factory=list)
    output: str | None = None


class EvalReport(BaseModel):
    """What `blitz eval --report FILE` writes."""

    kind: Literal["eval"] = "eval"
    models: list[str | None]
    notebooks: list[str]
    exit_code: int
    budget: SharedBudget | None = None
    runs: list[EvalRun]


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"{prog} eval",
        description="Run each notebook once per model and score it: stop reason, cost, time, model calls, tool "
        "errors and the notebook's own assert cells after its agent cells. Exit status: 0 every assertion held, "
        "1 one failed or a run stopped before its assertions, 2 bad usage.",
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="notebooks, or folders of notebooks")
    parser.add_argument("--models", help="comma-separated models (default: each notebook's own)")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="runs at a time (default 1)")
    parser.add_argument("--budget", type=float, metavar="USD", help="one budget for all the runs together")
    parser.add_argument("--report", type=Path, metavar="FILE", help="write the JSON report here")
    parser.add_argument("--html", type=Path, metavar="FILE", help="write a self-contained HTML report here")
    parser.add_argument("--out-dir", type=Path, metavar="DIR", help="keep each run's output notebook here")
    parser.add_argument("--approve", choices=["deny", "allow"], default="deny", help="approval.headless")
    parser.add_argument("--timeout", type=float, metavar="SECONDS", help="per-cell execution timeout")
    return parser


def notebooks_in(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for given in paths:
        path = given.expanduser().resolve()
        if path.is_dir():
            found += sorted(p for p in path.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
        elif path.is_file() and path.suffix == ".ipynb":
            found.append(path)
        elif path.is_file():
            raise UsageProblem(f"{given} is not a .ipynb notebook")
        else:
            raise UsageProblem(f"no notebook or folder at {given}")
    if not found:
        raise UsageProblem("no notebooks found in " + ", ".join(str(p) for p in paths))
    return list(dict.fromkeys(found))


def model_list(text: str | None) -> list[str | None]:
    if text is None:
        return [None]
    models = [m.strip() for m in text.split(",")]
    if not all(models):
        raise UsageProblem(f"--models: an empty model name in {text!r}; give M1,M2")
    if len(set(models)) != len(models):
        raise UsageProblem(f"--models names a model twice: {text!r}")
    return list(models)


def check(args: argparse.Namespace) -> tuple[list[Path], list[str | None]]:
    if not 1 <= args.jobs <= 64:
        raise UsageProblem(f"-j must be a whole number from 1 to 64, got {args.jobs}")
    args.parameter, args.store, args.cwd, args.kernel = [], None, None, None
    check_options(args)
    for option, path in (("--report", args.report), ("--html", args.html)):
        if path is not None:
            check_writable(option, path.expanduser())
    if args.out_dir is not None and args.out_dir.exists() and not args.out_dir.is_dir():
        raise UsageProblem(f"--out-dir {args.out_dir} is a file; give a folder")
    models = model_list(args.models)
    notebooks = notebooks_in(args.paths)
    for notebook in notebooks:
        args.notebook = notebook
        check_notebook(args, notebook)
    return notebooks, models


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def assertion_cells(cells: list[dict[str, Any]]) -> list[int]:
    """Positions of the code cells after the last agent cell that hold an `assert`."""
    agent = [
        i for i, c in enumerate(cells) if c.get("cell_type") == "code" and _source(c).lstrip().startswith("%%blitz")
    ]
    after = agent[-1] + 1 if agent else 0
    return [
        i for i in range(after, len(cells)) if cells[i].get("cell_type") == "code" and ASSERT.search(_source(cells[i]))
    ]


def assertion_name(cell: dict[str, Any], index: int) -> str:
    for line in _source(cell).splitlines():
        if line.strip().startswith("#") and line.strip("# ").strip():
            return line.strip("# ").strip()
    return f"cell {index}"


def eval_copy(notebook: Path, folder: Path, name: str) -> Path:
    """The notebook with its assertion cells tagged to let the run go on past a failing one."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for index in assertion_cells(nb.get("cells", [])):
        tags = nb["cells"][index].setdefault("metadata", {}).setdefault("tags", [])
        if CONTINUE_TAG not in tags:
            tags.append(CONTINUE_TAG)
    copy = folder / f"{name}.ipynb"
    copy.write_text(json.dumps(nb), encoding="utf-8")
    return copy


def score(run: NotebookRun, notebook: Path, model: str | None) -> EvalRun:
    """A run's score, from its report and output notebook."""
    given = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    wanted = {i: assertion_name(given[i], i) for i in assertion_cells(given)}
    results: dict[int, AssertionResult] = {
        i: AssertionResult(name=name, cell_index=i, status="not_run") for i, name in wanted.items()
    }
    tool_errors = 0
    if run.report and Path(run.report).is_file():
        with_calls = RunReport.model_validate_json(Path(run.report).read_bytes())
        tool_errors = sum(1 for t in with_calls.turns for c in t.tool_calls if c.status == "error")
    if run.output and Path(run.output).is_file():
        cells = json.loads(Path(run.output).read_text(encoding="utf-8")).get("cells", [])
        for index, cell in zip(source_indices(cells, injected_by_run=False), cells, strict=True):
            if index not in results:
                continue
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            if errors:
                error = errors[0]
                results[index].status = "failed"
                results[index].error = f"{error.get('ename', '')}: {error.get('evalue', '')}".rstrip(": ")
            elif cell.get("execution_count") is not None:
                results[index].status = "passed"
    assertions = list(results.values())
    if any(a.status == "failed" for a in assertions):
        verdict: Literal["passed", "failed", "stopped"] = "failed"
    elif any(a.status == "not_run" for a in assertions) or run.outcome not in ("ok", "cell_failed"):
        verdict = "stopped"
    else:
        verdict = "passed" if run.outcome == "ok" else "stopped"
    return EvalRun(
        notebook=str(notebook),
        model=model,
        name=run.name,
        verdict=verdict,
        outcome=run.outcome,
        exit_code=run.exit_code,
        headline=run.headline if verdict != "passed" else "",
        stop_reasons=run.stop_reasons,
        cost_usd=round(run.totals.usage.cost_usd, 6),
        priced=run.totals.usage.priced,
        duration_s=run.duration_s,
        model_calls=run.totals.usage.calls,
        tool_calls=run.totals.tool_calls,
        tool_errors=tool_errors,
        assertions=assertions,
        output=run.output,
    )


def cell_text(run: EvalRun) -> str:
    held = sum(1 for a in run.assertions if a.status == "passed")
    mark = {"passed": "✓", "failed": "✗", "stopped": "■"}[run.verdict]
    cost = f"${run.cost_usd:.4f}" if run.priced else "unpriced"
    return f"{mark} {held}/{len(run.assertions)} {cost} {run.duration_s:.1f}s"


def table(report: EvalReport) -> list[str]:
    """notebook × model, then each failed or stopped run's reason."""
    labels = [m or "(notebook's own)" for m in report.models]
    rows = [[Path(nb).stem, *(cell_text(run) for run in report.runs if run.notebook == nb)] for nb in report.notebooks]
    header = ["notebook", *labels]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(row, widths, strict=True)) for row in [header, *rows]]
    for run in report.runs:
        for assertion in run.assertions:
            if assertion.status == "failed":
                lines.append(f"✗ {run.name}: {assertion.name}: {assertion.error}")
        if run.verdict == "stopped":
            lines.append(f"■ {run.name}: stopped ({run.outcome}){': ' + run.headline if run.headline else ''}")
    return lines


def html_page(report: EvalReport, where: Path) -> str:
    """The same table as a page with no outside resources; each cell links its run's output."""
    e = html.escape
    head = "".join(f"<th>{e(m or 'notebook’s own model')}</th>" for m in report.models)
    body = []
    for nb in report.notebooks:
        cells = []
        for run in (r for r in report.runs if r.notebook == nb):
            link = ""
            if run.output:
                target = os.path.relpath(run.output, where.parent)
                link = f' <a href="{e(target)}">output</a>'
            failed = "".join(
                f"<li>{e(a.name)}: {e(a.status)}{(' — ' + e(a.error)) if a.error else ''}</li>" for a in run.assertions
            )
            detail = (
                f"{run.model_calls} model calls, {run.tool_calls} tool calls ({run.tool_errors} errors); "
                f"stop: {e(', '.join(f'{k} {v}' for k, v in sorted(run.stop_reasons.items())) or 'none')}"
            )
            cells.append(
                f'<td class="{run.verdict}"><b>{e(cell_text(run))}</b>{link}<br><small>{detail}</small>'
                f"<ul>{failed}</ul></td>"
            )
        body.append(f"<tr><th>{e(Path(nb).name)}</th>{''.join(cells)}</tr>")
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
        "padding:.5em;vertical-align:top;text-align:left}.passed{background:#e8f5e9}.failed{background:#ffebee}"
        ".stopped{background:#fff8e1}ul{margin:.3em 0;padding-left:1.2em}"
    )
    budget = ""
    if report.budget is not None:
        budget = f"<p>Shared budget: ${report.budget.spent_usd:.4f} of ${report.budget.limit_usd:.2f} spent.</p>"
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>blitz eval</title><style>{style}</style></head>'
        f"<body><h1>blitz eval</h1>{budget}<table><tr><th>notebook</th>{head}</tr>{''.join(body)}</table>"
        f"<p>Exit status {report.exit_code}.</p></body></html>\n"
    )


def run_eval(args: argparse.Namespace, err: TextIO, prog: str) -> int:
    try:
        notebooks, models = check(args)
    except UsageProblem as problem:
        print(f"{prog} eval: {problem}", file=err)
        return EXIT_CODES["usage"]
    pairs = [(nb, model) for nb in notebooks for model in models]
    slug = [re.sub(r"[^\w.-]+", "_", m)[-40:] if m else "" for _, m in pairs]
    names = unique_names([nb for nb, _ in pairs], lambda i: f"@{slug[i]}" if slug[i] else "")
    args.cwd = None
    redactor = run_redactor(Path.cwd())
    with tempfile.TemporaryDirectory(prefix="blitz-eval-") as scratch:
        copies = Path(scratch) / "notebooks"
        copies.mkdir()
        if args.out_dir is not None:
            folder = args.out_dir.expanduser().resolve()
        elif args.html is not None:
            folder = args.html.expanduser().resolve().with_suffix("").with_name(args.html.stem + "_runs")
        else:
            folder = Path(scratch) / "runs"
        folder.mkdir(parents=True, exist_ok=True)
        jobs = []
        for (notebook, model), name in zip(pairs, names, strict=True):
            options = [*common_options(args), "--cwd", str(notebook.parent), *(["--model", model] if model else [])]
            jobs.append(Job(eval_copy(notebook, copies, name), name, options, model))
        fanout = Fanout(jobs, args.jobs, folder, err, redactor)
        if args.budget is not None:
            fanout.share_budget(args.budget, Path(scratch))
        summary = fanout.run()
        runs = [score(run, nb, model) for run, (nb, model) in zip(summary.runs, pairs, strict=True)]
    if args.out_dir is None and args.html is None:
        for run in runs:
            run.output = None
    failed = any(run.verdict != "passed" for run in runs)
    report = EvalReport(
        models=models,
        notebooks=[str(nb) for nb in notebooks],
        exit_code=1 if failed else 0,
        budget=summary.budget,
        runs=runs,
    )
    report = redactor.redact_value(report)
    for line in table(report):
        print(redactor.redact(line), file=err)
    try:
        if args.report is not None:
            args.report.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        if args.html is not None:
            args.html.write_text(html_page(report, args.html.expanduser().resolve()), encoding="utf-8")
    except OSError as error:
        print(f"{prog} eval: cannot write the report: {error.strerror or error}", file=err)
    return report.exit_code


def main(argv: list[str], prog: str = "blitz", err: TextIO | None = None) -> int:
    parser = build_parser(prog)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        return run_eval(args, err or sys.stderr, prog)
    except ValidationError as error:  # a worker's report that cannot be read: not the user's input
        print(f"{prog} eval: a run's report could not be read: {error.errors()[0]['msg']}", file=err or sys.stderr)
        return EXIT_CODES["cell_failed"]
