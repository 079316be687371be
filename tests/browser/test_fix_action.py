""" "Ask Blitz to fix" in a real JupyterLab: no action while the kernel lacks blitz_kernel,
the action once it is loaded, a click that inserts `%%blitz` / "Fix the error in @cell:N"
below and selects it without running it, and that cell, run by the user, fixing the failed
code through notebook_edit after Allow. The model is the fake server, scripted per test.

The page loads this checkout's labextension build (`npm run build:prod` puts it in
blitz_kernel/labextension): the server is pointed at a copy of it, ahead of any installed one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer, start_server, write_notebook
from .test_turn_widget import KERNEL_IDLE, output_of

BUILD = Path(__file__).resolve().parents[2] / "blitz_kernel" / "labextension"
FIX = "Ask Blitz to fix"
BROKEN = "total = 10\nprint(total / count)"
FIXED = "count = 2\ntotal = 10\nprint(total / count)"
RUN_ACTIVE_CELL = "() => { window.jupyterapp.commands.execute('notebook:run-cell'); }"
NOTEBOOK = "() => window.jupyterapp.shell.currentWidget.content"
SOURCES = f"() => ({NOTEBOOK})().model.sharedModel.cells.map(c => c.getSource())"
ACTIVE_INDEX = f"() => ({NOTEBOOK})().activeCellIndex"
EXECUTION_COUNTS = f"() => ({NOTEBOOK})().model.sharedModel.cells.map(c => c.execution_count ?? null)"


def load_this_checkouts_labextension(home: Path) -> None:
    """Copy the build where only this server looks first (`LabApp.extra_labextensions_path`)."""
    if not (BUILD / "package.json").exists():
        pytest.fail("the labextension is not built: run `npm run build:prod`")
    extensions = home / "labextensions"
    shutil.copytree(BUILD, extensions / "blitz-kernel")
    config = home / ".jupyter"
    config.mkdir(parents=True, exist_ok=True)
    (config / "jupyter_lab_config.json").write_text(
        json.dumps({"LabApp": {"extra_labextensions_path": [str(extensions)]}})
    )


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = tmp_path_factory.mktemp("fix-lab-home")
    load_this_checkouts_labextension(home)
    server = start_server("lab", workspace, model_server, home)
    yield server
    server.stop()


def select(page: Any, index: int) -> None:
    page.evaluate(f"() => {{ ({NOTEBOOK})().activeCellIndex = {index}; }}")


def test_ask_blitz_to_fix_inserts_a_prompt_that_fixes_the_cell(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
) -> None:
    model_server.reset()
    model_server.enqueue(
        {
            "tool_calls": [
                {
                    "name": "notebook_edit",
                    "id": "call_fix",
                    "arguments": {"action": "replace", "index": 0, "source": FIXED},
                }
            ]
        },
        {"text": "Defined `count` before it is used."},
    )
    write_notebook(workspace / "fix.ipynb", [BROKEN, "%load_ext blitz_kernel"])
    page.goto(lab.url("fix.ipynb") + "&reset")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    cells = page.locator(".jp-Notebook .jp-Cell")
    fix_buttons = page.get_by_role("button", name=FIX, exact=True)

    # The error, while the kernel has no blitz_kernel: nothing could answer, so no action.
    select(page, 0)
    page.evaluate(RUN_ACTIVE_CELL)
    expect(output_of(page, 0)).to_contain_text("NameError")
    page.wait_for_function(KERNEL_IDLE)
    expect(fix_buttons).to_have_count(0)

    # Loading the extension connects the bridge: the failed cell gets the action.
    select(page, 1)
    page.evaluate(RUN_ACTIVE_CELL)
    expect(cells.nth(0).get_by_role("button", name=FIX, exact=True)).to_be_visible()
    expect(fix_buttons).to_have_count(1)
    failed_count = page.evaluate(EXECUTION_COUNTS)[0]
    assert failed_count == 1

    fix_buttons.click()
    expect(cells).to_have_count(3)
    assert page.evaluate(SOURCES) == [BROKEN, "%%blitz\nFix the error in @cell:1", "%load_ext blitz_kernel"]
    assert page.evaluate(ACTIVE_INDEX) == 1
    assert page.evaluate(EXECUTION_COUNTS)[1] is None  # inserted, not run
    assert model_server.requests == []
    page.screenshot(path=str(ARTIFACTS / "lab-ask-blitz-to-fix.png"))

    # The user runs it: the model sees the failed cell, asks to edit it, and Allow applies it.
    page.evaluate(RUN_ACTIVE_CELL)
    output_of(page, 1).get_by_role("button", name="Allow once", exact=True).click()
    expect(output_of(page, 1)).to_contain_text("Defined count before it is used.")
    page.wait_for_function(f"() => ({SOURCES})()[0] === {json.dumps(FIXED)}")
    page.wait_for_function(KERNEL_IDLE)
    page.screenshot(path=str(ARTIFACTS / "lab-ask-blitz-to-fix-done.png"))

    first = model_server.requests[0].body["messages"]
    prompt = [m for m in first if m["role"] == "user"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else json.dumps(prompt)
    assert "[Attachment cell @cell:1]" in prompt
    assert "live from the open notebook" in prompt
    assert "print(total / count)" in prompt
    assert "NameError: name 'count' is not defined" in prompt
    assert prompt.endswith("Fix the error in @cell:1")
    [result] = [json.loads(m["content"]) for m in model_server.requests[1].body["messages"] if m["role"] == "tool"]
    assert result["result"].startswith("replaced the source of cell 0 (code)")
