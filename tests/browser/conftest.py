"""Browser tests: a real JupyterLab or Notebook 7 server on 127.0.0.1,
Debian's Chromium driven by Playwright (never a browser download), and the fake model server
in this process. The recipe: a private HOME and JUPYTER_CONFIG_DIR, the news
pop-up disabled, cells run with `notebook:run-all-cells` without awaiting its promise.

`scripts/browser_deps.sh` installs Chromium; the `playwright` package comes from PyPI.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.tiers import mark_tier

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).parent / "artifacts"
FAKE_KEY = "sk-browser-test-not-a-real-key"
READY_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class JupyterServer:
    """`jupyter lab` or `jupyter notebook` on 127.0.0.1 with a token, in a private home; by
    default this environment's, else the `jupyter` given (another environment's) with `extra`
    environment variables."""

    def __init__(
        self,
        kind: str,
        root: Path,
        home: Path,
        model_url: str,
        jupyter: Path | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        config_dir = home / ".jupyter"
        settings = config_dir / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False})
        )
        # JUPYTER_PATH is kept: it can put a labextension built in a checkout ahead of the
        # installed one (a folder holding labextensions/blitz-kernel)
        env = {k: v for k, v in os.environ.items() if k == "JUPYTER_PATH" or not k.startswith(("BLITZ_", "JUPYTER"))}
        env.update(
            HOME=str(home),
            JUPYTER_CONFIG_DIR=str(config_dir),
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            BLITZ_MODEL="openai/fake-model",
            BLITZ_API_BASE=model_url,
            OPENAI_API_KEY=FAKE_KEY,
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        env.update(extra or {})
        expose = (
            "--LabApp.expose_app_in_browser=True"
            if kind == "lab"
            else "--JupyterNotebookApp.expose_app_in_browser=True"
        )
        command = [
            str(jupyter or Path(sys.executable).parent / "jupyter"),
            kind,
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={self.port}",
            f"--IdentityProvider.token={self.token}",
            "--allow-root",
            f"--ServerApp.root_dir={root}",
            expose,
            "--ServerApp.port_retries=0",
        ]
        self.log = (home / f"{kind}.log").open("w")
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=root)
        self._wait_until_up()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, notebook: str) -> str:
        path = f"lab/tree/{notebook}" if self.kind == "lab" else f"notebooks/{notebook}"
        return f"{self.base_url}/{path}?token={self.token}"

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter {self.kind} exited with {self.process.returncode}; see {self.log.name}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/api/status?token={self.token}", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)  # polling a server that is starting: there is no event to wait on
        raise TimeoutError(f"jupyter {self.kind} did not answer in {READY_TIMEOUT_S} s")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def rgb(colour: str) -> tuple[float, float, float]:
    """A computed colour's red, green and blue from 0 to 1 (`rgb(...)`, or `color(srgb ...)`
    for one mixed with color-mix())."""
    numbers = re.findall(r"[\d.]+", colour.split("/")[0])
    values = [float(n) for n in numbers[:3]]
    return (
        (values[0], values[1], values[2])
        if colour.startswith("color(")
        else (values[0] / 255, values[1] / 255, values[2] / 255)
    )


def write_notebook(path: Path, cells: list[str]) -> None:
    """A notebook of code cells with the python3 kernelspec (so no kernel picker shows)."""
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"cell-{i}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for i, source in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook, indent=1))


@pytest.fixture(scope="session")
def model_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: run `sudo scripts/browser_deps.sh`")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)  # the default 5 s is short for a 2-core CI machine
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser-workspace")


def start_server(kind: str, workspace: Path, model: FakeOpenAIServer, home: Path) -> JupyterServer:
    return JupyterServer(kind, workspace, home, model.base_url)


# -- the tier: every test here is marked `browser` and gets the tier's timeout ---------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_tier(config, items, Path(__file__).parent, "browser")
