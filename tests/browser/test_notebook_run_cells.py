"""A turn in the real JupyterLab inserts cells and runs them: the cell's text output, its
matplotlib plot and its execution count appear in that cell as if the user had run it; an
error in a run cell comes back to the model, which fixes the cell and runs it again; the
saved .ipynb holds what the screen shows. Fixtures are tests/browser/conftest.py's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import tool_results

from .conftest import ARTIFACTS, JupyterServer, start_server, write_notebook
from .test_notebook_bridge import open_notebook
from .test_turn_widget import KERNEL_IDLE, RUN_ALL, SAVE, output_of

PLOT = "import matplotlib.pyplot as plt\nprint('rows', 3)\nplt.plot([1, 3, 2])\nplt.show()"
PROMPT = "%%blitz -s cells --approve allow\nPlot the numbers."


def edit(call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "notebook_edit", "arguments": {**arguments, "run": True}, "id": call_id}]}


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = start_server("lab", workspace, model_server, tmp_path_factory.mktemp("cells-lab-home"))
    yield server
    server.stop()


def test_run_cells_show_their_outputs_plot_and_count_and_an_error_is_fixed(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
) -> None:
    model_server.reset()
    model_server.enqueue(
        edit("call_plot", action="insert", index=2, source=PLOT),
        edit("call_broken", action="insert", index=3, source="print(totl)"),
        edit("call_fixed", action="replace", index=3, source="total = 6\nprint('total', total)"),
        {"text": "Plotted, and fixed the total."},
    )
    write_notebook(workspace / "cells.ipynb", ["%load_ext blitz_kernel", PROMPT])
    open_notebook(page, lab, "cells.ipynb")
    page.evaluate(RUN_ALL)

    cells = page.locator(".jp-Notebook .jp-Cell")
    expect(output_of(page, 1)).to_contain_text("Plotted, and fixed the total.")
    page.wait_for_function(KERNEL_IDLE)
    expect(cells).to_have_count(4)
    plot = output_of(page, 2)
    expect(plot).to_contain_text("rows 3")
    expect(plot.locator("img")).to_have_count(1)
    expect(output_of(page, 3)).to_contain_text("total 6")
    prompts = [cells.nth(i).locator(".jp-InputPrompt").inner_text().strip() for i in (2, 3)]
    counts = [int(p.strip("[]: ")) for p in prompts]
    assert counts[1] > counts[0] > 0, prompts
    page.screenshot(path=str(ARTIFACTS / "lab-notebook-run.png"))

    requests = [r.body for r in model_server.requests]
    assert "stdout:\nrows 3" in tool_results(requests[1])[-1]["result"]
    broken = tool_results(requests[2])[-1]["error"]
    assert "error: NameError: name 'totl' is not defined" in broken
    assert "failing line: line 1: print(totl)" in broken
    fixed = tool_results(requests[3])[-1]["result"]
    assert "stdout:\ntotal 6" in fixed and "namespace: created total" in fixed

    page.evaluate(SAVE)
    saved = json.loads((workspace / "cells.ipynb").read_text())["cells"]
    plotted, total = saved[2], saved[3]
    assert [o["output_type"] for o in plotted["outputs"]] == ["stream", "display_data"]
    assert "image/png" in plotted["outputs"][1]["data"]
    assert [plotted["execution_count"], total["execution_count"]] == counts
    assert [(o["output_type"], "".join(o["text"])) for o in total["outputs"]] == [("stream", "total 6\n")]
    assert plotted["metadata"]["blitz"]["ran"] is True and plotted["metadata"]["blitz"]["session"] == "cells"
