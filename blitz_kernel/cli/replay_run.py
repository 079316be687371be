"""`blitz run --replay NOTEBOOK.ipynb`: replay every agent cell of a saved notebook, unattended,
with no model call, and exit with a status that says whether anything changed.

The notebook runs as `blitz run` runs it (papermill, the same kernel settings), except that each
`%%blitz` cell with a turn record in its saved outputs becomes `%blitz_replay --notebook NB
--index I`: its recorded tool calls run again against today's data, in the state the cells above
left, and the cell's output carries the `ReplayReport`. An agent cell with no record is not run
(no model is called) and is reported. Exit status: 0 every replayed call gave the recorded
result, 5 some call changed or failed now, 1 a cell failed, 2 bad usage (docs/replay.md).
"""

from __future__ import annotations

import argparse
import copy
import json
import shlex
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, Field

from ..engine.turn.replay import ReplayReport
from .checks import UsageProblem, check, run_redactor
from .report import CELL_NUMBERING, EXIT_CODES, FailedCell, Outcome, source_indices

REPLAY_KEY = "blitz_replay"
"""Where `%blitz_replay --notebook` puts its report in the output metadata (notebook/replay_magic.py)."""
CHANGED_EXIT = 5


class ReplayedCell(BaseModel):
    cell_index: int = Field(description=CELL_NUMBERING)
    reports: list[ReplayReport] = Field(default_factory=list)


class ReplayRunReport(BaseModel):
    """What `blitz run --replay --report FILE` writes."""

    kind: str = "replay"
    notebook: str
    outcome: str
    """`same`, `changed`, or a run outcome (`cell_failed`, `usage`)."""
    exit_code: int
    cells: list[ReplayedCell] = Field(default_factory=list)
    not_replayed: list[int] = Field(default_factory=list)
    """Agent cells with no turn record in the saved notebook (not run)."""
    failed_cell: FailedCell | None = None
    duration_s: float = 0.0


Execute = Callable[[argparse.Namespace, Path, Path, Any], tuple[Outcome, FailedCell | None]]


def replay_copy(nb: dict[str, Any], original: Path) -> tuple[dict[str, Any], list[int], list[int]]:
    """The notebook to run: agent cells with a record turned into replays of it, those without
    one into a line saying so. Returns it, the replayed cells and the cells with no record."""
    nb = copy.deepcopy(nb)
    replayed, missing = [], []
    for index, cell in enumerate(nb.get("cells", [])):
        source = "".join(cell.get("source", "")) if isinstance(cell.get("source"), list) else cell.get("source", "")
        if cell.get("cell_type") != "code" or not str(source).lstrip().startswith("%%blitz"):
            continue
        has_record = any(isinstance((o.get("metadata") or {}).get("blitz"), dict) for o in cell.get("outputs", []))
        if has_record:
            cell["source"] = f"%blitz_replay --notebook {shlex.quote(str(original))} --index {index}"
            replayed.append(index)
        else:
            cell["source"] = f"print('cell {index}: no turn record saved, not replayed')"
            missing.append(index)
        cell["outputs"] = []
    return nb, replayed, missing


def run_replay(args: argparse.Namespace, err: TextIO, execute: Execute, progress: Any) -> int:
    """`blitz run --replay` with parsed arguments (`execute` and `progress` are `blitz run`'s)."""
    started = time.monotonic()
    try:
        if args.parameter:
            raise UsageProblem("--replay runs the saved notebook as it is: -p does not apply")
        notebook = check(args)
        saved = json.loads(notebook.read_text(encoding="utf-8"))
    except UsageProblem as problem:
        print(f"blitz run: {problem}", file=err)
        return EXIT_CODES["usage"]
    to_run, replayed, missing = replay_copy(saved, notebook)
    if not replayed:
        print(f"blitz run: {args.notebook} has no agent cell with a saved turn record: nothing to replay", file=err)
        return EXIT_CODES["usage"]
    args.cwd = args.cwd or notebook.parent
    with tempfile.TemporaryDirectory(prefix="blitz-replay-") as scratch:
        source = Path(scratch) / notebook.name
        source.write_text(json.dumps(to_run), encoding="utf-8")
        output = args.output.expanduser().resolve() if args.output else Path(scratch) / f"replayed-{notebook.name}"
        try:
            outcome, failed = execute(args, source, output, progress)
        except UsageProblem as problem:
            print(f"blitz run: {problem}", file=err)
            return EXIT_CODES["usage"]
        ran = json.loads(output.read_text(encoding="utf-8")) if output.exists() else {"cells": []}
    cells = collect(ran, numbered(saved, replayed))
    same = all(report.all_same for cell in cells for report in cell.reports)
    verdict: str
    if outcome != "ok":
        verdict, code = outcome, EXIT_CODES[outcome]
    else:
        verdict, code = ("same", 0) if same else ("changed", CHANGED_EXIT)
    report = ReplayRunReport(
        notebook=str(notebook),
        outcome=verdict,
        exit_code=code,
        cells=cells,
        not_replayed=numbered(saved, missing),
        failed_cell=failed,
        duration_s=round(time.monotonic() - started, 3),
    )
    redactor = run_redactor(args.cwd)
    report = redactor.redact_value(report)
    for line in summary_lines(report):
        print(redactor.redact(line), file=err)
    if args.report:
        try:
            args.report.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            print(f"blitz run: cannot write the report {args.report}: {error.strerror or error}", file=err)
    return code


def collect(ran: dict[str, Any], replayed: list[int]) -> list[ReplayedCell]:
    """The replay reports in the executed copy's outputs, per replayed cell (papermill adds
    cells only at the top when the run failed: those carry no replay)."""
    found: list[list[ReplayReport]] = []
    for cell in ran.get("cells", []):
        reports = [
            ReplayReport.model_validate(o["metadata"][REPLAY_KEY])
            for o in cell.get("outputs", [])
            if isinstance((o.get("metadata") or {}).get(REPLAY_KEY), dict)
        ]
        source = "".join(cell.get("source", "")) if isinstance(cell.get("source"), list) else cell.get("source", "")
        if str(source).startswith("%blitz_replay --notebook"):
            found.append(reports)
    return [ReplayedCell(cell_index=index, reports=reports) for index, reports in zip(replayed, found, strict=False)]


def numbered(nb: dict[str, Any], positions: list[int]) -> list[int]:
    """Positions in the saved file as `blitz run` numbers cells: papermill's error notes (at
    the top of a failed run's output) not counted (`CELL_NUMBERING`)."""
    indices = source_indices(nb.get("cells", []), injected_by_run=False)
    return [index for position in positions if (index := indices[position]) is not None]


def summary_lines(report: ReplayRunReport) -> list[str]:
    lines = []
    for cell in report.cells:
        for replay in cell.reports:
            lines.append(f"cell {cell.cell_index}: {replay.summary()}")
            for call in replay.calls:
                if call.status in ("changed", "failed"):
                    lines.append(f"    {call.tool}: {call.status}")
                    lines.extend(f"      {line}" for line in call.detail.splitlines())
    lines.extend(f"cell {index}: no turn record saved, not replayed" for index in report.not_replayed)
    lines.append(f"blitz run --replay: {report.outcome} (exit {report.exit_code})")
    return lines
