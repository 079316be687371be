"""The line of `blitz mcp` and `blitz acp` into the live kernel (docs/mcp-server.md,
docs/acp.md): the kernel's own Jupyter connection (its connection file's ports and HMAC key),
so nothing new listens anywhere.

Each request is a silent execute of the endpoint's call (core/outside_wire.py); the kernel runs
it between the user's cells, one at a time. The reply is the execute's display of REPLY_MIME;
a streamed turn's events come before it as displays of EVENT_MIME, and the client's answers,
Stop and steering go the other way as comm_opens (`control`), which ipykernel handles while the
turn's async execute runs. A kernel that does not answer in time is busy (a cell or a `%%blitz`
turn runs): the request fails with that reason rather than hang the client.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.outside_wire import (
    CONTROL_TARGET,
    EVENT_MIME,
    NOT_LOADED,
    REPLY_MIME,
    OutsideControl,
    OutsideEvent,
    OutsideReply,
    OutsideRequest,
    request_code,
)

READY_TIMEOUT_S = 10.0
NO_LIMIT_S = 7 * 24 * 3600.0
"""How long a started streamed turn may run when no limit is given (zmq waits take no "forever")."""


class KernelLinkError(Exception):
    """The kernel cannot be reached or did not answer; the message is one line for the user."""


def add_kernel_options(command: argparse.ArgumentParser, default_timeout_s: float, waits_for: str) -> None:
    """The options by which an outside client names the kernel it attaches to, and how long a
    request waits for it (`blitz mcp` and `blitz acp` take the same)."""
    command.add_argument("--connection-file", metavar="F", help="the kernel's connection file (kernel-*.json)")
    command.add_argument("--kernel-id", metavar="ID", help="a kernel of a Jupyter server on this machine")
    command.add_argument(
        "--server-url", metavar="URL", help="that server's URL, checked to run the kernel (with --kernel-id)"
    )
    command.add_argument(
        "--call-timeout",
        type=float,
        default=default_timeout_s,
        metavar="S",
        help=f"seconds {waits_for} (default {default_timeout_s:g})",
    )


def find_connection_file(kernel_id: str) -> Path:
    """The connection file a Jupyter server on this machine wrote for `kernel_id`."""
    from jupyter_core.paths import jupyter_runtime_dir

    path = Path(jupyter_runtime_dir()) / f"kernel-{kernel_id}.json"
    if not path.is_file():
        raise KernelLinkError(
            f"no kernel {kernel_id!r} on this machine: {path} does not exist "
            "(the kernel id is in JupyterLab's kernel menu, or pass --connection-file)"
        )
    return path


def check_server_kernel(server_url: str, kernel_id: str) -> None:
    """Ask the Jupyter server at `server_url` whether it runs `kernel_id` (the token from the
    URL's `?token=` or JUPYTER_TOKEN): a wrong server or id is one line, before anything else."""
    import urllib.error
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(server_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise KernelLinkError(f"--server-url needs an http(s) URL, got {server_url!r}")
    token = urllib.parse.parse_qs(parts.query).get("token", [os.environ.get("JUPYTER_TOKEN", "")])[0]
    base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    request = urllib.request.Request(f"{base}/api/kernels/{urllib.parse.quote(kernel_id)}")
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=READY_TIMEOUT_S):  # noqa: S310 - the user's own server
            return
    except urllib.error.HTTPError as error:
        if error.code == 404:
            raise KernelLinkError(f"the server at {base} runs no kernel {kernel_id!r}") from None
        if error.code in (401, 403):
            raise KernelLinkError(
                f"the server at {base} refused the request (give its token: ?token=… or JUPYTER_TOKEN)"
            ) from None
        raise KernelLinkError(f"the server at {base} answered {error.code} for kernel {kernel_id!r}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise KernelLinkError(f"cannot reach the Jupyter server at {base}: {reason}") from None


class KernelLink:
    """A blocking client of one kernel; `ask` is safe to call from several threads."""

    def __init__(self, connection_file: Path, call_timeout_s: float, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        from jupyter_client.blocking.client import BlockingKernelClient

        self.call_timeout_s = call_timeout_s
        try:
            info = json.loads(connection_file.read_text())
        except FileNotFoundError:
            raise KernelLinkError(f"connection file {connection_file} does not exist") from None
        except (OSError, ValueError) as error:
            raise KernelLinkError(f"cannot read the connection file {connection_file}: {error}") from None
        if not isinstance(info, dict) or "shell_port" not in info or "key" not in info:
            raise KernelLinkError(f"{connection_file} is not a Jupyter connection file (no shell_port or key)")
        self.client = BlockingKernelClient(connection_file=os.fspath(connection_file))
        self.client.load_connection_file()
        self.client.start_channels()
        try:
            self.client.wait_for_ready(timeout=ready_timeout_s)
        except RuntimeError:
            self.client.stop_channels()
            raise KernelLinkError(
                f"the kernel of {connection_file} is not running (no answer within {ready_timeout_s:g} s)"
            ) from None
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()

    def ask(
        self,
        request: OutsideRequest,
        on_event: Callable[[OutsideEvent], None] | None = None,
        run_timeout_s: float | None = None,
    ) -> OutsideReply:
        """Send `request`, wait for its reply; KernelLinkError when the kernel cannot answer.
        A streamed turn's events go to `on_event` as they come; it may run `run_timeout_s`
        (None: no limit) once the kernel has started it."""
        request = request.model_copy(update={"expires_at": time.time() + self.call_timeout_s})
        with self._lock:
            with self._send_lock:
                msg_id = self.client.execute(request_code(request), silent=True, store_history=False, allow_stdin=False)
            return self._reply(msg_id, request.stream, on_event, run_timeout_s)

    def control(self, control: OutsideControl) -> None:
        """Send a control to the running streamed turn (an answer, Stop, a steering message):
        a comm_open on the shell channel, which the kernel handles while the turn runs."""
        import uuid

        content = {"comm_id": uuid.uuid4().hex, "target_name": CONTROL_TARGET, "data": control.model_dump(mode="json")}
        with self._send_lock:
            self.client.shell_channel.send(self.client.session.msg("comm_open", content))

    def _reply(
        self,
        msg_id: str,
        stream: str | None = None,
        on_event: Callable[[OutsideEvent], None] | None = None,
        run_timeout_s: float | None = None,
    ) -> OutsideReply:
        deadline = time.monotonic() + self.call_timeout_s
        reply: OutsideReply | None = None
        error: str | None = None
        while True:
            message = self._next(deadline)
            kind, content = message["msg_type"], message["content"]
            data = content.get("data", {}) if kind == "display_data" else {}
            if stream is not None and isinstance(data.get(EVENT_MIME), dict):
                event = OutsideEvent.model_validate(data[EVENT_MIME])
                if event.stream == stream and on_event is not None:
                    # the turn started: from now on it runs as long as it needs to
                    deadline = time.monotonic() + (run_timeout_s if run_timeout_s is not None else NO_LIMIT_S)
                    on_event(event)
                continue
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if kind == "display_data" and REPLY_MIME in content.get("data", {}):
                reply = OutsideReply.model_validate(content["data"][REPLY_MIME])
            elif kind == "error":
                error = f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "status" and content.get("execution_state") == "idle":
                break
        if reply is not None:
            return reply
        if error is not None and ("ModuleNotFoundError" in error or "blitz_kernel" in error):
            raise KernelLinkError(NOT_LOADED)
        raise KernelLinkError(f"the kernel did not answer the request ({error or 'no reply'})")

    def _next(self, deadline: float) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise queue.Empty
            return dict(self.client.get_iopub_msg(timeout=remaining))
        except queue.Empty:
            raise KernelLinkError(
                f"kernel busy: no answer within {self.call_timeout_s:g} s (a cell or a %%blitz turn is running; "
                "it will not run later)"
            ) from None

    def close(self) -> None:
        self.client.stop_channels()
