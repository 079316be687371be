"""`blitz run` of a notebook whose agent cell adds and runs cells: `blitz run` serves the
kernel's notebook tools on papermill's notebook in memory, so the output notebook holds the
agent's cells with their outputs, a cell the agent ran is not run again, a cell it only
inserted is run by papermill in its turn, and the input notebook is left as it was."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from .test_blitz_run import blitz_run, notebook, script

ADDED = "open('runs.log', 'a').write('x')\ntotal = 41 + 1\nprint('total', total)"


def test_the_output_notebook_holds_the_cells_the_agent_added_and_ran(tmp_path: Path) -> None:
    insert = {"action": "insert", "index": 2, "source": ADDED, "run": True}
    later = {"action": "insert", "index": 3, "source": "print('papermill ran me')"}
    script(
        tmp_path / "script.json",
        {"tool_calls": [{"name": "notebook_edit", "arguments": insert}]},
        {"tool_calls": [{"name": "notebook_edit", "arguments": later}]},
        {"tool_calls": [{"name": "notebook_read", "arguments": {"include_outputs": False}}]},
        {"text": "Added two cells."},
    )
    given = notebook(tmp_path / "agent.ipynb", "%load_ext blitz_kernel", "%%blitz\nAdd cells.", "print(total + 1)")
    before = given.read_text()
    out = tmp_path / "out.ipynb"
    done = blitz_run(given, "--model", "scripted:script.json", "--approve", "allow", "-o", out, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert given.read_text() == before
    cells = nbformat.read(out, as_version=4).cells
    assert [c.source for c in cells] == [
        "%load_ext blitz_kernel",
        "%%blitz\nAdd cells.",
        ADDED,
        "print('papermill ran me')",
        "print(total + 1)",
    ]
    added, inserted, last = cells[2], cells[3], cells[4]
    assert [o.get("text") for o in added.outputs] == ["total 42\n"]
    assert added.metadata["blitz"]["ran"] is True and added.execution_count is not None
    assert (tmp_path / "runs.log").read_text() == "x"  # papermill did not run it again
    assert [o.get("text") for o in inserted.outputs] == ["papermill ran me\n"]
    assert inserted.metadata["blitz"]["edited"] is True
    assert [o.get("text") for o in last.outputs] == ["43\n"]
    agent = cells[1]
    reads = [o for o in agent.outputs if "notebook_read" in json.dumps(o)]
    assert reads, "the turn's rendering shows the tool calls"
