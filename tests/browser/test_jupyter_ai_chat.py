"""Blitz in Jupyter AI's chat, in a real JupyterLab started from Jupyter AI's own environment
(.venv-jupyter-ai, made here by scripts/setup_jupyter_ai.sh when missing) with the Blitz persona
(integrations/jupyter-ai) and without blitz's labextension or server extension: the notebook's
kernel runs from blitz's environment with blitz loaded, the chat addresses @Blitz, the persona
attaches `blitz acp` to that kernel, run_python asks in the chat, Allow there runs it in the
notebook's namespace, and the answer shows in the chat (docs/outside-clients.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer
from .test_turn_widget import KERNEL_IDLE

ROOT = Path(__file__).resolve().parents[2]
SIDE = ROOT / ".venv-jupyter-ai"
EXECUTION_COUNTS = (
    "() => window.jupyterapp.shell.currentWidget.content.model.sharedModel.cells.map(c => c.execution_count ?? null)"
)
OPEN_CHAT = """async () => {
  await window.jupyterapp.commands.execute('jupyterlab-chat:create', {name: 'talk'});
  await window.jupyterapp.commands.execute('docmanager:open', {path: 'talk.chat'});
}"""


@pytest.fixture(scope="module")
def jupyter_ai_lab(tmp_path_factory: pytest.TempPathFactory, model_server: FakeOpenAIServer) -> Any:
    setup = subprocess.run(["bash", "scripts/setup_jupyter_ai.sh"], cwd=ROOT, capture_output=True, text=True)
    if setup.returncode != 0:
        pytest.fail(f"scripts/setup_jupyter_ai.sh failed:\n{setup.stdout}\n{setup.stderr}")
    root = tmp_path_factory.mktemp("jupyter-ai-root")
    home = tmp_path_factory.mktemp("jupyter-ai-home")
    # the notebook's kernel: blitz's environment (Jupyter AI's has no blitz_kernel)
    spec = home / ".local" / "share" / "jupyter" / "kernels" / "blitz-env"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(json.dumps({"argv": argv, "display_name": "blitz", "language": "python"}))
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [], "source": src}
            for i, src in enumerate(["%load_ext blitz_kernel", "secret_number = 4242"])
        ],
        "metadata": {"kernelspec": {"name": "blitz-env", "display_name": "blitz", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "analysis.ipynb").write_text(json.dumps(notebook))
    server = JupyterServer(
        "lab",
        root,
        home,
        model_server.base_url,
        jupyter=SIDE / "bin" / "jupyter",
        extra={"BLITZ_EXECUTABLE": f"{sys.executable} -m blitz_kernel"},
    )
    yield server
    server.stop()


def test_blitz_answers_in_jupyter_ais_chat_from_the_notebooks_kernel(
    page: Any, jupyter_ai_lab: JupyterServer, model_server: FakeOpenAIServer
) -> None:
    model_server.reset()
    model_server.enqueue(
        {"tool_calls": [{"name": "run_python", "arguments": {"code": "print(secret_number * 2)"}}]},
        {"text": "Doubled, your number is 8484."},
    )
    page.goto(jupyter_ai_lab.url("analysis.ipynb") + "&reset")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")  # not awaited
    page.wait_for_function(f"() => ({EXECUTION_COUNTS})().every(n => n !== null)", timeout=120_000)

    page.evaluate(OPEN_CHAT)
    box = page.locator(".jp-chat-input-container textarea").first
    expect(box).to_be_visible(timeout=60_000)
    box.click()
    box.type("@Blitz double my number")
    page.keyboard.press("Enter")

    allow = page.get_by_role("button", name="Allow", exact=True)
    expect(allow).to_be_visible(timeout=120_000)  # blitz acp starts, attaches, the turn asks
    expect(page.get_by_text("run_python").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "jupyter-ai-permission.png"))
    allow.click()
    expect(page.get_by_text("Doubled, your number is 8484.")).to_be_visible(timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "jupyter-ai-answer.png"))
    # the call ran in the notebook's own namespace: its result went back to the model
    assert "8484" in json.dumps(model_server.requests[-1].body)
