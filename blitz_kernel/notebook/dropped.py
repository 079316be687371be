"""Messages from the front end that are dropped: each kind of problem logged once, never raised.

A comm callback that raises leaves a traceback in the kernel's log for every message, and
output written from one is parented to the comm message rather than to a cell, so a front end
of another version that keeps sending a message the kernel does not know would flood both.
Instead the first message of each kind that does not fit (per receiver, per `kind`) is
logged, in one line, to the kernel application's log (the Jupyter server's console), and the
rest of that kind are dropped silently (docs/widget.md).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError

from ..mcp.sdk_log import KernelLogHandler

LOGGER = "blitz_kernel.notebook.protocol"

_seen: set[tuple[str, str]] = set()


def _logger() -> logging.Logger:
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(handler, KernelLogHandler) for handler in logger.handlers):
        logger.addHandler(KernelLogHandler())
        logger.propagate = False  # never the root logger's stderr, which is the running cell
    return logger


def kind_of(content: Any) -> str:
    """What a message says it is: its `kind`, or what it is when it has none."""
    if isinstance(content, dict):
        kind = content.get("kind")
        return kind if isinstance(kind, str) else "(no kind)"
    return f"({type(content).__name__})"


def drop(receiver: str, content: Any, problem: str | ValidationError) -> bool:
    """Note that `receiver` ignored `content`; True when this was logged (the first of its kind)."""
    key = (receiver, kind_of(content))
    if key in _seen:
        return False
    _seen.add(key)
    if isinstance(problem, ValidationError):
        problem = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(message)'}: {error['msg']}"
            for error in problem.errors()[:3]
        )
    _logger().warning(
        "%s ignored a %s message it cannot use (%s); further ones of this kind are ignored silently",
        receiver,
        key[1],
        problem,
    )
    return True


def forget() -> None:
    """Log every kind again (tests)."""
    _seen.clear()
