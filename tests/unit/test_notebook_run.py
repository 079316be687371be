"""notebook_run and notebook_edit(run=true), without a kernel: the .ipynb on disk, and a front
end stand-in that answers `set_outputs` as the extension does. The kernel tests
(tests/kernel/test_notebook_run.py) run the same tool in a real ipykernel."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.tools import builtin_tools
from blitz_kernel.tools.cell_run import DisplaySink
from blitz_kernel.tools.notebook import notebook_read
from blitz_kernel.tools.notebook_run import notebook_edit, notebook_run
from blitz_kernel.tools.registry import Tool, ToolContext, ToolError, ToolOutput


@dataclass
class CellKernel:
    """A kernel context with the CellHost methods, the way the IPython one behaves."""

    user_ns: dict[str, Any] = field(default_factory=dict)
    hidden_names: dict[str, Any] = field(default_factory=dict)
    notebook: Any = None
    count: int = 5
    history: dict[int, tuple[str | None, str]] = field(default_factory=dict)

    def transform_source(self, source: str) -> str:
        return source

    @contextlib.contextmanager
    def cell_displays(self, sink: DisplaySink, clear: Callable[[], None]) -> Iterator[None]:
        self.user_ns["display"] = lambda value, display_id=None, update=False: sink(
            {"text/plain": repr(value)}, {}, display_id=display_id, update=update
        )
        self.user_ns["clear_output"] = clear
        try:
            yield
        finally:
            del self.user_ns["display"]

    def rich_result(self, value: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return {"text/plain": repr(value)}, {}

    def error_lines(self, error: BaseException) -> list[str]:
        return []

    def take_execution_count(self, source: str, cell_id: str | None = None) -> int:
        self.count += 1
        self.history[self.count] = (cell_id, source)
        return self.count

    def executed_cell(self, count: int) -> tuple[str | None, str] | None:
        return self.history.get(count)


def write_notebook(path: Path, sources: list[str]) -> None:
    cells: list[dict[str, Any]] = [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "source": s, "outputs": []}
        for i, s in enumerate(sources)
    ]
    cells.insert(0, {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# Title"})
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))


@pytest.fixture
def on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, ToolContext]:
    path = tmp_path / "nb.ipynb"
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    kernel = CellKernel()
    return path, ToolContext(workspace=tmp_path, kernel=kernel, session="s1")


async def use(tool: Tool, ctx: ToolContext, **arguments: Any) -> Any:
    return await tool.func(tool.parse_arguments(json.dumps(arguments)), ctx)


def cells_of(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text())["cells"])


def test_the_tool_is_mutating_and_its_arguments_are_checked() -> None:
    tools = {t.name: t for t in builtin_tools()}
    run = tools["notebook_run"]
    assert run.kind.value == "mutating" and run.presentation.preview_kind == "code"
    assert set(run.spec().parameters["properties"]) == {"cell", "start", "end", "timeout_s"}
    for bad, message in [
        ({}, "give either `cell`"),
        ({"cell": 1, "start": 0, "end": 1}, "give either `cell`"),
        ({"start": 1}, "needs both"),
        ({"start": 3, "end": 1}, "before `start`"),
    ]:
        with pytest.raises(ToolError, match=message):
            run.parse_arguments(json.dumps(bad))


async def test_a_cell_runs_in_the_namespace_and_its_outputs_go_into_the_file(
    on_disk: tuple[Path, ToolContext],
) -> None:
    path, ctx = on_disk
    write_notebook(path, ["total = 40 + 2\nprint('total is', total)\ndisplay([1, 2])\ntotal * 2"])
    text = await use(notebook_run, ctx, cell=1)
    assert ctx.kernel is not None and ctx.kernel.user_ns["total"] == 42
    cell = cells_of(path)[1]
    assert cell["execution_count"] == 6
    assert cell["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "total is 42\n"},
        {"output_type": "display_data", "data": {"text/plain": "[1, 2]"}, "metadata": {}},
        {"output_type": "execute_result", "execution_count": 6, "data": {"text/plain": "84"}, "metadata": {}},
    ]
    assert cell["metadata"]["blitz"] == {"session": "s1", "turn": None, "ran": True}
    assert "cell 1 · id c0 · execution count 6" in text
    assert "stdout:\ntotal is 42" in text and "result:\n84" in text
    assert "written into the .ipynb file on disk" in text


async def test_a_range_stops_at_the_first_error_with_its_line(on_disk: tuple[Path, ToolContext]) -> None:
    path, ctx = on_disk
    write_notebook(path, ["a = 1", "b = a + 1\nprint(missing)", "c = 3"])
    with pytest.raises(ToolError) as raised:
        await use(notebook_run, ctx, start=0, end=3)
    message = str(raised.value)
    assert "cell 0 is a markdown cell: nothing to run" in message
    assert "error: NameError: name 'missing' is not defined" in message
    assert "failing line: line 2: print(missing)" in message
    assert "stopped at cell 2: cells 3..3 were not run" in message
    assert ctx.kernel is not None and "c" not in ctx.kernel.user_ns and ctx.kernel.user_ns["b"] == 2
    cells = cells_of(path)
    assert cells[2]["outputs"][0]["output_type"] == "error" and cells[2]["outputs"][0]["ename"] == "NameError"
    assert cells[3]["outputs"] == [] and cells[3]["execution_count"] is None


async def test_a_cell_past_its_time_limit_ends_with_a_clear_error(on_disk: tuple[Path, ToolContext]) -> None:
    path, ctx = on_disk
    write_notebook(path, ["print('started')\nwhile True:\n    pass"])
    with pytest.raises(ToolError, match="TimeoutError: the cell ran past its time limit"):
        await use(notebook_run, ctx, cell=1, timeout_s=0.3)
    outputs = cells_of(path)[1]["outputs"]
    assert outputs[0]["text"] == "started\n" and outputs[1]["ename"] == "TimeoutError"


async def test_a_figure_becomes_a_cell_output_and_an_image_for_a_model_that_sees(
    on_disk: tuple[Path, ToolContext],
) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    path, ctx = on_disk
    write_notebook(path, ["import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nprint('drawn')"])
    blind = await use(notebook_run, ctx, cell=1)
    assert isinstance(blind, ToolOutput) and blind.images == [] and len(blind.display_images) == 1
    assert "fig-1" in blind.text
    outputs = cells_of(path)[1]["outputs"]
    assert [o["output_type"] for o in outputs] == ["stream", "display_data"]
    assert "image/png" in outputs[1]["data"]
    seeing = await use(notebook_run, ToolContext(workspace=ctx.workspace, kernel=ctx.kernel, vision=True), cell=1)
    assert isinstance(seeing, ToolOutput) and len(seeing.images) == 1


async def test_a_blitz_cell_is_refused(on_disk: tuple[Path, ToolContext]) -> None:
    path, ctx = on_disk
    write_notebook(path, ["%%blitz\nagain"])
    with pytest.raises(ToolError, match="is a %%blitz cell"):
        await use(notebook_run, ctx, cell="c0")


async def test_edit_with_run_inserts_and_runs_in_one_call(on_disk: tuple[Path, ToolContext]) -> None:
    path, ctx = on_disk
    write_notebook(path, ["x = 1"])
    text = await use(notebook_edit, ctx, action="insert", index=2, source="y = 41 + 1\ny", run=True)
    assert "inserted a code cell at index 2" in text and "has not been run" not in text
    assert "result:\n42" in text
    cell = cells_of(path)[2]
    assert cell["source"] == "y = 41 + 1\ny" and cell["execution_count"] == 6
    with pytest.raises(ToolError, match="needs insert or replace"):
        await use(notebook_edit, ctx, action="delete", index=1, run=True)
    assert len(cells_of(path)) == 3


async def test_read_reports_counts_stale_and_failed_cells(on_disk: tuple[Path, ToolContext]) -> None:
    path, ctx = on_disk
    write_notebook(path, ["a = 1", "b = 2", "raise ValueError('no')"])
    await use(notebook_run, ctx, start=1, end=2)
    with pytest.raises(ToolError):
        await use(notebook_run, ctx, cell=3)
    document = json.loads(path.read_text())
    document["cells"][2]["source"] = "b = 3"  # edited since it ran
    yesterday = {"cell_type": "code", "id": "old", "metadata": {}, "execution_count": 7, "outputs": []}
    document["cells"].append({**yesterday, "source": "print('from an earlier kernel')"})
    path.write_text(json.dumps(document))
    text = await use(notebook_read, ctx)
    assert "[4] code · execution count 7 · id old\n" in text  # In[7] here was another cell: not stale
    assert "[1] code · execution count 6 · id c0 · ran by the agent (session s1)" in text
    assert "[2] code · execution count 7 · STALE (edited since it ran)" in text
    assert "[3] code · execution count 8 · FAILED (ValueError)" in text


@dataclass
class LiveNotebook:
    """The extension's side: read_cells and set_outputs on cells kept in nbformat."""

    cells: list[dict[str, Any]]
    requests: list[str] = field(default_factory=list)

    async def request(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(op)
        if op == "read_cells":
            shown = [
                {
                    "index": i,
                    "id": c["id"],
                    "cell_type": c["cell_type"],
                    "source": c["source"],
                    "execution_count": c.get("execution_count"),
                    "running": False,
                    "outputs": [],
                }
                for i, c in enumerate(self.cells)
            ]
            return {"path": "nb.ipynb", "cell_count": len(self.cells), "cells": shown}
        assert op == "set_outputs"
        index = next(i for i, c in enumerate(self.cells) if c["id"] == params["id"])
        cell = self.cells[index]
        before = {
            "index": index,
            "id": cell["id"],
            "previous_outputs": cell.get("outputs", []),
            "previous_execution_count": cell.get("execution_count"),
            "previous_metadata": cell.get("blitz"),
        }
        cell.update(outputs=params["outputs"], execution_count=params["execution_count"], blitz=params["metadata"])
        return before


async def test_with_the_live_notebook_outputs_go_into_the_cell_not_the_file(tmp_path: Path) -> None:
    live = LiveNotebook([{"id": "k", "cell_type": "code", "source": "print('hi')", "execution_count": 2}])
    kernel = CellKernel(notebook=live)
    text = await use(notebook_run, ToolContext(workspace=tmp_path, kernel=kernel), cell=0)
    assert live.requests == ["read_cells", "set_outputs"]
    assert live.cells[0]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
    assert live.cells[0]["execution_count"] == 6
    assert "on disk" not in text and "stdout:\nhi" in text


def test_an_at_cell_reference_says_the_agent_ran_the_cell() -> None:
    from blitz_kernel.notebook.references import _format_cell

    cell = {
        "index": 2,
        "execution_count": 7,
        "source": "x = 1",
        "outputs": [],
        "blitz": {"session": "s1", "turn": 3, "ran": True},
    }
    assert _format_cell(cell, "live from the open notebook").splitlines()[0] == (
        "In[7] (cell 2 of the notebook), live from the open notebook; ran by the agent (session s1, turn 3)"
    )


async def test_updated_and_cleared_displays_keep_only_what_the_cell_shows_last(
    on_disk: tuple[Path, ToolContext],
) -> None:
    path, ctx = on_disk
    source = (
        "print('gone')\nclear_output()\ndisplay(1, display_id='p')\ndisplay(2)\ndisplay(3, display_id='p', update=True)"
    )
    write_notebook(path, [source])
    await use(notebook_run, ctx, cell=1)
    assert [o["data"]["text/plain"] for o in cells_of(path)[1]["outputs"]] == ["3", "2"]
