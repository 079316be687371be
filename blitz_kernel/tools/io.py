"""Where blocking tool work runs: the project's own bounded thread pool, with a time budget.

File tools read and walk in worker threads so a big file or a deep tree does not stall the
kernel's event loop (widget clicks, the interrupt ticker). They must not borrow the loop's
*default* executor: it is the user's too (`await asyncio.to_thread(...)` in their own cells),
and tool calls that hang there (a FIFO opened for reading used to block forever) would starve
the user's code for the rest of the kernel's life. So tool I/O gets its own small pool; if
the agent fills it, only the agent waits.

A thread cannot be killed, so every piece of work here takes a `Budget` and checks it between
steps (files, lines): when the call's time is up, or the turn was stopped (■, --timeout), the
work ends at its next check and the worker is free again.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

__all__ = ["TOOL_IO_EXECUTOR", "TOOL_IO_WORKERS", "Budget", "run_io"]

TOOL_IO_WORKERS = 4
"""Fewer than the tool batch's 8: read-only calls beyond this queue instead of piling threads."""
TOOL_IO_EXECUTOR = ThreadPoolExecutor(max_workers=TOOL_IO_WORKERS, thread_name_prefix="blitz-tool-io")

T = TypeVar("T")


class Budget:
    """How long one tool call may take, and whether its turn has stopped waiting for it.

    `deadline` is `time.monotonic()` time: the sooner of the call's own budget and the turn's
    deadline (`ToolContext.deadline`, its --timeout)."""

    def __init__(self, seconds: float, turn_deadline: float | None = None) -> None:
        deadline = time.monotonic() + seconds
        if turn_deadline is not None and math.isfinite(turn_deadline):
            deadline = min(deadline, turn_deadline)
        self.seconds = seconds
        self.deadline = deadline
        self._stopped = False
        """Set by the event loop, read by the worker thread: a flag suffices (one attribute
        write is atomic), where an Event costs a lock and a condition on every tool call."""

    def stop(self) -> None:
        """The caller gave up (the turn was cancelled): end at the next check."""
        self._stopped = True

    @property
    def stopped(self) -> bool:
        return self._stopped

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(self.deadline - time.monotonic(), 0.0)

    def exhausted(self) -> bool:
        """True once the time is up or the caller stopped waiting."""
        return self._stopped or time.monotonic() >= self.deadline


async def run_io(work: Callable[..., T], *args: object, budget: Budget | None = None) -> T:
    """Run `work(*args)` on the tool I/O pool; when the awaiting task is cancelled, stop the
    budget so the thread ends at its next check instead of running on unobserved."""
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(TOOL_IO_EXECUTOR, functools.partial(work, *args))
    try:
        return await future
    except asyncio.CancelledError:
        if budget is not None:
            budget.stop()
        raise
