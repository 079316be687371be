"""Hooks that misbehave at the process level: one that leaves a background child holding its
stderr, one that writes megabytes of stderr. The verdict comes from the hook's exit, at once,
and only a few KB of its stderr are ever held.

Run alone: `pytest tests/robustness/test_hook_edges.py` (a few seconds).
"""

from __future__ import annotations

import asyncio
import time
import tracemalloc
from pathlib import Path

from blitz_kernel.config.settings import HooksConfig, HookSpec
from blitz_kernel.engine.safety.hooks import REASON_CHARS, STDERR_BYTES, HookRunner


def runner(tmp_path: Path, command: str, timeout_s: float = 10) -> HookRunner:
    return HookRunner(HooksConfig(prompt_submit=[HookSpec(command=command, timeout_s=timeout_s)]), tmp_path)


async def test_a_hook_whose_child_holds_stderr_is_done_when_it_exits(tmp_path: Path) -> None:
    """`communicate()` waited for EOF on stderr, which the background `sleep` held for 30 s:
    every such hook became a 10 s timeout and blocked."""
    hooks = runner(tmp_path, "sleep 30 >&2 & echo 'not today' >&2; exit 2")
    started = time.monotonic()
    reason = await asyncio.wait_for(hooks.prompt_submit({"prompt": "hi"}), timeout=8)
    assert reason == "not today"
    assert time.monotonic() - started < 5
    allowing = runner(tmp_path, "sleep 30 >&2 & exit 0")
    assert await asyncio.wait_for(allowing.prompt_submit({"prompt": "hi"}), timeout=8) is None


async def test_a_hook_that_floods_stderr_is_read_in_bounded_memory(tmp_path: Path) -> None:
    hooks = runner(tmp_path, "head -c 50000000 /dev/zero | tr '\\0' x >&2; exit 2", timeout_s=60)
    tracemalloc.start()
    try:
        reason = await asyncio.wait_for(hooks.prompt_submit({"prompt": "hi"}), timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reason is not None and set(reason.rstrip("…")) == {"x"} and len(reason) <= REASON_CHARS
    assert peak < 2_000_000, peak  # the 50 MB passed through in 64 KB reads; STDERR_BYTES kept
    assert STDERR_BYTES <= 8192


async def test_a_hook_that_does_not_read_its_payload_still_decides(tmp_path: Path) -> None:
    hooks = runner(tmp_path, "exit 2")
    reason = await hooks.prompt_submit({"prompt": "x" * 2_000_000})
    assert reason == "blocked (no reason given)"
