"""The MCP SDK's own log goes to the kernel's log, never into a cell.

The SDK logs with the standard `logging` module (`mcp.*`), and with no handler configured
Python prints such records on `sys.stderr`, which in a kernel is the running cell: a server
that writes one malformed line put a multi-line pydantic error there, while the turn itself
only said the server did not answer. The records now reach the kernel application's log (the
Jupyter server's console) or, outside a kernel, the process's own stderr; the turn says what
happened in one line (toolset.py).
"""

from __future__ import annotations

import logging
import sys

SDK_LOGGER = "mcp"


class KernelLogHandler(logging.Handler):
    """Hands each record to the kernel application's logger, else to the real stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        target = _kernel_logger()
        if target is not None:
            target.handle(record)
            return
        stream = sys.__stderr__
        if stream is not None:
            try:
                stream.write(self.format(record) + "\n")
                stream.flush()
            except (OSError, ValueError):
                return


KERNEL_LOGGER = "IPKernelApp"
"""The kernel application's logger: traitlets names an application's log after its class, so it
is found by name, without importing the kernel below the notebook layer."""


def _kernel_logger() -> logging.Logger | None:
    log = logging.getLogger(KERNEL_LOGGER)
    return log if log.handlers else None


def route_sdk_log() -> None:
    """Install the handler once; the SDK's records stop propagating to the root logger."""
    logger = logging.getLogger(SDK_LOGGER)
    if not any(isinstance(handler, KernelLogHandler) for handler in logger.handlers):
        logger.addHandler(KernelLogHandler())
    logger.propagate = False
