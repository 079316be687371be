"""The labextension in a real JupyterLab and Notebook 7: the agent reads the live notebook,
inserts a cell and edits another through the bridge once Allow is clicked, the notebook shows
both (and saves them), the changed cells are highlighted, and the `%%blitz` cell is shown with
Markdown highlighting. Fixtures (servers, Chromium, the fake model) are tests/browser/conftest.py's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import tool_results

from .conftest import ARTIFACTS, JupyterServer, start_server, write_notebook
from .test_turn_widget import KERNEL_IDLE, RUN_ALL, SAVE, output_of

PROMPT = "%%blitz -s bridge\nAdd a cell that prints **x**, then set x to 2 in the second cell."
WATCH_HIGHLIGHTS = """() => {
  window.blitzHighlighted = [];
  const notebook = document.querySelector('.jp-Notebook');
  new MutationObserver(changes => {
    for (const change of changes) {
      const cell = change.target;
      const added = !(change.oldValue || '').split(' ').includes('blitz-mod-changed');
      if (added && cell.classList.contains('blitz-mod-changed')) {
        window.blitzHighlighted.push(cell.querySelector('.cm-content').textContent);
      }
    }
  }).observe(notebook, {attributes: true, attributeFilter: ['class'], attributeOldValue: true, subtree: true});
}"""
CELL_MIMETYPES = "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells.map((c, i) => window.jupyterapp.shell.currentWidget.content.model.cells.get(i).mimeType)"
BOLD_WEIGHT = """(cell) => {
  const spans = Array.from(document.querySelectorAll('.jp-Notebook .jp-Cell')[cell].querySelectorAll('.cm-content span'));
  const bold = spans.find(span => span.textContent === 'x');
  return bold ? getComputedStyle(bold).fontWeight : null;
}"""


def open_notebook(page: Any, server: JupyterServer, name: str) -> None:
    """Open `name` alone: `reset` drops the layout an earlier test left open in this server
    (otherwise the restored notebook may be the current one, and Run All would run it)."""
    page.goto(server.url(name) + ("&reset" if server.kind == "lab" else ""))
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)


def edit(call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "notebook_edit", "arguments": arguments, "id": call_id}]}


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = start_server("lab", workspace, model_server, tmp_path_factory.mktemp("bridge-lab-home"))
    yield server
    server.stop()


def test_the_agent_edits_the_open_notebook_after_allow(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
) -> None:
    model_server.reset()
    model_server.enqueue(
        {"tool_calls": [{"name": "notebook_read", "arguments": {}, "id": "call_read"}]},
        edit("call_insert", action="insert", index=3, source="print(x)"),
        edit("call_replace", action="replace", index=1, source="x = 2"),
        {"text": "Inserted a cell that prints x and set x to 2."},
    )
    write_notebook(workspace / "bridge.ipynb", ["%load_ext blitz_kernel", "x = 1", PROMPT])
    open_notebook(page, lab, "bridge.ipynb")
    page.evaluate(WATCH_HIGHLIGHTS)
    page.evaluate(RUN_ALL)

    cells = page.locator(".jp-Notebook .jp-Cell")
    turn = output_of(page, 2)
    turn.get_by_role("button", name="Allow once", exact=True).click()
    expect(cells).to_have_count(4)
    expect(cells.nth(3)).to_contain_text("print(x)")
    turn.get_by_role("button", name="Allow once", exact=True).click()
    expect(cells.nth(1).locator(".cm-content")).to_have_text("x = 2")
    expect(turn).to_contain_text("Inserted a cell that prints x and set x to 2.")
    page.wait_for_function(KERNEL_IDLE)
    page.screenshot(path=str(ARTIFACTS / "lab-notebook-bridge.png"))

    assert page.evaluate("() => window.blitzHighlighted") == ["print(x)", "x = 2"]
    mimetypes = page.evaluate(CELL_MIMETYPES)
    assert mimetypes[2] == "text/x-ipythongfm"  # the %%blitz cell: Markdown
    assert mimetypes[1] == mimetypes[3] == "text/x-ipython"  # code cells stay Python
    assert page.evaluate(BOLD_WEIGHT, 2) == "700"  # **x** is rendered as Markdown bold

    requests = [r.body for r in model_server.requests]
    [read] = tool_results(requests[1])
    assert read["result"].startswith("notebook bridge.ipynb — 3 cells; live from the open notebook")
    assert "[1] code · execution count 2 · id cell-1\nx = 1" in read["result"]
    assert "[2] code · RUNNING NOW (the %%blitz cell of this turn)" in read["result"]
    assert tool_results(requests[2])[-1]["result"].startswith(
        "inserted a code cell at index 3; the notebook now has 4 cells"
    )
    assert tool_results(requests[3])[-1]["result"].endswith("-x = 1\n+x = 2")

    page.evaluate(SAVE)
    saved = json.loads((workspace / "bridge.ipynb").read_text())
    assert ["".join(cell["source"]) for cell in saved["cells"]] == [
        "%load_ext blitz_kernel",
        "x = 2",
        PROMPT,
        "print(x)",
    ]


def test_a_refused_edit_comes_back_as_an_error(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
) -> None:
    model_server.reset()
    model_server.enqueue(
        edit("call_delete", action="delete", index=1),
        {"text": "I may not delete the running cell."},
    )
    write_notebook(
        workspace / "refuse.ipynb", ["%load_ext blitz_kernel", "%%blitz -s refuse --approve allow\nDelete yourself."]
    )
    open_notebook(page, lab, "refuse.ipynb")
    page.evaluate(RUN_ALL)
    expect(output_of(page, 1)).to_contain_text("I may not delete the running cell.")
    assert tool_results(model_server.requests[1].body) == [
        {"error": "delete_cell failed in the notebook: cannot delete cell 1: it is the running %%blitz cell"}
    ]
    expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(2)


@pytest.fixture(scope="module")
def notebook7(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = start_server("notebook", workspace, model_server, tmp_path_factory.mktemp("bridge-nb7-home"))
    yield server
    server.stop()


def test_notebook_7_reads_the_live_notebook(
    page: Any, notebook7: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
) -> None:
    model_server.reset()
    model_server.enqueue(
        {"tool_calls": [{"name": "notebook_read", "arguments": {"cells": [0]}, "id": "call_read"}]},
        {"text": "The first cell loads the extension."},
    )
    write_notebook(
        workspace / "nb7-bridge.ipynb", ["%load_ext blitz_kernel", "%%blitz -s nb7\nWhat does the first cell do?"]
    )
    open_notebook(page, notebook7, "nb7-bridge.ipynb")
    page.evaluate(RUN_ALL)
    expect(output_of(page, 1)).to_contain_text("The first cell loads the extension.")
    [read] = tool_results(model_server.requests[1].body)
    assert read["result"].startswith("notebook nb7-bridge.ipynb — 2 cells; live from the open notebook")
    assert page.evaluate(CELL_MIMETYPES)[1] == "text/x-ipythongfm"
