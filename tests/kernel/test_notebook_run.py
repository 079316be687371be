"""notebook_run in a real kernel with no notebook front end: the cell runs inside the turn in
the user's namespace, its outputs (text, a matplotlib figure, the execution count) land in
the .ipynb on disk and not in the %%blitz cell, --timeout and ■ stop a running cell with the
history still valid, and %blitz_undo puts back the outputs and the variables."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import tool_results

from .conftest import FAKE_KEY
from .driver import KernelDriver, kernel_environment

SOURCES = [
    "total = 40 + 2\nprint('total is', total)",
    "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('sales')",
    "print('spinning', flush=True)\nopen('spinning.flag', 'w').close()\nwhile True:\n    pass",
    "handle = display('step 1', display_id=True)\nhandle.update('step 2')\nfrom IPython.display import clear_output",
]


def write_notebook(path: Path) -> None:
    cells: list[dict[str, Any]] = [
        {"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "source": s, "outputs": []}
        for i, s in enumerate(SOURCES)
    ]
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cells") / "analysis.ipynb"


@pytest.fixture(scope="module")
def kernel(  # this module's kernel knows its notebook file, as Jupyter Server tells it
    server: FakeOpenAIServer, notebook: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KernelDriver]:
    env = kernel_environment(
        tmp_path_factory.mktemp("home"),
        BLITZ_MODEL="openai/fake-model",
        BLITZ_API_BASE=server.base_url,
        OPENAI_API_KEY=FAKE_KEY,
        JPY_SESSION_NAME=str(notebook),
    )
    driver = KernelDriver(notebook.parent, env)
    loaded = driver.run("%load_ext blitz_kernel\n%blitz_config model_retries=0")
    assert loaded.status == "ok", loaded.reply
    yield driver
    driver.shutdown()


@pytest.fixture(autouse=True)
def fresh_notebook(notebook: Path) -> None:
    write_notebook(notebook)


def run_cell(**arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "notebook_run", "arguments": arguments}]}


def cells(notebook: Path) -> list[dict[str, Any]]:
    return list(json.loads(notebook.read_text())["cells"])


def test_cells_run_in_the_namespace_and_their_outputs_go_into_the_file(
    kernel: KernelDriver, server: FakeOpenAIServer, notebook: Path
) -> None:
    server.enqueue(run_cell(start=0, end=1), {"text": "Ran both."})
    turn = kernel.run("%%blitz -s run --approve allow\nRun the first two cells.")
    assert turn.status == "ok", turn.reply
    assert "total is 42\n" not in turn.stdout  # printed into the run cell, not the turn's (its card previews it)
    [result] = tool_results(server.requests[-1].body)
    text = result["result"]
    assert "namespace: created total" in text and "stdout:\ntotal is 42" in text
    assert "fig-1" in text and "written into the .ipynb file on disk" in text
    first, second = cells(notebook)[:2]
    assert first["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "total is 42\n"}]
    assert first["metadata"]["blitz"]["session"] == "run" and first["metadata"]["blitz"]["ran"] is True
    kinds = [o["output_type"] for o in second["outputs"]]
    assert kinds == ["execute_result", "display_data"]  # Text(0.5, 1.0, 'sales'), then the figure
    assert "image/png" in second["outputs"][1]["data"]
    assert second["execution_count"] == first["execution_count"] + 1
    after = kernel.run(f"print(total, In[{first['execution_count']}].splitlines()[0])")
    assert after.stdout == "42 total = 40 + 2\n"
    assert after.reply["execution_count"] > second["execution_count"]  # the counter moved past them

    document = json.loads(notebook.read_text())
    document["cells"][0]["source"] = "total = 0"  # edited since the agent ran it
    notebook.write_text(json.dumps(document))
    server.enqueue({"tool_calls": [{"name": "notebook_read", "arguments": {}}]}, {"text": "Read."})
    assert kernel.run("%%blitz -s run\nWhat is stale?").status == "ok"
    [read] = tool_results(server.requests[-1].body)[-1:]
    assert (
        f"[0] code · execution count {first['execution_count']} · STALE (edited since it ran) · id c0" in read["result"]
    )
    assert f"[1] code · execution count {second['execution_count']} · id c1 · ran by the agent" in read["result"]


def test_undo_puts_back_the_outputs_and_the_variables(
    kernel: KernelDriver, server: FakeOpenAIServer, notebook: Path
) -> None:
    assert kernel.run("total = 'before'").status == "ok"
    server.enqueue(run_cell(cell="c0"), {"text": "Ran it."})
    assert kernel.run("%%blitz -s undo --approve allow\nRun c0.").status == "ok"
    assert cells(notebook)[0]["outputs"] != []
    undo = kernel.run("%blitz_undo -s undo")
    assert undo.status == "ok", undo.reply
    assert "restored the outputs of cell 0 (id c0)" in undo.stdout
    assert "restored total (str len 6)" in undo.stdout
    assert kernel.run("print(total)").stdout == "before\n"
    assert cells(notebook)[0]["outputs"] == [] and "blitz" not in cells(notebook)[0]["metadata"]


def test_a_cell_past_the_turns_timeout_ends_with_a_clear_error(
    kernel: KernelDriver, server: FakeOpenAIServer, notebook: Path
) -> None:
    server.enqueue(run_cell(cell=2), {"text": "It spun."})
    turn = kernel.run("%%blitz -s slow --approve allow --timeout 3\nRun the spinner.", timeout=60)
    outputs = cells(notebook)[2]["outputs"]
    assert outputs[0] == {"output_type": "stream", "name": "stdout", "text": "spinning\n"}
    assert outputs[1]["ename"] == "TimeoutError" and "ran past its time limit" in outputs[1]["evalue"]
    server.enqueue({"text": "Fine."})
    assert kernel.run("%%blitz -s slow\nStill there?").status == "ok", turn.reply
    [result] = tool_results(server.requests[-1].body)
    assert "TimeoutError: the cell ran past its time limit" in result["error"]


def test_interrupt_during_a_cell_cancels_the_turn_and_the_history_stays_valid(
    kernel: KernelDriver, server: FakeOpenAIServer, notebook: Path
) -> None:
    server.enqueue(run_cell(cell=2))
    msg_id = kernel.submit("%%blitz -s stop --approve allow\nRun the spinner.")
    flag = notebook.parent / "spinning.flag"
    flag.unlink(missing_ok=True)
    seen = kernel.wait_for_output(msg_id, "⚙ notebook_run", timeout=30)
    deadline = time.monotonic() + 30
    while not flag.exists():  # the cell's own code says it is spinning
        assert time.monotonic() < deadline, "the cell never started"
    kernel.interrupt()
    turn = kernel.collect(msg_id, timeout=15, already=seen)
    assert turn.status == "ok", turn.reply
    assert "cancelled" in turn.stdout
    assert cells(notebook)[2]["outputs"][-1]["ename"] == "KeyboardInterrupt"
    server.enqueue({"text": "Stopped."})
    assert kernel.run("%%blitz -s stop\nOK?").status == "ok"
    [result] = tool_results(server.requests[-1].body)
    assert "error" in result


def test_a_display_updated_in_place_shows_its_last_content(
    kernel: KernelDriver, server: FakeOpenAIServer, notebook: Path
) -> None:
    server.enqueue(run_cell(cell=3), {"text": "Shown."})
    assert kernel.run("%%blitz -s update --approve allow\nRun the progress cell.").status == "ok"
    outputs = cells(notebook)[3]["outputs"]
    assert [(o["output_type"], o["data"]["text/plain"]) for o in outputs] == [("display_data", "'step 2'")]
