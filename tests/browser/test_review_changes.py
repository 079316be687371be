"""Review changes in a real JupyterLab, through Chromium: after a turn that edited two files,
the panel lists both with their coloured diffs; Revert puts one back, Keep leaves the other,
and the static rendering under the turn shows each change's status. The model is the fake
server (conftest.py's fixtures)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer, rgb, start_server
from .test_turn_widget import KERNEL_IDLE, output_of, run_notebook


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = start_server("lab", workspace, model_server, tmp_path_factory.mktemp("review-lab-home"))
    yield server
    server.stop()


DOCS_SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "review-changes.png"


def write(path: str, content: str, call_id: str) -> dict[str, Any]:
    return {"name": "write_file", "arguments": {"path": path, "content": content}, "id": call_id}


def test_review_changes_reverts_one_of_two_file_edits_and_keeps_the_other(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path
):
    (workspace / "prices.csv").write_text("item,price\ntea,3\n")
    (workspace / "summary.md").write_text("# Summary\nold\n")
    model_server.reset()
    model_server.enqueue(
        {
            "tool_calls": [
                write("prices.csv", "item,price\ntea,4\n", "call_p"),
                write("summary.md", "# Summary\nnew\n", "call_s"),
            ]
        },
        {"text": "Raised tea and rewrote the summary."},
    )
    run_notebook(page, lab, workspace, "review.ipynb", ["%%blitz -s review --approve allow\nRaise tea; summarise."])
    turn = output_of(page, 1)
    expect(turn).to_contain_text("Raised tea and rewrote the summary.")
    review = turn.get_by_role("button", name="Review changes", exact=True)
    expect(review).to_be_visible()
    expect(turn.get_by_role("button", name="Undo all", exact=True)).to_be_enabled()
    page.wait_for_function(KERNEL_IDLE)
    review.click()

    prices = turn.locator('.blitz-review-change[data-id="1f1"]')
    summary = turn.locator('.blitz-review-change[data-id="1f2"]')
    expect(prices).to_contain_text("file prices.csv +1 −1")
    expect(prices.locator(".blitz-diff-del")).to_have_text(["-tea,3"])
    expect(prices.locator(".blitz-diff-add")).to_have_text(["+tea,4"])
    # the added line on a green tint, the removed one on a red one
    added = rgb(prices.locator(".blitz-diff-add").evaluate("node => getComputedStyle(node).backgroundColor"))
    removed = rgb(prices.locator(".blitz-diff-del").evaluate("node => getComputedStyle(node).backgroundColor"))
    assert added[1] > max(added[0], added[2]) and removed[0] > max(removed[1], removed[2]), (added, removed)
    expect(summary.locator(".blitz-diff-add")).to_have_text(["+new"])
    turn.screenshot(path=str(ARTIFACTS / "lab-review-changes.png"))
    if os.environ.get("BLITZ_DOCS_SCREENSHOT") == "1":  # refresh docs/undo.md's picture on request only
        shutil.copyfile(ARTIFACTS / "lab-review-changes.png", DOCS_SCREENSHOT)

    prices.get_by_role("button", name="Revert", exact=True).click()
    expect(prices).to_have_attribute("data-status", "reverted")
    expect(turn.get_by_role("status")).to_contain_text("reverted 1f1")
    summary.get_by_role("button", name="Keep", exact=True).click()
    expect(summary).to_have_attribute("data-status", "kept")
    expect(summary.get_by_role("button", name="Keep", exact=True)).to_be_disabled()
    expect(prices.get_by_role("button", name="Revert", exact=True)).to_be_disabled()
    assert (workspace / "prices.csv").read_text() == "item,price\ntea,3\n"
    assert (workspace / "summary.md").read_text() == "# Summary\nnew\n"
    # the static rendering above the controls says what became of each change
    rendering = turn.locator(".jp-RenderedMarkdown")
    expect(rendering).to_contain_text("Changes in this turn")
    expect(rendering).to_contain_text("1f1 file prices.csv — reverted")
    expect(rendering).to_contain_text("1f2 file summary.md +1 −1 — kept")
    turn.screenshot(path=str(ARTIFACTS / "lab-review-changes-decided.png"))
