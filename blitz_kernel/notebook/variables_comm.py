"""The comm `blitz.variables`: the names and types of the user's variables for inline
completion (docs/completion.md).

Inline completion runs in the Jupyter server, which cannot see the kernel's namespace, so the
front end asks the kernel itself, and only while the kernel is idle: it opens a comm to this
target, the kernel answers with one `VariablesReply` and closes it. Nothing of the user's code
runs (tools/variable_names.py reads only each object's type), and no cell is executed, so no
execution count, history or `post_run_cell` hook is touched. A kernel without blitz_kernel
loaded has no such target: ipykernel closes the comm unanswered and the front end sends no
variables.

`%load_ext` only registers the target, so the reply's pydantic models are imported when a
front end first opens the comm, not with the extension.
"""

from __future__ import annotations

import contextlib
from typing import Any

TARGET = "blitz.variables"


def install(ipython: Any) -> None:
    """Register the target; nothing outside ipykernel (no comms there)."""
    manager = getattr(getattr(ipython, "kernel", None), "comm_manager", None)
    if manager is None:
        return

    def on_open(comm: Any, _message: dict[str, Any]) -> None:
        try:
            from ..tools.variable_names import VariablesReply, variable_types

            names = variable_types(ipython.user_ns, getattr(ipython, "user_ns_hidden", None))
            comm.send(VariablesReply(variables=names).model_dump())
        finally:
            comm.close()

    manager.register_target(TARGET, on_open)


def uninstall(ipython: Any) -> None:
    """Undo `install` (`%unload_ext`, `%reload_ext`)."""
    manager = getattr(getattr(ipython, "kernel", None), "comm_manager", None)
    if manager is not None:
        with contextlib.suppress(KeyError):
            manager.unregister_target(TARGET, None)
