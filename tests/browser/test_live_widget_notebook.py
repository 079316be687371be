"""The notebook `scripts/lab` opens, as a newcomer meets it: notebooks/live_widget.ipynb in a
fresh copy of notebooks/ (the same files `scripts/lab` copies into build/lab/), in a real
JupyterLab and Chromium, run from its first cell to the end of its turn on the scripted model
beside it. The approval cards appear; run_python is allowed and write_file denied; the turn
ends as the static rendering and the notebook's last cell says no summary was written."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer, start_server
from .test_turn_widget import KERNEL_IDLE, RUN_ALL, open_notebook, output_of

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
LAB_FILES = ("*.ipynb", "*.script.json", "sales.csv")
"""What `scripts/lab` copies from notebooks/ (its `cp` line)."""


@pytest.fixture(scope="module")
def lab_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lab-copy")
    for pattern in LAB_FILES:
        for path in NOTEBOOKS.glob(pattern):
            shutil.copy(path, root / path.name)
    return root


@pytest.fixture(scope="module")
def lab_on_copy(
    lab_copy: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JupyterServer]:
    server = start_server("lab", lab_copy, model_server, tmp_path_factory.mktemp("lab-copy-home"))
    yield server
    server.stop()


def test_scripts_lab_copies_what_the_test_copies():
    """The files this test copies are the ones `scripts/lab` copies (else it tests another setup)."""
    script = (NOTEBOOKS.parent / "scripts" / "lab").read_text()
    assert "cp notebooks/*.ipynb notebooks/*.script.json notebooks/sales.csv build/lab/" in script
    assert "build/lab/live_widget.ipynb" in script


def test_the_live_widget_notebook_runs_to_its_first_turns_end(page: Any, lab_on_copy: JupyterServer, lab_copy: Path):
    open_notebook(page, lab_on_copy, "live_widget.ipynb", reset=True)
    page.evaluate(RUN_ALL)
    turn = output_of(page, 3)  # the %%blitz cell (after a Markdown cell, the setup, a Markdown cell)
    expect(turn.locator(".blitz-turn")).to_be_visible(timeout=120_000)
    read = turn.locator('details.blitz-tool:has(.blitz-tool-name:text-is("read_file"))')
    expect(read.locator(".blitz-status")).to_have_text("done")

    permission = turn.get_by_role("group", name="Permission request", exact=True)
    expect(permission).to_contain_text("run_python", timeout=60_000)
    permission.get_by_role("button", name="Allow once", exact=True).click()
    expect(permission).to_contain_text("write_file", timeout=60_000)
    expect(permission.locator(".blitz-diff-add").first).to_be_visible()  # the file as a diff
    permission.get_by_role("button", name="Deny", exact=True).click()

    expect(turn).to_contain_text("The north region sold the most units", timeout=60_000)
    expect(turn.locator(".blitz-turn")).to_have_count(0)  # the static rendering replaced the widget
    expect(turn.locator("details > summary").first).to_contain_text("⚙ read_file(")
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    expect(output_of(page, 5)).to_contain_text("no summary.txt")  # the write was denied
    assert not (lab_copy / "summary.txt").exists()
    assert not (NOTEBOOKS / "summary.txt").exists()  # the checkout stays clean
    page.screenshot(path=str(ARTIFACTS / "lab-live-widget-notebook.png"))
