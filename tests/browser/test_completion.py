"""Blitz inline completion in a real JupyterLab: typing at the end of a line in a code cell
shows the fake model's suggestion as ghost text, while the kernel is busy running a cell (the
server answers, not the kernel); Tab accepts it into the cell. The request the model got holds
the code before the cursor and the cell above, and, asked of the kernel while it is idle, the
names and types of the user's variables (docs/completion.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer, start_server, write_notebook
from .test_fix_action import EXECUTION_COUNTS, NOTEBOOK, SOURCES, load_this_checkouts_labextension, select
from .test_turn_widget import KERNEL_IDLE

SUGGESTION = "groupby('region').sum()"
KERNEL_BUSY = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
  return Boolean(kernel && kernel.status === "busy");
}"""


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = tmp_path_factory.mktemp("completion-lab-home")
    load_this_checkouts_labextension(home)
    (home / ".blitz").mkdir()
    (home / ".blitz" / "config.toml").write_text('[completion]\nmodel = "openai/fake-model"\ndebounce_ms = 100\n')
    server = start_server("lab", workspace, model_server, home)
    yield server
    server.stop()


def test_ghost_text_comes_while_the_kernel_is_busy_and_tab_accepts_it(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
) -> None:
    model_server.reset()
    model_server.enqueue({"text": SUGGESTION})
    write_notebook(workspace / "complete.ipynb", ["import pandas as pd", "import time\ntime.sleep(60)", ""])
    page.goto(lab.url("complete.ipynb") + "&reset")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)

    select(page, 1)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); }")
    page.wait_for_function(KERNEL_BUSY)

    select(page, 2)
    page.evaluate(f"() => {{ ({NOTEBOOK})().mode = 'edit'; }}")
    editor = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".cm-content")
    editor.click()
    page.keyboard.type("df.", delay=30)
    ghost = page.locator(".jp-GhostText")
    expect(ghost).to_contain_text(SUGGESTION)
    assert page.evaluate(KERNEL_BUSY)  # the suggestion came from the server, not the kernel
    page.screenshot(path=str(ARTIFACTS / "lab-inline-completion.png"))

    page.keyboard.press("Tab")
    page.wait_for_function(f"() => ({SOURCES})()[2] === {json.dumps('df.' + SUGGESTION)}")

    [request] = [r for r in model_server.requests if r.path.endswith("/chat/completions")]
    sent = json.dumps(request.body)
    assert "df.<CURSOR>" in sent and "import pandas as pd" in sent
    page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:interrupt')")


def test_an_idle_kernels_variables_reach_the_model(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
) -> None:
    model_server.reset()
    model_server.enqueue({"text": "sum()"})
    define = "%load_ext blitz_kernel\nsales_by_region = {'north': 3, 'south': 4}"
    write_notebook(workspace / "variables.ipynb", [define, ""])
    page.goto(lab.url("variables.ipynb") + "&reset")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)

    select(page, 0)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-cell'); }")
    page.wait_for_function(f"() => ({EXECUTION_COUNTS})()[0] !== null && ({KERNEL_IDLE})()", timeout=60_000)

    select(page, 1)
    page.evaluate(f"() => {{ ({NOTEBOOK})().mode = 'edit'; }}")
    editor = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".cm-content")
    editor.click()
    page.keyboard.type("total = ", delay=30)
    expect(page.locator(".jp-GhostText")).to_contain_text("sum()")

    [request] = [r for r in model_server.requests if r.path.endswith("/chat/completions")]
    assert "sales_by_region: dict" in json.dumps(request.body)
