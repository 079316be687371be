"""The kernel manager of the kernels our own commands start (`blitz run`, the demo): IPC
sockets in Jupyter's runtime folder instead of TCP ports on localhost.

ipykernel warns on every start that a TCP kernel "is running over TCP without encryption";
an IPC socket is a file in the user's own runtime folder, reachable by nobody else, so the
warning does not apply, and our runs stay quiet. The sockets are removed when the kernel shuts
down; they never go into the working folder. A socket path has at most 107 bytes: where the
runtime folder is too deep, a private folder in the temp folder (mode 700, ours) holds them,
and where neither will do the kernel stays on TCP.
"""

from __future__ import annotations

import os
import stat
import tempfile
import uuid
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.paths import jupyter_runtime_dir
from traitlets import CaselessStrEnum, default


class LocalKernelManager(AsyncKernelManager):
    """An AsyncKernelManager on IPC transport (nbclient and papermill take it by class)."""

    transport = CaselessStrEnum(["tcp", "ipc"], config=True)

    @default("transport")
    def _transport_default(self) -> str:
        return "ipc" if _socket_folder() is not None else "tcp"

    @default("ip")
    def _ip_default(self) -> str:
        # jupyter_client's own default for IPC is "kernel-ipc" in the working folder
        folder = _socket_folder() if self.transport == "ipc" else None
        if folder is None:
            return "127.0.0.1"
        return str(folder / f"blitz-{uuid.uuid4().hex[:12]}-ipc")


SOCKET_NAME_ROOM = 40
"""Bytes a socket name takes after its folder: "/blitz-<12 hex>-ipc-<port number>"."""


def _socket_folder() -> Path | None:
    """A folder only we can enter whose path leaves room for the socket names, or None."""
    if os.name != "posix":
        return None
    runtime = Path(jupyter_runtime_dir())
    if len(os.fsencode(runtime)) + SOCKET_NAME_ROOM <= 107:
        runtime.mkdir(parents=True, exist_ok=True)
        return runtime
    private = Path(tempfile.gettempdir()) / f"blitz-ipc-{os.getuid()}"
    try:
        private.mkdir(mode=0o700, exist_ok=True)
        info = private.lstat()
    except OSError:
        return None
    ours = stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) == 0o700
    return private if ours and len(os.fsencode(private)) + SOCKET_NAME_ROOM <= 107 else None
