"""An outside client's mutating call asked in a real JupyterLab (docs/mcp-server.md): the
official `mcp` SDK client calls write_file through `blitz mcp --connection-file <the notebook
kernel's connection file>`, a permission card naming the client appears in the notebook, and
Allow (reached from the keyboard) runs the call. The page loads this checkout's labextension.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer, start_server, write_notebook
from .test_fix_action import RUN_ACTIVE_CELL, load_this_checkouts_labextension, select
from .test_turn_widget import KERNEL_IDLE, output_of

ROOT = Path(__file__).resolve().parents[2]
CONNECTION_FILE = "from ipykernel import get_connection_file\nprint(get_connection_file())"


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    home = tmp_path_factory.mktemp("outside-lab-home")
    load_this_checkouts_labextension(home)
    server = start_server("lab", workspace, model_server, home)
    yield server
    server.stop()


def write_over_mcp(connection_file: str, box: dict[str, Any]) -> None:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "blitz_kernel", "mcp", "--connection-file", connection_file],
        env={"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )

    async def call() -> Any:
        async with Client(parameters, read_timeout_seconds=120) as client:
            return await client.call_tool("write_file", {"path": "from_outside.txt", "content": "allowed"})

    try:
        box["result"] = anyio.run(call)
    except BaseException as error:  # noqa: BLE001 - re-raised by the test
        box["error"] = error


def test_an_mcp_write_shows_a_card_naming_the_client_and_allow_runs_it(
    page: Any, lab: JupyterServer, workspace: Path
) -> None:
    write_notebook(workspace / "outside.ipynb", ["%load_ext blitz_kernel", CONNECTION_FILE])
    page.goto(lab.url("outside.ipynb") + "&reset")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    for index in (0, 1):
        select(page, index)
        page.evaluate(RUN_ACTIVE_CELL)
    expect(output_of(page, 1)).to_contain_text("kernel-")
    connection_file = output_of(page, 1).inner_text().strip().splitlines()[-1]
    assert connection_file.endswith(".json"), connection_file

    box: dict[str, Any] = {}
    thread = threading.Thread(target=write_over_mcp, args=(connection_file, box), daemon=True)
    thread.start()
    card = page.get_by_role("alertdialog")
    expect(card).to_be_visible(timeout=90_000)
    expect(card).to_contain_text("mcp:")
    expect(card).to_contain_text("write_file")
    expect(card).to_contain_text("allowed")  # the preview shows what would be written
    assert not (workspace / "from_outside.txt").exists()
    page.screenshot(path=str(ARTIFACTS / "lab-outside-approval.png"))
    allow = card.get_by_role("button", name="Allow", exact=True)
    expect(allow).to_be_focused()
    page.keyboard.press("Enter")
    thread.join(timeout=60)
    assert not thread.is_alive(), "the MCP call did not finish"
    if "error" in box:
        raise box["error"]
    assert not box["result"].is_error, box["result"]
    expect(card).to_have_count(0)
    assert (workspace / "from_outside.txt").read_text() == "allowed"
