"""The JSON report of a `blitz run`: every agent turn of the executed notebook, and totals.

It is read from the executed notebook itself, not from the kernel: each `%%blitz` cell leaves
a turn record in its output metadata under `blitz` (notebook/widgets/static.py `turn_record`;
notebook/render.py attaches it in plain mode), so the report says exactly what the saved
notebook says, and a report can be made again later from any executed notebook.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..core.usage import UsageTotals

Outcome = Literal["ok", "cell_failed", "usage", "limit", "blocked"]
EXIT_CODES: dict[Outcome, int] = {"ok": 0, "cell_failed": 1, "usage": 2, "limit": 3, "blocked": 4}
"""What `blitz run` exits with (docs/blitz-run.md)."""

ERROR_NOTE_TAG = "papermill-error-cell-tag"
"""papermill's tag on the notes it adds to a failed run's output (at the top, before the cell)."""
INJECTED_TAG = "injected-parameters"
"""papermill's tag on the cell holding the `-p` parameters, added after the `parameters` cell."""

CELL_NUMBERING = (
    "the cell's position in the notebook as given, counting from 0 over all cells (Markdown "
    "included), as nbformat's `nb.cells[i]` does; the cells papermill adds (injected "
    "parameters, error notes) are not counted. `blitz run` prints the same number as `[cell N]`."
)


class ToolCallRecord(BaseModel):
    """One tool call of a turn, as its record keeps it (arguments and result shortened)."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    status: str = ""
    """How the call ended: done, error, denied, cancelled, blocked."""
    decision: str | None = None
    """Who allowed or denied it and how (policy, headless rule, a person), when it needed one."""
    result: str = ""


class TurnReport(BaseModel):
    """One agent turn: a `%%blitz` cell runs one, or more with follow-ups."""

    cell_index: int = Field(description=CELL_NUMBERING)
    execution_count: int | None = None
    session: str = ""
    model: str = ""
    prompt: str = ""
    stop_reason: str | None = None
    error: str | None = None
    text: str = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    usage: UsageTotals = Field(default_factory=UsageTotals)
    elapsed_s: float = 0.0


class FailedCell(BaseModel):
    """The cell that stopped the run (its index is unknown when the kernel died or timed out)."""

    cell_index: int | None = Field(default=None, description=CELL_NUMBERING)
    execution_count: int | None = None
    ename: str = ""
    evalue: str = ""
    headline: str = ""
    """The error's first line as the notebook shows it, e.g. `Blitz turn stopped (max_cost): …`."""


class Totals(BaseModel):
    turns: int = 0
    tool_calls: int = 0
    usage: UsageTotals = Field(default_factory=UsageTotals)
    """Summed over turns; `priced` is False when any call had no price."""
    elapsed_s: float = 0.0
    """Time spent in agent turns."""


class RunReport(BaseModel):
    """What `--report FILE` writes."""

    notebook: str
    output: str | None = None
    outcome: Outcome
    exit_code: int
    failed_cell: FailedCell | None = None
    parameters: dict[str, Any] = Field(default_factory=dict)
    model: str | None = None
    approve: str = "deny"
    budget_usd: float | None = None
    duration_s: float = 0.0
    turns: list[TurnReport] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)


def source_indices(cells: list[Any], *, injected_by_run: bool) -> list[int | None]:
    """For each cell of a notebook papermill ran, its index in the notebook as given
    (`CELL_NUMBERING`); None for a cell papermill added: an error note, or the injected
    parameters when the run injected them (`injected_by_run`: `-p` was given and the
    notebook had no injected cell of its own, which papermill would have replaced)."""
    indices: list[int | None] = []
    position = 0
    for cell in cells:
        tags = (cell.get("metadata") or {}).get("tags") or []
        if ERROR_NOTE_TAG in tags or (injected_by_run and INJECTED_TAG in tags):
            indices.append(None)
            continue
        indices.append(position)
        position += 1
    return indices


def executed_cells(nb: Any) -> list[Any]:
    """The cells as they ran: the output notebook without papermill's error notes (which it
    adds only after the run stopped), so an index papermill reported points into it."""
    return [c for c in nb.get("cells", []) if ERROR_NOTE_TAG not in ((c.get("metadata") or {}).get("tags") or [])]


def turn_records(nb: Any, *, injected_by_run: bool = False) -> list[TurnReport]:
    """Every turn record in the notebook's outputs, in cell order, numbered as in the notebook
    as given (`CELL_NUMBERING`)."""
    turns: list[TurnReport] = []
    cells = nb.get("cells", [])
    for index, cell in zip(source_indices(cells, injected_by_run=injected_by_run), cells, strict=True):
        if cell.get("cell_type") != "code" or index is None:
            continue
        for output in cell.get("outputs", []):
            record = (output.get("metadata") or {}).get("blitz")
            if isinstance(record, dict):
                turns.append(_turn(index, cell.get("execution_count"), record))
    return turns


def _turn(index: int, count: int | None, record: dict[str, Any]) -> TurnReport:
    return TurnReport(
        cell_index=index,
        execution_count=count,
        session=str(record.get("session") or ""),
        model=str(record.get("model") or ""),
        prompt=str(record.get("prompt") or ""),
        stop_reason=record.get("stop_reason"),
        error=record.get("error"),
        text=str(record.get("text") or ""),
        tool_calls=[ToolCallRecord.model_validate(call) for call in record.get("tool_calls", [])],
        usage=UsageTotals.model_validate(record.get("usage") or {}),
        elapsed_s=float(record.get("elapsed_s") or 0.0),
    )


def totals(turns: list[TurnReport]) -> Totals:
    summed = Totals(turns=len(turns))
    for turn in turns:
        summed.tool_calls += len(turn.tool_calls)
        summed.usage.merge(turn.usage)
        summed.elapsed_s += turn.elapsed_s
    summed.elapsed_s = round(summed.elapsed_s, 3)
    return summed
