"""Headless cells do not wait for a front end that is not there: a `%%blitz` cell sent by
jupyter_client (nbclient, papermill, `blitz run`) is plain at once, without the front-end
probe; a cell sent as a browser sends it still gets the probe."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.fakeserver import FakeOpenAIServer

from .conftest import FAKE_KEY
from .driver import PROBE_TARGET, KernelDriver, kernel_environment

MEMORY = "from blitz_kernel.notebook.probe import KERNEL_MEMORY as m; print(m.headless_seen, m.front_end_seen)"
LIST = {"tool_calls": [{"name": "list_files", "arguments": {}}]}


def probes(outputs: list[tuple[str, dict]]) -> list[dict]:
    return [content for kind, content in outputs if kind == "comm_open" and content.get("target_name") == PROBE_TARGET]


def test_a_jupyter_client_cell_is_plain_without_a_probe(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue(LIST, {"text": "Nothing much."})

    cell = kernel.run("%%blitz -s headless\nList files.")

    assert cell.status == "ok", cell.reply
    assert probes(cell.outputs) == []
    assert "⚙ list_files()" in cell.stdout and "end_turn" in cell.stdout
    assert kernel.run(MEMORY).stdout.split() == ["False", "False"]  # no probe ever waited


def test_a_cell_sent_as_a_browser_sends_it_is_still_probed(kernel: KernelDriver, server: FakeOpenAIServer):
    server.enqueue({"text": "Hello."})

    cell = kernel.collect(kernel.submit("%%blitz -s browserlike\nSay hello.", browser=True))

    assert cell.status == "ok", cell.reply
    assert len(probes(cell.outputs)) == 1  # nobody answered it: the turn was shown plain


def test_ten_blitz_cells_under_nbclient_never_probe(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "home").mkdir()
    env = kernel_environment(
        tmp_path / "home",
        BLITZ_MODEL="openai/fake-model",
        BLITZ_API_BASE=server.base_url,
        OPENAI_API_KEY=FAKE_KEY,
        BLITZ_APPROVAL_HEADLESS="allow",
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for _ in range(10):
        server.enqueue(LIST, {"text": "Listed."})
    cells = ["%load_ext blitz_kernel", *(f"%%blitz -s nb\nList the files ({i})." for i in range(10)), MEMORY]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])

    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()

    printed = ["".join(output.get("text", "") for output in cell.outputs) for cell in notebook.cells]
    assert all("⚙ list_files()" in text and "end_turn" in text for text in printed[1:11]), printed
    assert printed[-1].split() == ["False", "False"]  # no probe was opened, so none timed out
    assert len(server.requests) == 20
