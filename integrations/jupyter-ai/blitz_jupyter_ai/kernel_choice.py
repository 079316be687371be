"""Which kernel the Blitz persona attaches `blitz acp` to (docs/outside-clients.md).

The persona runs inside the Jupyter server, so it sees the server's sessions: the notebook the
chat concerns is the one attached to the message that started the persona, else the notebook in
the chat file's own folder whose kernel was active most recently. With neither, there is no
kernel to attach to and `blitz acp` starts one of its own in the chat's folder. Kept free of
Jupyter imports so the rule is easy to read and to test.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class KernelChoice:
    """The notebook session whose kernel `blitz acp` attaches to, and why this one."""

    kernel_id: str
    notebook: str
    """The notebook's path, relative to the server's root."""
    reason: str
    """"attached" (to the message) or "folder" (the chat's folder, the most recently active)."""


def choose_kernel(
    sessions: Iterable[dict[str, Any]], chat_path: str, attached: Iterable[str] = ()
) -> KernelChoice | None:
    """The kernel of the notebook the chat concerns, from the server's session models
    (`/api/sessions`: `path`, `type`, `kernel.id`, `kernel.last_activity`); None: none."""
    notebooks = [s for s in sessions if _is_notebook(s) and (s.get("kernel") or {}).get("id")]
    wanted = [_clean(path) for path in attached]
    for path in wanted:  # the first attached notebook that has a running kernel
        for session in notebooks:
            if _clean(session["path"]) == path:
                return KernelChoice(session["kernel"]["id"], path, "attached")
    folder = posixpath.dirname(_clean(chat_path))
    here = [s for s in notebooks if posixpath.dirname(_clean(s["path"])) == folder]
    if not here:
        return None
    newest = max(here, key=lambda s: str(s["kernel"].get("last_activity") or ""))
    return KernelChoice(newest["kernel"]["id"], _clean(newest["path"]), "folder")


def _is_notebook(session: dict[str, Any]) -> bool:
    path = session.get("path")
    return isinstance(path, str) and (session.get("type") == "notebook" or path.endswith(".ipynb"))


def _clean(path: str) -> str:
    """A server-relative path as the server writes it: forward slashes, no leading `./` or `/`."""
    return posixpath.normpath(path.replace("\\", "/")).lstrip("/").removeprefix("./")
