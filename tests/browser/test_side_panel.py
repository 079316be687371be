"""The Blitz side panel in a real JupyterLab and Chromium (docs/panel.md): a kernel writes two
sessions by running `%%blitz` cells on the scripted model, the panel in the left sidebar lists
them (the kernel holds them), a search finds a word with the match highlighted, the hit opens
the transcript, and "Use in this notebook" switches the notebook's session through its kernel.
The screenshot is kept in tests/browser/artifacts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer, start_server, write_notebook
from .test_turn_widget import KERNEL_IDLE, RUN_ALL, open_notebook, output_of

SHOW_PANEL = "() => window.jupyterapp.shell.activateById('blitz-side-panel')"
CURRENT_SESSION = """async () => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code: '%blitz_session show', silent: false, store_history: false});
  let out = '';
  future.onIOPub = message => { if (message.header.msg_type === 'stream') { out += message.content.text; } };
  await future.done;
  return out;
}"""


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    server = start_server("lab", workspace, model_server, tmp_path_factory.mktemp("panel-home"))
    yield server
    server.stop()


def test_the_panel_lists_searches_and_opens_sessions_a_kernel_wrote(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    model_server.reset()
    model_server.enqueue({"text": "The quarterly revenue table is data.csv."}, {"text": "Hello there."})
    write_notebook(
        workspace / "panel.ipynb",
        [
            "%load_ext blitz_kernel",
            "%%blitz -s finance\nWhich file has the revenue?",
            "%%blitz -s scratch\nSay hello.",
        ],
    )
    open_notebook(page, lab, "panel.ipynb", reset=True)
    page.evaluate(RUN_ALL)
    expect(output_of(page, 2)).to_contain_text("Hello there.", timeout=120_000)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)

    page.evaluate(SHOW_PANEL)
    panel = page.locator("#blitz-side-panel")
    panel.get_by_role("button", name="Refresh", exact=True).click()
    finance = panel.locator('.blitz-panel-session[data-session="finance"]')
    expect(finance).to_contain_text("1 turn")
    expect(finance.locator(".blitz-panel-held")).to_have_text("in use")  # this notebook's kernel holds it
    expect(panel.locator('.blitz-panel-session[data-session="scratch"]')).to_be_visible()
    expect(panel.get_by_role("img", name="Per model")).to_be_visible()

    search = panel.get_by_role("searchbox", name="Search")
    search.fill("quarterly")
    search.press("Enter")
    hit = panel.locator('.blitz-panel-hit[data-session="finance"]').first
    expect(hit.locator("mark")).to_have_text("quarterly")
    expect(panel.locator('.blitz-panel-hit[data-session="scratch"]')).to_have_count(0)

    hit.focus()
    page.keyboard.press("Enter")  # a result is a native button: reachable and opened by keyboard
    transcript = panel.get_by_role("list", name="Transcript of finance")
    expect(transcript).to_contain_text("Which file has the revenue?")
    expect(transcript).to_contain_text("The quarterly revenue table is data.csv.")
    expect(panel.locator(".blitz-panel-budget")).to_contain_text("spent")
    page.screenshot(path=str(ARTIFACTS / "lab-side-panel.png"))

    assert "session 'finance'" not in page.evaluate(CURRENT_SESSION)
    panel.get_by_role("button", name="Use in this notebook", exact=True).click()
    expect(panel.locator(".blitz-panel-status")).to_have_text("This notebook now uses session finance.")
    assert page.evaluate(CURRENT_SESSION).startswith("session 'finance'")  # the kernel switched
    expect(transcript).to_be_visible()  # the opened session stays open

    light = panel.evaluate("node => getComputedStyle(node).backgroundColor")
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_function(
        "light => getComputedStyle(document.getElementById('blitz-side-panel')).backgroundColor !== light", arg=light
    )  # the panel takes the theme's colours
    expect(page.locator("#jupyterlab-splash")).to_have_count(0)  # the theme has finished loading
    page.screenshot(path=str(ARTIFACTS / "lab-side-panel-dark.png"))
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
