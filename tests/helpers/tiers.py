"""Each tier's conftest marks its tests with the tier's marker and a per-test timeout.

Why from the conftest: a test file cannot forget its marker (`pytest -m kernel` selects exactly
the kernel tier), and a hung test ends as a failure naming itself instead of stalling the whole
run. The timeouts are generous for the tiers that start kernels, JupyterLab and Chromium on a
loaded 2-core machine; a test's own `@pytest.mark.timeout(N)` wins, and `--timeout N` on the
command line replaces every tier default (`--timeout 0` turns them off, for a debugger).
"""

from __future__ import annotations

from pathlib import Path

import pytest

TIMEOUT_S: dict[str, float] = {
    "unit": 120,
    "wire": 120,
    "robustness": 600,  # the interrupt fuzz is one test of 32 interrupts in a real kernel
    "kernel": 600,
    "browser": 900,
}
"""The default limit of one test (setup and teardown included) in each tier, in seconds."""


def mark_tier(config: pytest.Config, items: list[pytest.Item], folder: Path, tier: str) -> None:
    """Give every collected test under `folder` the marker `tier` and the tier's timeout."""
    timeouts = config.pluginmanager.hasplugin("timeout") and config.getoption("timeout", None) is None
    for item in items:
        if not item.path.is_relative_to(folder):
            continue
        item.add_marker(tier)
        if timeouts and item.get_closest_marker("timeout") is None:
            # a thread, not SIGALRM: the tools under test arm the alarm themselves
            item.add_marker(pytest.mark.timeout(TIMEOUT_S[tier], method="thread"))
