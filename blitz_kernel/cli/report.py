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
"""What `blitz run` exits with (README "blitz run")."""


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

    cell_index: int
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

    cell_index: int | None = None
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


def turn_records(nb: Any) -> list[TurnReport]:
    """Every turn record in the notebook's outputs, in cell order."""
    turns: list[TurnReport] = []
    for index, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
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
