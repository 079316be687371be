"""Interrupts and time limits for code run on the kernel's main thread.

ipykernel 7.4 runs an async cell inside `IPythonKernel._cancel_on_sigint`: its SIGINT handler
only schedules, via `io_loop.add_callback`, a callback that cancels the cell's future, so the
cancellation lands at the cell's next `await`. A busy synchronous loop (`while True: pass`)
never reaches one; the ■ button would do nothing until the loop ends by itself. So while user
code runs (run_python's code, or a user object's `__repr__` that describe_variable calls), we
install our own SIGINT handler that raises `KeyboardInterrupt` inside that code; the tool then
ends with `asyncio.CancelledError`, which the engine turns into a `cancelled` turn.

Timeouts use `signal.setitimer(ITIMER_REAL)` and a SIGALRM handler that raises a private
`BaseException` (so the user's `except Exception:` does not swallow it). Signals can only be
handled on the main thread; elsewhere (ipykernel subshells, worker threads) code runs without
interrupt or timeout support, and callers say so. The user's own handlers and timer are put
back afterwards, whatever happened.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import signal
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["MAX_TIMEOUT_S", "RunState", "UserCodeTimeout", "interruptible", "time_limited"]

MAX_TIMEOUT_S = 86_400.0
"""A day: longer than any tool call should run, and far inside what setitimer accepts."""


class UserCodeTimeout(BaseException):
    """Raised inside user code by the SIGALRM handler; a BaseException so that the user's
    `except Exception:` does not swallow it."""


@dataclasses.dataclass
class RunState:
    """Shared between the signal handlers and the executor.

    Handlers raise only while `in_user_code` is set: a signal that arrives while our own
    bookkeeping runs is recorded instead, so it can never escape from the tool as a stray
    KeyboardInterrupt.
    """

    in_user_code: bool = False
    interrupted: bool = False
    timed_out: bool = False


def _on_sigint(state: RunState, signum: int, frame: types.FrameType | None) -> None:
    state.interrupted = True
    if state.in_user_code:
        raise KeyboardInterrupt


def _on_alarm(state: RunState, signum: int, frame: types.FrameType | None) -> None:
    if state.in_user_code:
        state.timed_out = True
        raise UserCodeTimeout


SignalHandler = Callable[[int, types.FrameType | None], Any] | int | None


def _restore_handler(signum: int, previous: SignalHandler) -> None:
    # getsignal() says None for a handler not installed from Python; the default is the best
    # we can put back then.
    signal.signal(signum, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _alarm(state: RunState, timeout_s: float) -> Iterator[None]:
    """Arm ITIMER_REAL for `timeout_s`, then put back the previous handler and timer.

    The timer repeats every 0.5 s so that code which swallows one UserCodeTimeout (a bare `except:`
    in a loop) is stopped again.
    """
    if not (math.isfinite(timeout_s) and 0 < timeout_s <= MAX_TIMEOUT_S):
        raise ValueError(f"timeout must be a number of seconds in (0, {MAX_TIMEOUT_S:g}]")
    started = time.monotonic()
    # Read the user's handler and timer before changing either, and change them only inside
    # the try: whatever fails from here on, the finally puts both back.
    previous_handler = signal.getsignal(signal.SIGALRM)
    previous_delay, previous_interval = signal.getitimer(signal.ITIMER_REAL)
    try:
        signal.signal(signal.SIGALRM, lambda s, f: _on_alarm(state, s, f))
        signal.setitimer(signal.ITIMER_REAL, timeout_s, 0.5)
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _restore_handler(signal.SIGALRM, previous_handler)
        if previous_delay > 0:
            remaining = max(previous_delay - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, remaining, previous_interval)


@contextlib.contextmanager
def interruptible(state: RunState, timeout_s: float | None) -> Iterator[bool]:
    """Install the SIGINT handler (and the timeout) for the duration; yield whether signals
    could be installed, which is only possible on the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, lambda s, f: _on_sigint(state, s, f))
        with _alarm(state, timeout_s) if timeout_s else contextlib.nullcontext():
            yield True
    finally:
        _restore_handler(signal.SIGINT, previous)


@contextlib.contextmanager
def time_limited(seconds: float) -> Iterator[RunState]:
    """Run a block that calls code we do not own (a user object's `__repr__` or property)
    under a time limit and the ■ button: the block raises UserCodeTimeout when the time is up
    and KeyboardInterrupt (with `state.interrupted` set) on an interrupt. Unlimited off the
    main thread, where signals cannot be handled."""
    state = RunState()
    with interruptible(state, seconds):
        state.in_user_code = True
        try:
            yield state
        finally:
            state.in_user_code = False
