"""A turn that runs notebook cells, undone: the cells' outputs, execution counts and `blitz`
metadata come back as they were, and the variables the cells rebound get their old objects.

The .ipynb on disk is the notebook (no front end), the tools are real, the model scripted."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import ToolResultMessage
from tests.helpers.workspaces import scripted_workspace

from .conftest import call, tool_step


@dataclass
class NamespaceKernel:
    user_ns: dict[str, Any] = field(default_factory=dict)
    hidden_names: dict[str, Any] = field(default_factory=dict)
    notebook: Any = None


def write_notebook(path: Path) -> list[dict[str, Any]]:
    cells = [
        {
            "cell_type": "code",
            "id": "load",
            "metadata": {},
            "execution_count": 3,
            "source": "total = 10",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "old output\n"}],
        }
    ]
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    return json.loads(path.read_text())["cells"]


async def test_undo_puts_back_a_run_cells_outputs_and_the_variables_it_rebound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = tmp_path / "analysis.ipynb"
    original = write_notebook(notebook)
    monkeypatch.chdir(tmp_path)
    kept = [1, 2]
    kernel = NamespaceKernel(user_ns={"__session__": str(notebook), "total": kept})
    workspace = scripted_workspace(
        tmp_path,
        [
            tool_step(call("notebook_run", cell=0)),
            tool_step(
                call("notebook_edit", action="insert", index=1, source="double = total * 2\nprint(double)", run=True)
            ),
            {"text": "ok"},
        ],
        kernel=kernel,
    )[0]
    result = await workspace.run("run the notebook", approve="allow")
    assert result.undoable
    outputs = [
        m.output or m.error or "" for m in workspace.session("default").history if isinstance(m, ToolResultMessage)
    ]
    assert "namespace: rebound total (list len 2 → int)" in outputs[0]
    assert "namespace: created double" in outputs[1] and "stdout:\n20" in outputs[1]
    ran = json.loads(notebook.read_text())["cells"]
    assert ran[0]["outputs"] == [] and ran[0]["metadata"]["blitz"]["turn"] == 0
    assert ran[1]["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "20\n"}]

    report = await workspace.undo("default")
    assert json.loads(notebook.read_text())["cells"] == original
    assert kernel.user_ns["total"] is kept and "double" not in kernel.user_ns
    assert report.cells == [
        "restored the outputs of cell 1 (id " + ran[1]["id"] + ")",
        "removed cell 1 (id " + ran[1]["id"] + ")",
        "restored the outputs of cell 0 (id load)",
    ]


async def test_review_lists_a_run_cell_and_its_variable_and_reverts_the_run_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook = tmp_path / "analysis.ipynb"
    original = write_notebook(notebook)
    monkeypatch.chdir(tmp_path)
    kernel = NamespaceKernel(user_ns={"__session__": str(notebook), "total": [1, 2]})
    workspace = scripted_workspace(
        tmp_path,
        [
            tool_step(call("notebook_run", cell=0)),
            tool_step(call("write_file", path="notes.md", content="ran it\n")),
            {"text": "ok"},
        ],
        kernel=kernel,
    )[0]
    await workspace.run("run the first cell and take a note", approve="allow")
    listed = workspace.changes(session="default")
    summaries = {change.id: change.summary() if hasattr(change, "summary") else None for change in listed.changes}
    kinds = sorted(change.kind for change in listed.changes)
    assert kinds == ["cell", "file", "variable"], summaries
    [cell] = [change for change in listed.changes if change.kind == "cell"]
    assert cell.action == "run" and cell.outputs_changed and cell.status == "pending"

    report = await workspace.revert([cell.id], session="default")
    assert json.loads(notebook.read_text())["cells"] == original  # the run's outputs are gone
    assert (tmp_path / "notes.md").read_text() == "ran it\n"  # the other change stays
    again = {change.kind: change.status for change in workspace.changes(session="default").changes}
    assert again["cell"] == "reverted" and again["file"] == "pending"
    assert report is not None
