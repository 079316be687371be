"""The live turn widget in a real JupyterLab and Notebook 7, driven through Chromium: text
streams in, Allow and Deny are clicked, a steer message and a side question are typed, Stop is
pressed (once, then twice), the saved notebook reopens showing the static rendering, and a plan
is rejected with a reason, then approved and carried out. Each behaviour is a test of its own,
with its own notebook, so one failure does not hide the others; the servers are shared."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from blitz_kernel.engine.turn.modes import go_ahead_prompt
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import last_tool_result as tool_result

from .conftest import ARTIFACTS, FAKE_KEY, JupyterServer, start_server, write_notebook

DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "turn-widget.png"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

KERNEL_IDLE = """() => {
  const app = window.jupyterapp;
  const panel = app && app.shell.currentWidget;
  const session = panel && panel.sessionContext && panel.sessionContext.session;
  const kernel = session && session.kernel;
  return Boolean(kernel && kernel.status === "idle" && panel.content && panel.content.widgets.length > 0);
}"""
RUN_ALL = "() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }"
SAVE = "() => window.jupyterapp.commands.execute('docmanager:save')"


def open_notebook(page: Any, server: JupyterServer, name: str, *, reset: bool = False) -> None:
    """Open `name`; `reset` first empties JupyterLab's saved workspace, which would otherwise
    reopen an earlier test's notebook beside it (and Run All might run that one)."""
    page.goto(server.url(name) + ("&reset" if reset else ""))
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)


def output_of(page: Any, cell: int) -> Any:
    """The output area of the notebook's cell number `cell` (0-based)."""
    return page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea")


def write_call(path: str, call_id: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "hi"}, "id": call_id}]}


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = start_server("lab", workspace, model_server, tmp_path_factory.mktemp("lab-home"))
    yield server
    server.stop()


def run_notebook(page: Any, lab: JupyterServer, workspace: Path, name: str, cells: list[str]) -> None:
    """Write `name` with `cells` (the first loads the extension), open it alone and Run All."""
    write_notebook(workspace / name, ["%load_ext blitz_kernel", *cells])
    open_notebook(page, lab, name, reset=True)
    page.evaluate(RUN_ALL)


def test_a_turn_in_jupyterlab(page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path):
    """Text streams in as Markdown; a steer message and a side question are typed while a
    permission request waits; Allow once, then Deny with a reason; the widget becomes the
    static rendering, and no model text ever becomes HTML."""
    model_server.reset()
    streamed = (
        "I'll write **hello.txt** first and then summarise what changed. The file will hold a short "
        "greeting, so nothing else in the workspace is touched. After that I will check the result and "
        "report back with the exact path, the number of bytes written, and anything unusual."
    )
    answer = 'All done: wrote **hello.txt** and skipped other.txt. <img src=x onerror="window.__blitz_xss=2">'
    model_server.enqueue(
        {"text": streamed, "delay_s": 0.06, **write_call("hello.txt", "call_a")},
        {"text": "I am writing hello.txt."},  # the side question
        write_call("other.txt", "call_b"),
        {"text": answer},
    )
    run_notebook(
        page, lab, workspace, "turn.ipynb", ["%%blitz -s browser\nWrite hello.txt, then tell me what you did."]
    )

    turn = output_of(page, 1)
    expect(turn.locator(".blitz-live")).to_contain_text("I'll write hello.txt")  # shown while it streams
    expect(turn.get_by_role("button", name="Allow once", exact=True)).to_be_visible()
    expect(turn.locator(".blitz-body strong")).to_have_text("hello.txt")  # Markdown, rendered
    expect(turn.locator(".blitz-body")).to_contain_text("and anything unusual.")

    steer = turn.get_by_role("textbox", name="Steer the agent", exact=True)
    steer.fill("use utf-8")
    steer.press("Enter")
    expect(turn.locator(".blitz-steers")).to_contain_text("queued")
    aside = turn.get_by_role("textbox", name="Ask aside", exact=True)
    aside.fill("which file?")
    aside.press("Enter")
    expect(turn.locator(".blitz-asides")).to_contain_text("I am writing hello.txt.")
    turn.screenshot(path=str(ARTIFACTS / "lab-permission.png"))
    if os.environ.get("BLITZ_DOCS_SCREENSHOT") == "1":  # refresh the README's picture on request only
        DOCS_SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(ARTIFACTS / "lab-permission.png", DOCS_SCREENSHOT)

    turn.get_by_role("button", name="Allow once", exact=True).click()
    expect(turn.locator(".blitz-steers")).to_contain_text("delivered")
    turn.get_by_role("textbox", name="Reason for denying write_file (optional)", exact=True).fill("not that one")
    turn.get_by_role("button", name="Deny", exact=True).click()
    expect(turn).to_contain_text(
        'All done: wrote hello.txt and skipped other.txt. <img src=x onerror="window.__blitz_xss=2">'
    )
    expect(turn.locator(".blitz-turn")).to_have_count(0)  # the widget became the static rendering
    assert page.evaluate("() => window.__blitz_xss") is None  # model text never became HTML
    page.screenshot(path=str(ARTIFACTS / "lab-static.png"))
    page.wait_for_function(KERNEL_IDLE)

    assert (workspace / "hello.txt").read_text() == "hi"
    assert not (workspace / "other.txt").exists()
    requests = [r.body for r in model_server.requests]
    assert [m for m in requests[1]["messages"] if m["role"] == "user"][-1]["content"] == "which file?"
    assert tool_result(requests[2])["message_from_user"] == "use utf-8"
    assert "which file?" not in json.dumps(requests[2]["messages"])
    assert tool_result(requests[3]) == {"error": "write_file was denied: not that one"}


def test_stop_once_denies_the_waiting_request(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    model_server.reset()
    model_server.enqueue(write_call("stop.txt", "call_c"))
    run_notebook(page, lab, workspace, "stop-once.ipynb", ["%%blitz -s browser-stop-once\nWrite stop.txt."])
    stop_once = output_of(page, 1)
    expect(stop_once.get_by_role("button", name="Allow once", exact=True)).to_be_visible()
    stop_once.get_by_role("button", name="Stop", exact=True).click()
    expect(stop_once).to_contain_text("cancelled")
    expect(stop_once.locator(".blitz-turn")).to_have_count(0)
    page.wait_for_function(KERNEL_IDLE)
    assert not (workspace / "stop.txt").exists()


def test_stop_twice_cancels_a_stalled_model_call(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    model_server.reset()
    model_server.enqueue({"fault": "stall", "seconds": 60})
    run_notebook(page, lab, workspace, "stop-twice.ipynb", ["%%blitz -s browser-stop-twice\nTake your time."])
    stop_twice = output_of(page, 1)
    expect(stop_twice.get_by_role("button", name="Stop", exact=True)).to_be_visible()
    model_server.wait_for_requests(1, timeout=30)  # the stalled call is on its way
    stop_twice.get_by_role("button", name="Stop", exact=True).click()
    expect(stop_twice).to_contain_text("press Stop again")
    stop_twice.get_by_role("button", name="Stop", exact=True).click()
    expect(stop_twice).to_contain_text("cancelled", timeout=15_000)
    page.wait_for_function(KERNEL_IDLE)


def test_the_saved_notebook_keeps_the_static_rendering(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    """Saved after the turn: no widget state, the turn record under `blitz` (no key), and a
    reopened notebook shows the answer without "Error displaying widget"."""
    model_server.reset()
    answer = 'Saved: wrote **kept.txt**, skipped gone.txt. <img src=x onerror="window.__blitz_xss=5">'
    model_server.enqueue(write_call("kept.txt", "call_k"), write_call("gone.txt", "call_g"), {"text": answer})
    run_notebook(page, lab, workspace, "saved.ipynb", ["%%blitz -s browser-saved\nWrite kept.txt."])
    turn = output_of(page, 1)
    turn.get_by_role("button", name="Allow once", exact=True).click()
    expect(turn.locator('details.blitz-tool[data-tool-id="call_k"]')).to_have_class(re.compile("blitz-tool-done"))
    turn.get_by_role("button", name="Deny", exact=True).click()  # the second request's
    expect(turn).to_contain_text("Saved: wrote kept.txt, skipped gone.txt.")
    expect(turn.locator(".blitz-turn")).to_have_count(0)  # the live widget shows the answer too: wait for the rendering
    # The cell's last output is the Undo all button, shown after the rendering: save only
    # once the front end holds it (the kernel's status can read idle from a click's comm message
    # while the cell still runs, so an idle kernel alone does not say the outputs are all in).
    expect(turn.get_by_role("button", name="Undo all", exact=True)).to_be_visible()
    page.wait_for_function(KERNEL_IDLE)

    page.evaluate(SAVE)
    saved = json.loads((workspace / "saved.ipynb").read_text())
    outputs = saved["cells"][1]["outputs"]
    # the turn's live widget is gone; only the Undo this turn button (a widget of its own, the
    # turn wrote a file) stays under the static rendering
    widgets = [o for cell in saved["cells"] for o in cell["outputs"] if WIDGET_MIME in o.get("data", {})]
    assert [undo_button_repr(o) for o in widgets] == [True]
    [record] = [o["metadata"]["blitz"] for o in outputs if "blitz" in o.get("metadata", {})]
    assert record["text"] == answer
    assert [c["status"] for c in record["tool_calls"]] == ["done", "denied"]
    assert FAKE_KEY not in json.dumps(saved)

    page.reload()
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    reopened = output_of(page, 1)
    expect(reopened).to_contain_text("Saved: wrote kept.txt, skipped gone.txt.")
    assert page.evaluate("() => window.__blitz_xss") is None
    expect(page.get_by_text("Error displaying widget")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "lab-reopened.png"))


@pytest.fixture(scope="module")
def notebook7(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = start_server("notebook", workspace, model_server, tmp_path_factory.mktemp("nb7-home"))
    yield server
    server.stop()


def test_smoke_in_notebook_7(page: Any, notebook7: JupyterServer, model_server: FakeOpenAIServer, workspace: Path):
    model_server.reset()
    model_server.enqueue(write_call("nb7.txt", "call_n"), {"text": "Done in Notebook 7."})
    write_notebook(workspace / "nb7.ipynb", ["%load_ext blitz_kernel", "%%blitz -s nb7\nWrite nb7.txt."])
    open_notebook(page, notebook7, "nb7.ipynb")
    page.evaluate(RUN_ALL)
    turn = output_of(page, 1)
    turn.get_by_role("button", name="Allow once", exact=True).click()
    expect(turn).to_contain_text("Done in Notebook 7.")
    expect(turn.locator(".blitz-turn")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / "notebook7.png"))
    assert (workspace / "nb7.txt").read_text() == "hi"


def test_plan_review_in_jupyterlab(page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path):
    """Plan review in the page: Reject with a reason, then Approve plan; the carry-out turn starts
    in the same cell and asks before it writes. A plain cell's model HTML stays text."""
    model_server.reset()
    first = "1. **Objective**: write plan.txt\n2. Call `write_file`"
    second = (
        '1. **Objective**: write plan.txt\n2. Call `write_file`\n3. Verify <img src=x onerror="window.__blitz_xss=4">'
    )
    plain = 'Plain <img src=x onerror="window.__blitz_xss=3"> and `List<int>`'
    model_server.enqueue(
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": first}, "id": "call_p1"}]},
        {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": second}, "id": "call_p2"}]},
        write_call("plan.txt", "call_w"),
        {"text": "Carried out: wrote **plan.txt**."},
        {"text": plain},
    )
    write_notebook(
        workspace / "plan.ipynb",
        [
            "%load_ext blitz_kernel",
            "%%blitz -s browser-plan --plan\nWrite plan.txt.",
            "%%blitz -s browser-plain --plain\nSay something.",
        ],
    )
    open_notebook(page, lab, "plan.ipynb", reset=True)
    page.evaluate(RUN_ALL)

    turn = output_of(page, 1)
    review = turn.get_by_role("group", name="Plan review", exact=True)
    expect(review.locator("strong")).to_have_text("Objective")  # the plan, as Markdown
    review.get_by_role("textbox", name="Reason for rejecting", exact=True).fill("say how you verify it")
    review.get_by_role("button", name="Reject", exact=True).click()
    expect(review).to_contain_text("Verify <img src=x")  # the revised plan, in a new review, as text
    expect(turn.locator(".blitz-plan-reason")).to_have_text("say how you verify it")
    turn.screenshot(path=str(ARTIFACTS / "lab-plan-review.png"))
    review.get_by_role("button", name="Approve plan", exact=True).click()

    expect(turn).to_contain_text("Carrying out the approved plan")
    turn.get_by_role("button", name="Allow once", exact=True).click()
    expect(turn).to_contain_text("Carried out: wrote plan.txt.")
    expect(turn.locator(".blitz-turn")).to_have_count(0)  # both turns left static renderings
    expect(turn).to_contain_text("Proposed plan — approved")
    plain_turn = output_of(page, 2)
    expect(plain_turn.locator("code")).to_have_text("List<int>")
    expect(plain_turn).to_contain_text('Plain <img src=x onerror="window.__blitz_xss=3">')
    page.wait_for_function(KERNEL_IDLE)
    assert page.evaluate("() => window.__blitz_xss") is None  # no model text became HTML
    page.screenshot(path=str(ARTIFACTS / "lab-plan-static.png"))

    assert (workspace / "plan.txt").read_text() == "hi"
    requests = [r.body for r in model_server.requests]
    assert tool_result(requests[1]) == {
        "result": "The user rejected the plan: say how you verify it. Revise it (still in plan mode) and call "
        "exit_plan_mode again."
    }
    assert [m for m in requests[2]["messages"] if m["role"] == "user"][-1]["content"] == go_ahead_prompt(second)


PLOT_CODE = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(9, 3))\nax.plot([1, 3, 2])"


def test_a_figure_shows_inside_its_tool_card(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    """run_python's figure appears inside the run_python card while the turn runs (scaled to
    the card), not as an output of its own; the static rendering then shows it as an image
    output, in the page and in the saved notebook."""
    model_server.reset()
    model_server.enqueue(
        {"tool_calls": [{"name": "run_python", "arguments": {"code": PLOT_CODE}, "id": "call_plot"}]},
        write_call("after-plot.txt", "call_after"),  # keeps the turn live while the card is checked
        {"text": "Plotted."},
    )
    write_notebook(workspace / "figure.ipynb", ["%load_ext blitz_kernel", "%%blitz -s browser-figure\nPlot it."])
    open_notebook(page, lab, "figure.ipynb", reset=True)
    page.evaluate(RUN_ALL)

    turn = output_of(page, 1)
    turn.get_by_role("button", name="Allow once", exact=True).click()  # run_python
    expect(turn.get_by_role("group", name="write_file call", exact=True)).to_be_visible()
    card = turn.locator('details.blitz-tool[data-tool-id="call_plot"]')
    image = card.locator("img.blitz-tool-image")
    expect(image).to_have_count(1)
    expect(image).to_be_visible()  # a card with images opens by itself
    expect(image).to_have_attribute("alt", "image 1 of 1 from run_python")
    sizes = image.evaluate(
        "img => ({natural: img.naturalWidth, shown: img.getBoundingClientRect().width,"
        " card: img.closest('details').getBoundingClientRect().width})"
    )
    assert sizes["natural"] > 0 and 0 < sizes["shown"] <= sizes["card"]
    expect(turn.locator(".jp-RenderedImage")).to_have_count(0)  # no separate image output meanwhile
    turn.screenshot(path=str(ARTIFACTS / "lab-figure-card.png"))

    turn.get_by_role("button", name="Allow once", exact=True).click()  # write_file
    expect(turn).to_contain_text("Plotted.")
    expect(turn.locator(".blitz-turn")).to_have_count(0)
    expect(turn.locator(".jp-RenderedImage img")).to_have_count(1)  # the static rendering's image
    page.wait_for_function(KERNEL_IDLE)
    page.evaluate(SAVE)
    saved = json.loads((workspace / "figure.ipynb").read_text())
    outputs = saved["cells"][1]["outputs"]
    kept = [o for o in outputs if not undo_button_repr(o)]  # the turn created variables: undoable
    assert [o["output_type"] for o in kept] == ["display_data", "display_data"]
    assert "blitz" in kept[0]["metadata"] and "image/png" in kept[1]["data"]


def undo_button_repr(output: dict[str, Any]) -> bool:
    """Whether a saved output is the Undo this turn button left under a rendering."""
    data = output.get("data", {})
    return WIDGET_MIME in data and "UndoButton" in "".join(data.get("text/plain", ""))
