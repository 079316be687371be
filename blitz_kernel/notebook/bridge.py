"""The kernel side of the notebook bridge: the comm `blitz.notebook` to the labextension.

Why a comm: the kernel never sees the notebook, only the code it is sent. The JupyterLab /
Notebook 7 extension (labextension/src) holds the notebook's model, so notebook_read and
notebook_edit ask it, and ipykernel (>= 7.4) dispatches comm messages during an async cell
(docs/architecture.md). The front end opens one comm per notebook
panel, so replies go only to the panel that owns the notebook; since any client of the kernel
can say hello, the bridge serves the client that ran the current cell. Who opens the comm, the
message shapes and whose notebook it is: NotebookBridge. Both sides are checked against the
models of bridge_messages.py; a malformed reply fails its request with one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections.abc import Callable
from typing import Any

COMM_TARGET = "blitz.notebook"
PROTOCOL = 1
REQUEST_TIMEOUT_S = 15.0
HANDSHAKE_GRACE_S = 1.0
"""How long a request waits for a front end's hello right after a ping (a `%load_ext` and a
`%%blitz` in the same cell); otherwise a missing front end is reported at once."""

_current: NotebookBridge | None = None


def current() -> NotebookBridge | None:
    """The bridge of this kernel, once the extension is loaded inside ipykernel."""
    return _current


def _create_comm(target_name: str, data: dict[str, Any]) -> Any:
    import comm  # ipykernel replaces comm.create_comm with its own when it starts

    return comm.create_comm(target_name=target_name, data=data)


class NotebookBridge:
    """Request/reply over the front end's comm (tools/notebook.py's NotebookAccess).

    Who opens the comm. The front end does, one comm per notebook panel, so replies go only to
    the panel that owns the notebook (a console attached to the same kernel never sees them).
    It opens one when its kernel already has a `blitz.notebook` comm (it asks with
    comm_info_request on connecting, which covers page reloads) and whenever the kernel pings:
    the kernel opens a comm to the front end's target `blitz.notebook` when the extension loads
    and before each cell while no front end is connected. A front end with the extension answers
    a ping by opening its own comm and closing the ping; one without it closes the ping; a
    headless client ignores it, and the ping then stays open so it is sent only once.

    Message shapes (protocol 1). Every message is the `data` of a comm message:

        front end → kernel, comm_open data:
            {"kind": "hello", "protocol": 1, "client": "jupyterlab", "version": "0.1.0",
             "path": "dir/analysis.ipynb"}
        kernel → front end, on that comm:   {"kind": "welcome", "protocol": 1}
        kernel → front end, comm_open data of a ping: {"kind": "ping", "protocol": 1}
        kernel → front end, a request:
            {"kind": "request", "id": "3f2a9c1e-7", "op": OP, "params": {...}}
        front end → kernel, the reply (exactly one per request):
            {"kind": "reply", "id": "3f2a9c1e-7", "ok": true, "result": {...}}
            {"kind": "reply", "id": "3f2a9c1e-7", "ok": false,
             "error": {"code": "bad_index", "message": "no cell 12: the notebook has 5 cells"}}

        OP and its params → result:
          list_cells   {}  → {"path", "cell_count", "cells": [{"index", "id", "cell_type",
                       "execution_count", "running", "first_line", "line_count", "output_count"}]}
          read_cells   {"indices": [int] | null, "include_outputs": bool, "include_images": bool,
                       "max_output_chars": int} → {"path", "cell_count", "cells": [CELL]}
                       CELL = {"index", "id", "cell_type", "source", "execution_count", "running",
                       "outputs": [OUTPUT]}; OUTPUT is {"output_type": "stream", "name", "text"},
                       {"output_type": "error", "ename", "evalue", "traceback"} or
                       {"output_type": "execute_result" | "display_data", "mime_types", "text",
                       "images": [{"mime_type", "width"?, "height"?, "data"? (base64, when
                       include_images)}]}
          insert_cell  {"index", "cell_type", "source", "metadata"?} → {"index", "id", "cell_count"}
          replace_cell {"index", "source", "cell_type"?, "metadata"?} → {"index", "id", "cell_type",
                       "previous_source", "cell_count"}
          delete_cell  {"index"} → {"deleted": {"id", "cell_type", "source"}, "cell_count"}
          set_outputs  {"id", "outputs": [nbformat output], "execution_count", "metadata"?}
                       → {"index", "id", "previous_outputs", "previous_execution_count",
                       "previous_metadata"}: the outputs of a cell notebook_run ran (or undo
                       puts back); "metadata" is the cell's `blitz` metadata key.
          ask_permission {"question", "client", "calls": [{"id", "name", "preview"}],
                       "timeout_s"?} → {"answer": "allow" | "always" | "deny", "reason"?}:
                       a card in the notebook asks about an outside client's calls
                       (docs/mcp-server.md); the reply comes when the person answers.
          close_permission {"question"} → {"closed"}: take the card back (answered in the
                       ACP client first, expired, or its call was cancelled).
        CELL may carry "blitz", the cell's `blitz` metadata (who made or ran it).
        Error codes: bad_request, bad_index, running_cell, unknown_op, internal.

    Replies that come after their request timed out (or from a stale comm) are ignored.

    Whose notebook. Any client of the kernel can open a comm and say hello, so a hello alone does
    not make a front end "the notebook": the bridge serves the client (jupyter session id, the
    `session` of its message headers) that ran the current cell, else the one that loaded the
    extension. Hellos from other clients are kept, unused, until their client runs a cell (a
    reloaded page gets a new session id and takes over with its next cell); a second front end
    on the same kernel never receives requests meant for the first.
    """

    def __init__(
        self,
        *,
        open_comm: Callable[[str, dict[str, Any]], Any] = _create_comm,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        handshake_grace_s: float = HANDSHAKE_GRACE_S,
    ) -> None:
        self.request_timeout_s = request_timeout_s
        self.handshake_grace_s = handshake_grace_s
        self.client: dict[str, Any] = {}
        """The connected front end's hello (client, version, notebook path)."""
        self._shell: Any = None
        self._open_comm = open_comm
        self._comm: Any = None
        self._pending: dict[str, tuple[asyncio.Future[dict[str, Any]], Any, str]] = {}
        self._ids = itertools.count(1)
        self._prefix = uuid.uuid4().hex[:8]
        self._ping: Any = None
        self._ping_sent_at = 0.0
        self._hello_waiters: list[asyncio.Future[None]] = []
        self._hellos: dict[str | None, tuple[Any, dict[str, Any]]] = {}
        """Every live front-end comm with its hello, by the client's session id."""
        self.loader_session: str | None = None
        """The client that loaded the extension (see the class docstring)."""
        self.cell_session: str | None = None
        """The client that ran the current (or last) cell."""
        self.cell_ids: dict[int, str] = {}
        """Execution count → the id of the notebook cell that ran as In[count] in this kernel
        (JupyterLab sends it with each execute request; notebook_run records its own), so a
        cell showing a count from an earlier kernel is not taken for one that ran here."""

    @property
    def connected(self) -> bool:
        return self._comm is not None

    # -- comm wiring: ipykernel calls these on the kernel's main thread -----------------------

    def on_comm_open(self, comm: Any, msg: dict[str, Any]) -> None:
        """A front end said hello. It carries the requests when its client ran the current
        cell or loaded the extension (the newest hello of that client wins: its old comm may
        be dead); other clients' hellos wait unused."""
        from .bridge_messages import Hello

        data = msg.get("content", {}).get("data") or {}
        try:
            valid = isinstance(data, dict) and Hello.model_validate(data).protocol == PROTOCOL
        except ValueError:
            valid = False
        if not valid:
            comm.close(data={"kind": "error", "message": f"expected a hello for protocol {PROTOCOL}"})
            return
        session = _session_of(msg)
        self._hellos[session] = (comm, dict(data))
        comm.on_msg(self._on_msg)
        comm.on_close(lambda close_msg: self._on_close(comm))
        comm.send({"kind": "welcome", "protocol": PROTOCOL})
        self._choose()

    def _owners(self) -> list[str]:
        return [s for s in dict.fromkeys((self.cell_session, self.loader_session)) if s is not None]

    def _choose(self) -> None:
        """Serve the comm of the client that ran the cell, else of the one that loaded the
        extension; with neither known (no kernel parent: tests, plain IPython), the newest."""
        owners = self._owners()
        chosen = next((self._hellos[s] for s in owners if s in self._hellos), None)
        if chosen is None and not owners and self._hellos:
            chosen = list(self._hellos.values())[-1]
        self._comm, self.client = chosen if chosen is not None else (None, {})
        if self._comm is not None:
            waiters, self._hello_waiters = self._hello_waiters, []
            for waiter in waiters:
                _resolve(waiter, None)

    def on_pre_run_cell(self, info: Any = None) -> None:
        """Before each cell: bind to the client running it; ask front ends to connect while
        none of the owners' is."""
        session = _parent_session(self._shell)
        if session is not None:
            self.cell_session = session
        cell_id = _parent_cell_id(self._shell)
        if cell_id is not None and getattr(info, "store_history", False):
            self.cell_ids[int(self._shell.execution_count) - 1] = cell_id  # the counter moved on already
        self._choose()
        self.ping()

    def ping(self) -> None:
        """Open a comm to the front end's target; a front end with the extension answers by
        opening its own comm. At most one ping is outstanding."""
        if self._comm is not None or self._ping is not None:
            return
        try:
            ping = self._open_comm(COMM_TARGET, {"kind": "ping", "protocol": PROTOCOL})
        except Exception:  # no kernel to send it (plain IPython): nothing can connect anyway
            return
        self._ping, self._ping_sent_at = ping, time.monotonic()
        ping.on_close(lambda close_msg: self._ping_closed(ping))

    def _ping_closed(self, ping: Any) -> None:
        if self._ping is ping:
            self._ping = None

    def _on_close(self, comm: Any) -> None:
        for session, (held, _) in list(self._hellos.items()):
            if held is comm:
                del self._hellos[session]
        if comm is self._comm:
            self._choose()
        for request_id, (future, sent_on, op) in list(self._pending.items()):
            if sent_on is comm:
                del self._pending[request_id]
                _resolve(
                    future,
                    _request_error(
                        f"the notebook front end disconnected (tab closed or page reloaded) before answering {op}",
                        no_answer=True,
                    ),
                )

    def _on_msg(self, msg: dict[str, Any]) -> None:
        from pydantic import ValidationError

        from .bridge_messages import REPLY, ErrorReply, checked_result, problems

        data = msg.get("content", {}).get("data") or {}
        if not isinstance(data, dict) or data.get("kind") != "reply":
            from .dropped import drop

            drop("the notebook bridge", data, "the front end sends only replies on this comm")
            return
        entry = self._pending.pop(str(data.get("id")), None)
        if entry is None:
            return  # the request timed out or was cancelled: its answer has no reader
        future, _, op = entry
        try:
            reply = REPLY.validate_python(data)
        except ValidationError as error:
            _resolve(
                future, _request_error(f"the notebook front end sent a malformed reply to {op}: {problems(error)}")
            )
            return
        if isinstance(reply, ErrorReply):
            message = reply.error.message or "no reason given"
            _resolve(future, _request_error(f"{op} failed in the notebook: {message}"))
            return
        try:
            _resolve(future, checked_result(op, reply.result))
        except ValueError as error:
            _resolve(future, _request_error(f"the notebook front end sent a malformed {op} result: {error}"))

    # -- requests (NotebookAccess) --------------------------------------------------------------

    async def request(self, op: str, params: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send `op` and wait for its reply (up to `timeout_s`, else `request_timeout_s`); see
        the class docstring for the shapes. Params that do not fit the op are an error before
        anything is sent."""
        limit = self.request_timeout_s if timeout_s is None else timeout_s
        from .bridge_messages import request_data

        request_id = f"{self._prefix}-{next(self._ids)}"
        try:
            data = request_data(request_id, op, params)
        except ValueError as error:
            raise _request_error(str(error)) from None
        comm = self._comm or await self._await_hello()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = (future, comm, op)
        try:
            comm.send(data)
            async with asyncio.timeout(limit):
                return await future
        except TimeoutError:
            raise _request_error(
                f"the notebook front end did not answer {op} within {limit:g} s "
                "(is the notebook tab still open?); a change may still have been made, so read "
                "the notebook before trying again",
                no_answer=True,
            ) from None
        finally:
            self._pending.pop(request_id, None)

    async def _await_hello(self) -> Any:
        """The front end's comm, waiting briefly when a ping has just gone out."""
        remaining = self._ping_sent_at + self.handshake_grace_s - time.monotonic()
        if self._ping is not None and remaining > 0:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._hello_waiters.append(waiter)
            try:
                async with asyncio.timeout(remaining):
                    await waiter
            except TimeoutError:
                pass
            finally:
                if waiter in self._hello_waiters:
                    self._hello_waiters.remove(waiter)
        if self._comm is None:
            from ..tools.notebook import NotebookUnavailableError

            raise NotebookUnavailableError(
                "no JupyterLab/Notebook 7 front end with the blitz_kernel extension is connected to this kernel"
            )
        return self._comm

    def close(self) -> None:
        """Close the comms (the extension is unloading); pending requests fail."""
        for comm in dict.fromkeys((*(held for held, _ in self._hellos.values()), self._comm, self._ping)):
            if comm is not None:
                with contextlib.suppress(Exception):  # best effort: the kernel may be going away
                    comm.close()
                self._on_close(comm)
        self._ping = None


def _request_error(message: str, *, no_answer: bool = False) -> Exception:
    # imported here: the bridge is installed by `%load_ext`, which must not load pydantic
    from ..tools.notebook import NotebookNoAnswerError, NotebookRequestError

    return NotebookNoAnswerError(message) if no_answer else NotebookRequestError(message)


def _resolve(future: asyncio.Future[Any], outcome: Any) -> None:
    """Settle `future` on its own loop's thread (comm callbacks may come from another)."""

    def settle() -> None:
        if future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    future.get_loop().call_soon_threadsafe(settle)


def _session_of(msg: dict[str, Any]) -> str | None:
    """The jupyter session id of the client that sent `msg` (None when it carries none)."""
    header = msg.get("header") if isinstance(msg, dict) else None
    session = header.get("session") if isinstance(header, dict) else None
    return session if isinstance(session, str) and session else None


def _parent_session(ipython: Any) -> str | None:
    """The session id of the client whose request the kernel is handling now."""
    get_parent = getattr(getattr(ipython, "kernel", None), "get_parent", None)
    if get_parent is None:
        return None
    try:
        parent = get_parent()
    except Exception:
        return None
    return _session_of(parent) if isinstance(parent, dict) else None


def _parent_cell_id(ipython: Any) -> str | None:
    """The notebook cell id the front end sent with the request being handled (`cellId`)."""
    get_parent = getattr(getattr(ipython, "kernel", None), "get_parent", None)
    try:
        metadata = get_parent().get("metadata") if get_parent is not None else None
    except Exception:
        return None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else None


def install(ipython: Any) -> NotebookBridge | None:
    """Register the comm target and the ping; None outside ipykernel (no comms there)."""
    global _current
    manager = getattr(getattr(ipython, "kernel", None), "comm_manager", None)
    if manager is None:
        return None
    bridge = NotebookBridge()
    bridge._shell = ipython
    bridge.loader_session = bridge.cell_session = _parent_session(ipython)
    manager.register_target(COMM_TARGET, bridge.on_comm_open)
    ipython.events.register("pre_run_cell", bridge.on_pre_run_cell)
    _current = bridge
    bridge.ping()
    return bridge


def uninstall(ipython: Any) -> None:
    """Undo `install` (`%unload_ext`, `%reload_ext`)."""
    global _current
    bridge, _current = _current, None
    if bridge is None:
        return
    manager = getattr(getattr(ipython, "kernel", None), "comm_manager", None)
    if manager is not None:
        manager.unregister_target(COMM_TARGET, bridge.on_comm_open)
    with contextlib.suppress(ValueError):
        ipython.events.unregister("pre_run_cell", bridge.on_pre_run_cell)
    bridge.close()
