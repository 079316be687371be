"""`%load_ext blitz_kernel`: register magics and the await transformer, warm the model
library in the background. Kept cheap (well under 0.1 s): `load()` imports only the notebook
modules, none of the engine and no pydantic (the magic modules import those when a magic runs),
and the warm-up thread, started last so it does not compete with `load()` itself, imports the
engine meanwhile. It loads litellm only when the configured model (or a fallback) needs it; an
OpenAI-compatible model takes the direct path, so such a kernel never imports it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from . import bridge, cell_log, variables_comm
from .transform import await_blitz_cells, keep_btw_questions

_state: dict[str, Any] = {}


def load(ipython: Any) -> None:
    from .clients import ClientMagics
    from .magics import BlitzMagics
    from .mcp_magic import McpMagics
    from .replay_magic import ReplayMagics
    from .review_magic import ReviewMagics
    from .safety_magics import SafetyMagics
    from .skills_magic import SkillsMagics
    from .undo_magics import UndoMagics

    if await_blitz_cells not in ipython.input_transformers_post:
        ipython.input_transformers_post.append(await_blitz_cells)
    if keep_btw_questions not in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.append(keep_btw_questions)
    magics = BlitzMagics(ipython)
    # the other magic families share the main one's workspace (created on first use)
    registered = [
        magics,
        McpMagics(ipython),
        SafetyMagics(ipython, magics),
        UndoMagics(ipython, magics),
        ReviewMagics(ipython, magics),
        SkillsMagics(ipython, magics),
        ReplayMagics(ipython, magics),
        ClientMagics(ipython),
    ]
    for family in registered:
        ipython.register_magics(family)
    _state["magics"], _state["registered"] = magics, registered
    bridge.install(ipython)
    cell_log.install(ipython)
    variables_comm.install(ipython)  # inline completion's variable names (docs/completion.md)
    _state["warm_up"] = _warm_up_in_background()


def kernel_workspace() -> Any:
    """The Workspace this kernel's `%%blitz` cells use, for Python code in the notebook that
    wants the same sessions (steer a turn from an event handler, read a session's history)."""
    magics = _state.get("magics")
    if magics is None:
        from ..errors import BlitzError

        raise BlitzError("blitz_kernel is not loaded in this kernel: run %load_ext blitz_kernel first")
    return magics.workspace()


def loaded_magics() -> Any | None:
    """The kernel's `BlitzMagics` (its workspace and current session), None when the extension
    is not loaded: the outside endpoint (outside.py) says so in one line."""
    return _state.get("magics")


def unload(ipython: Any) -> None:
    bridge.uninstall(ipython)
    cell_log.uninstall(ipython)
    variables_comm.uninstall(ipython)
    if await_blitz_cells in ipython.input_transformers_post:
        ipython.input_transformers_post.remove(await_blitz_cells)
    if keep_btw_questions in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.remove(keep_btw_questions)
    magics = _state.pop("magics", None)
    workspace = getattr(magics, "_workspace", None)
    if workspace is not None:
        workspace.mcp.close_soon()  # MCP servers end with the extension
        # let go of the session locks, so a reloaded extension can take them again
        workspace.sessions.close()
    for family in _state.pop("registered", []):
        for kind, names in family.magics.items():
            for name in names:
                ipython.magics_manager.magics[kind].pop(name, None)


def _warm_up_in_background() -> threading.Thread:
    """Import the engine and the configured models' library off the main thread so the first
    turn starts fast (the workspace is the kernel's working directory, as the magics open it).
    The variables comm's reply models come first: a completion request waits for them, and
    only 300 ms (docs/completion.md)."""

    def warm() -> None:
        try:
            import blitz_kernel.tools.variable_names  # noqa: F401, I001 - first, as said above
            import blitz_kernel.engine.workspace  # noqa: F401
            from blitz_kernel.config.loading import load_config
            from blitz_kernel.models.factory import warm_up

            config = load_config(Path.cwd())
            warm_up([config.model, *config.fallback_models])
        except Exception:  # a failed warm-up is retried, loudly, by the first real call
            pass

    thread = threading.Thread(target=warm, name="blitz-warm-up", daemon=True)
    thread.start()
    return thread
