"""The newer cards of the turn widget in a real JupyterLab, through Chromium: a sub-agent's turn
nested in its invoke_agent card with its permission request answered in the widget,
the approval card's diff for edit_file, and Undo all putting back a cell the
agent replaced through the notebook bridge. Fixtures are conftest.py's; the model is the fake
server, scripted per test. The last two need the undo engine (Workspace.undo, tool previews)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer, start_server
from .test_turn_widget import KERNEL_IDLE, output_of, run_notebook, write_call


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = start_server("lab", workspace, model_server, tmp_path_factory.mktemp("cards-lab-home"))
    yield server
    server.stop()


def test_a_subagents_request_is_answered_in_its_nested_card(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    agents = workspace / ".blitz" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "fixer.md").write_text("---\nname: fixer\ndescription: fixes\ntools: write_file\n---\nFix things.\n")
    model_server.reset()
    model_server.enqueue(
        {
            "tool_calls": [
                {"name": "invoke_agent", "arguments": {"agent": "fixer", "prompt": "write it"}, "id": "call_1"}
            ]
        },
        {"text": "Writing the *fix* now.", **write_call("fixed.txt", "call_1")},
        {"text": "wrote fixed.txt"},
        {"text": "The fixer wrote **fixed.txt**."},
    )
    run_notebook(page, lab, workspace, "subagent.ipynb", ["%%blitz -s sub\nGet the fixer to write fixed.txt."])
    turn = output_of(page, 1)
    permission = turn.get_by_role("group", name="Permission request", exact=True)
    expect(permission).to_contain_text("fixer asks to run write_file")
    card = turn.locator('details.blitz-tool[data-tool-id="call_1"]')
    expect(card).to_have_attribute("open", "")  # a running sub-agent's card opens by itself
    nested = card.get_by_role("group", name="fixer turn", exact=True)
    expect(nested).to_contain_text("Writing the fix now.")
    expect(nested.locator('details.blitz-tool[data-tool-id="call_1/call_1"]')).to_contain_text("waiting for approval")
    turn.screenshot(path=str(ARTIFACTS / "lab-subagent-permission.png"))
    permission.get_by_role("button", name="Allow once", exact=True).click()
    expect(turn).to_contain_text("The fixer wrote fixed.txt.")
    expect(turn.locator(".blitz-turn")).to_have_count(0)  # the static rendering
    # the static rendering keeps the cards: the sub-agent's call folded inside the invoke_agent one
    outer = turn.locator("details:not(details details) > summary")
    expect(outer).to_have_text([re.compile(r'^⚙ invoke_agent\(agent="fixer".*✓')])
    inner = turn.locator("details details > summary")
    expect(inner).to_have_text([re.compile(r'^⚙ write_file\(path="fixed.txt".*✓')])
    expect(turn.locator("details details")).not_to_have_attribute("open", "")  # folded
    expect(turn.locator("details").first).to_contain_text("» fixer: Writing the fix now.")
    page.wait_for_function(KERNEL_IDLE)
    assert (workspace / "fixed.txt").read_text() == "hi"
    page.screenshot(path=str(ARTIFACTS / "lab-subagent-static.png"))


def test_the_approval_card_shows_the_edit_as_a_diff(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    (workspace / "calc.py").write_text("rate = 1\nprint(rate)\n")
    model_server.reset()
    model_server.enqueue(
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "id": "call_e",
                    "arguments": {"path": "calc.py", "old": "rate = 1", "new": "rate = 2  # <b>raised</b>"},
                }
            ]
        },
        {"text": "Raised the rate."},
    )
    run_notebook(page, lab, workspace, "diff.ipynb", ["%%blitz -s diff\nRaise the rate."])
    turn = output_of(page, 1)
    preview = turn.get_by_role("group", name="Permission request", exact=True).locator("pre.blitz-preview-diff")
    expect(preview.locator(".blitz-diff-del")).to_have_text(["-rate = 1"])
    expect(preview.locator(".blitz-diff-add")).to_have_text(["+rate = 2  # <b>raised</b>"])  # text, not HTML
    expect(preview.locator("b")).to_have_count(0)
    turn.screenshot(path=str(ARTIFACTS / "lab-approval-diff.png"))
    turn.get_by_role("button", name="Allow once", exact=True).click()
    expect(turn).to_contain_text("Raised the rate.")
    page.wait_for_function(KERNEL_IDLE)
    assert (workspace / "calc.py").read_text() == "rate = 2  # <b>raised</b>\nprint(rate)\n"


def test_undo_this_turn_puts_back_a_cell_replaced_through_the_bridge(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    model_server.reset()
    model_server.enqueue(
        {
            "tool_calls": [
                {
                    "name": "notebook_edit",
                    "id": "call_r",
                    "arguments": {"action": "replace", "index": 1, "source": "x = 2"},
                }
            ]
        },
        {"text": "Set x to 2."},
    )
    run_notebook(page, lab, workspace, "undo.ipynb", ["x = 1", "%%blitz -s undo --approve allow\nSet x to 2."])
    cells = page.locator(".jp-Notebook .jp-Cell")
    turn = output_of(page, 2)
    expect(turn).to_contain_text("Set x to 2.")
    expect(cells.nth(1).locator(".cm-content")).to_have_text("x = 2")
    page.wait_for_function(KERNEL_IDLE)
    undo = turn.get_by_role("button", name="Undo all", exact=True)
    undo.click()
    expect(cells.nth(1).locator(".cm-content")).to_have_text("x = 1")
    done = turn.get_by_role("button", name="Undone", exact=True)
    expect(done).to_be_disabled()
    expect(turn.get_by_role("status")).to_contain_text("undid turn 1")
    # styled like the widget: its button, and the report as wrapped UI text, not a monospace block
    expect(done).to_have_css("border-radius", "4px")
    report = turn.locator(".blitz-undo-report")
    expect(report).to_have_css("white-space", "pre-wrap")
    assert report.evaluate("node => node.tagName") == "DIV"
    expect(turn).to_contain_text("This turn was undone (")  # the static rendering says so
    turn.screenshot(path=str(ARTIFACTS / "lab-undo-this-turn.png"))
