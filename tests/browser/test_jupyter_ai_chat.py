"""Blitz in Jupyter AI's chat, in a real JupyterLab started from Jupyter AI's own environment
(.venv-jupyter-ai, made here by scripts/setup_jupyter_ai.sh when missing) with the Blitz persona
(integrations/jupyter-ai); the notebook's kernel runs from blitz's environment (docs/outside-clients.md).

Without blitz's labextension: the chat addresses @Blitz, the persona attaches `blitz acp` to the
notebook's kernel, run_python asks in the chat, Allow there runs it in the notebook's namespace.
With this checkout's labextension added to that JupyterLab: the request shows in the notebook
too, Allow there runs it and the chat's buttons close."""

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
from .test_fix_action import EXECUTION_COUNTS, load_this_checkouts_labextension
from .test_turn_widget import KERNEL_IDLE

ROOT = Path(__file__).resolve().parents[2]
SIDE = ROOT / ".venv-jupyter-ai"
CHAT_ALLOW = "button.jp-jupyter-ai-acp-client-permission-btn-allow-once"
"""The chat's own Allow button (Jupyter AI's tool card)."""
OPEN_CHAT = """async () => {
  await window.jupyterapp.commands.execute('jupyterlab-chat:create', {name: 'talk'});
  await window.jupyterapp.commands.execute('docmanager:open', {path: 'talk.chat'});
}"""


def jupyter_ai_lab(root: Path, home: Path, model: FakeOpenAIServer, kernel: str, cells: list[str]) -> JupyterServer:
    """JupyterLab from Jupyter AI's environment on `root`, holding analysis.ipynb (`cells`, its
    kernel `kernel`); blitz is this environment's."""
    setup = subprocess.run(["bash", "scripts/setup_jupyter_ai.sh"], cwd=ROOT, capture_output=True, text=True)
    if setup.returncode != 0:
        pytest.fail(f"scripts/setup_jupyter_ai.sh failed:\n{setup.stdout}\n{setup.stderr}")
    notebook = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [], "source": src}
            for i, src in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"name": kernel, "display_name": kernel, "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "analysis.ipynb").write_text(json.dumps(notebook))
    extra = {"BLITZ_EXECUTABLE": f"{sys.executable} -m blitz_kernel"}
    return JupyterServer("lab", root, home, model.base_url, jupyter=SIDE / "bin" / "jupyter", extra=extra)


@pytest.fixture(scope="module")
def plain_lab(tmp_path_factory: pytest.TempPathFactory, model_server: FakeOpenAIServer) -> Any:
    """No blitz front end; the notebook's kernel is plain IPython from blitz's environment."""
    home = tmp_path_factory.mktemp("jupyter-ai-home")
    spec = home / ".local" / "share" / "jupyter" / "kernels" / "blitz-env"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(json.dumps({"argv": argv, "display_name": "blitz", "language": "python"}))
    root = tmp_path_factory.mktemp("jupyter-ai-root")
    server = jupyter_ai_lab(root, home, model_server, "blitz-env", ["%load_ext blitz_kernel", "secret_number = 4242"])
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lab_with_blitz(tmp_path_factory: pytest.TempPathFactory, model_server: FakeOpenAIServer) -> Any:
    """This checkout's labextension added; the notebook on the "Blitz (Python 3)" kernel, installed
    the way docs/outside-clients.md says (`python -m blitz_kernel install`)."""
    home = tmp_path_factory.mktemp("jupyter-ai-blitz-home")
    load_this_checkouts_labextension(home)
    install = [sys.executable, "-m", "blitz_kernel", "install", "--prefix", str(home / ".local")]
    subprocess.run(install, check=True, capture_output=True)
    root = tmp_path_factory.mktemp("jupyter-ai-blitz-root")
    server = jupyter_ai_lab(root, home, model_server, "blitz", ["secret_number = 4242"])
    yield server
    server.stop()


def run_the_notebook_then_ask_in_the_chat(page: Any, lab: JupyterServer, prompt: str) -> None:
    page.goto(lab.url("analysis.ipynb") + "&reset")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")  # not awaited
    page.wait_for_function(f"() => ({EXECUTION_COUNTS})().every(n => n !== null)", timeout=120_000)
    page.evaluate(OPEN_CHAT)
    box = page.locator(".jp-chat-input-container textarea").first
    expect(box).to_be_visible(timeout=60_000)
    # a message goes to the persona the chat input's picker names; the picker shows none until
    # Jupyter AI has loaded this new chat's personas, and a message sent before that goes nowhere
    expect(page.locator(".jp-jai-personaControls-persona")).to_have_text("Blitz", timeout=60_000)
    box.click()
    box.type(prompt)
    page.keyboard.press("Enter")


def test_blitz_answers_in_jupyter_ais_chat_from_the_notebooks_kernel(
    page: Any, plain_lab: JupyterServer, model_server: FakeOpenAIServer
) -> None:
    model_server.reset()
    model_server.enqueue(
        {"tool_calls": [{"name": "run_python", "arguments": {"code": "print(secret_number * 2)"}}]},
        {"text": "Doubled, your number is 8484."},
    )
    run_the_notebook_then_ask_in_the_chat(page, plain_lab, "@Blitz double my number")
    allow = page.locator(CHAT_ALLOW)
    expect(allow).to_be_visible(timeout=120_000)  # blitz acp starts, attaches, the turn asks
    expect(page.get_by_text("run_python").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "jupyter-ai-permission.png"))
    allow.click()
    expect(page.get_by_text("Doubled, your number is 8484.")).to_be_visible(timeout=120_000)
    page.screenshot(path=str(ARTIFACTS / "jupyter-ai-answer.png"))
    # the call ran in the notebook's own namespace: its result went back to the model
    assert "8484" in json.dumps(model_server.requests[-1].body)


def test_asked_in_the_notebook_too_allow_there_runs_it_and_closes_the_chats_buttons(
    page: Any, lab_with_blitz: JupyterServer, model_server: FakeOpenAIServer
) -> None:
    model_server.reset()
    model_server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "both.txt", "content": "asked twice"}}]},
        {"text": "Written, as allowed in the notebook."},
    )
    run_the_notebook_then_ask_in_the_chat(page, lab_with_blitz, "@Blitz write the file")
    chat_allow = page.locator(CHAT_ALLOW)
    expect(chat_allow).to_be_visible(timeout=120_000)
    page.locator(".lm-TabBar-tab", has_text="analysis.ipynb").click()
    card = page.get_by_role("alertdialog")
    expect(card).to_be_visible(timeout=60_000)
    expect(card).to_contain_text("acp:JupyterAI")
    expect(card).to_contain_text("write_file")
    page.screenshot(path=str(ARTIFACTS / "jupyter-ai-asked-in-notebook.png"))
    card.get_by_role("button", name="Allow", exact=True).click()
    expect(card).to_be_hidden()
    page.locator(".lm-TabBar-tab", has_text="talk.chat").click()
    expect(page.get_by_text("Written, as allowed in the notebook.")).to_be_visible(timeout=120_000)
    expect(chat_allow).to_be_hidden()  # the chat's request closed: the notebook answered it
    assert (lab_with_blitz.root / "both.txt").read_text() == "asked twice"
    page.screenshot(path=str(ARTIFACTS / "jupyter-ai-answered-in-notebook.png"))
