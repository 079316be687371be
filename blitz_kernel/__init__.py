"""blitz_kernel: an LLM agent engine inside the Jupyter kernel.

`%load_ext blitz_kernel` registers the magics; `from blitz_kernel import Workspace` is the
Python API, and `kernel_workspace()` the Workspace that the kernel's `%%blitz` cells use. Importing this package stays cheap: litellm and the front end load lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .engine.turn.setup import TurnResult
    from .engine.workspace import Workspace

__all__ = [
    "TurnResult",
    "Workspace",
    "__version__",
    "kernel_workspace",
    "load_ipython_extension",
    "unload_ipython_extension",
]


def __getattr__(name: str) -> Any:
    if name == "Workspace":
        from .engine.workspace import Workspace

        return Workspace
    if name == "TurnResult":
        from .engine.turn.setup import TurnResult

        return TurnResult
    raise AttributeError(name)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt labextension lives, for `jupyter labextension develop .`."""
    return [{"src": "labextension", "dest": "blitz-kernel"}]


def kernel_workspace() -> Workspace:
    """The Workspace this kernel's `%%blitz` cells use (after `%load_ext blitz_kernel`): the
    same sessions, model and configuration, for Python code in the notebook."""
    from .notebook.extension import kernel_workspace as current

    workspace: Workspace = current()
    return workspace


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext blitz_kernel`: register the magics and the `await` input transformer."""
    from .notebook.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext blitz_kernel`: undo everything `load_ipython_extension` did."""
    from .notebook.extension import unload

    unload(ipython)
