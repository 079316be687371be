"""The Blitz persona's tests run in Jupyter AI's environment (.venv-jupyter-ai, made by
scripts/setup_jupyter_ai.sh); blitz itself runs from its own: BLITZ_PYTHON (the test command
sets it to its own interpreter), else the repository's .venv. The model is the repository's fake
OpenAI-compatible server (tests/fakeserver.py, standard library only)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))  # tests.fakeserver


def blitz_python() -> Path:
    """blitz's own interpreter; a clear failure (never a skip) when there is none."""
    configured = os.environ.get("BLITZ_PYTHON")
    python = Path(configured).absolute() if configured else ROOT / ".venv" / "bin" / "python"
    if not python.is_file():
        pytest.fail(f"no Python with blitz_kernel at {python}: set BLITZ_PYTHON (scripts/tiers.py does)")
    return python


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # a hung test ends as a failure naming itself (a thread: the kernel tools arm SIGALRM themselves)
    if config.pluginmanager.hasplugin("timeout") and config.getoption("timeout", None) is None:
        for item in items:
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(600, method="thread"))
