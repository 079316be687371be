"""Which front end is there: one that can show the live widget, or none (plain outputs)?

A kernel cannot ask. At a turn's start the probe opens a comm with a target no front end
registers (`blitz.frontend_probe`): JupyterLab, Notebook 7 and other front ends built on
@jupyterlab/services answer an unknown target by closing the comm; nbclient, nbconvert,
papermill and a bare jupyter_client answer nothing. Closed → "widget"; no answer within the
timeout → "plain".

Often the kernel knows without asking (`known_mode`): the cell's execute request came from
Python's jupyter_client — nbclient, nbconvert, papermill, `blitz run`, jupyter console — which
names its messages `<session>_<pid>_<n>` and sends no cell metadata, and none of these shows
widgets. Browser front ends (@jupyterlab/services: JupyterLab, Notebook 7, VS Code) name them
with UUIDs and send the cell's `cellId`; for them, and for any client we cannot tell, the
probe asks. `JPY_SESSION_NAME` says nothing either way: jupyter_server sets it for a browser's
notebook, and `blitz run` sets it too.

The comm opener and the timer are injected, so the decision can be tested without a kernel
(and without waiting out a real timeout). What earlier probes learnt is kept per kernel
(`FrontEndMemory`): once a kernel has only ever seen silence, later probes wait less. A
timeout that fires late (the kernel's loop was blocked, so an answer may sit unread) reads on
a little before it decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

Mode = Literal["widget", "plain"]

PROBE_TARGET = "blitz.frontend_probe"
PROBE_TIMEOUT_S = 10.0
"""How long a turn waits for a front end to answer the probe. JupyterLab answers in a few ms;
the wait is generous because only a browser-like client is probed at all (`known_mode` decides
jupyter_client's requests at once), and a browser on a busy machine may take seconds — a
timeout there would show a turn the user is watching as plain text."""
PROBE_TIMEOUT_AFTER_HEADLESS_S = 2.0
"""The wait once this kernel has seen no front end and never one (a browser-like client
without the extension): later cells wait less."""
LATE_S = 0.5
"""A timeout that runs this much later than it was due found the kernel's loop blocked (a
slow disk, a long synchronous step): the front end's answer may be waiting unread."""
LATE_GRACE_S = 1.0
"""Then the probe reads on this long before it decides (at most LATE_REARMS times)."""
LATE_REARMS = 3


_PYTHON_CLIENT_ID = re.compile(r"^(?P<session>.+)_\d+_\d+$")
"""jupyter_client's `Session.msg_id`: `f"{session}_{os.getpid()}_{counter}"`."""


def known_mode(request: Mapping[str, Any] | None) -> Mode | None:
    """`plain` when the cell's execute request (the kernel's parent message) came from a
    client that cannot show widgets (module doc); None when only the probe can tell."""
    if not request:
        return None
    header = request.get("header") or {}
    metadata = request.get("metadata") or {}
    if not isinstance(header, Mapping) or not isinstance(metadata, Mapping) or "cellId" in metadata:
        return None
    match = _PYTHON_CLIENT_ID.match(str(header.get("msg_id", "")))
    if match is None or match["session"] != header.get("session"):
        return None
    return "plain"


def cell_request(kernel: Any) -> Mapping[str, Any] | None:
    """The execute request of the cell that is running (ipykernel's `get_parent`), or None."""
    get_parent = getattr(kernel, "get_parent", None)
    if not callable(get_parent):
        return None
    try:
        request = get_parent("shell")
    except Exception:  # an older or unusual kernel: let the probe ask
        return None
    return request if isinstance(request, Mapping) else None


class Closable(Protocol):
    def close(self) -> None: ...


class Cancellable(Protocol):
    def cancel(self) -> None: ...


OpenComm = Callable[[dict[str, Any], Callable[[], None]], Closable]
"""Opens the probe comm with `data`; calls the callback when the front end closes it."""
CallLater = Callable[[float, Callable[[], None]], Cancellable]
"""Runs a callback after a delay (the event loop's `call_later`)."""


def open_probe_comm(data: dict[str, Any], on_closed: Callable[[], None]) -> Closable:
    """The real probe: a comm to a target nobody registers (raises without comm machinery)."""
    from comm import create_comm

    probe = create_comm(target_name=PROBE_TARGET, data=data)
    probe.on_close(lambda _message: on_closed())
    return probe  # type: ignore[no-any-return]


class FrontEndMemory:
    """What a kernel learnt about its front end from earlier probes."""

    def __init__(self) -> None:
        self.front_end_seen = False
        self.headless_seen = False

    def probe_timeout(self) -> float:
        if self.headless_seen and not self.front_end_seen:
            return PROBE_TIMEOUT_AFTER_HEADLESS_S
        return PROBE_TIMEOUT_S

    def remember(self, mode: Mode) -> None:
        if mode == "widget":
            self.front_end_seen = True
        else:
            self.headless_seen = True


KERNEL_MEMORY = FrontEndMemory()
"""This kernel's memory (one per process: a kernel has one front end connection at a time)."""


class FrontEndProbe:
    """Asks once whether a front end can show the widget; `answer` resolves to the mode.

    `start` opens the probe (idempotent); `decide` records an answer (the front end's, the
    timer's, or the cell's own when the turn cannot wait any longer) and closes the probe.
    """

    def __init__(
        self,
        *,
        open_comm: OpenComm = open_probe_comm,
        call_later: CallLater | None = None,
        memory: FrontEndMemory = KERNEL_MEMORY,
        now: Callable[[], float] | None = None,
    ) -> None:
        loop = asyncio.get_running_loop()
        self.memory = memory
        self.answer: asyncio.Future[Mode] = loop.create_future()
        self._open_comm = open_comm
        self._call_later: CallLater = call_later or loop.call_later
        self._now = now or loop.time
        self._comm: Closable | None = None
        self._timer: Cancellable | None = None
        self._due = 0.0
        self._rearms = 0
        self._started = False

    @property
    def decided(self) -> bool:
        return self.answer.done()

    @property
    def mode(self) -> Mode | None:
        return self.answer.result() if self.answer.done() else None

    def start(self, turn_id: str) -> None:
        """Ask (once). Without comm machinery nobody could see a widget: plain at once."""
        if self._started or self.decided:
            return
        self._started = True
        try:
            self._comm = self._open_comm({"turn_id": turn_id}, lambda: self.decide("widget"))
        except Exception:
            self.decide("plain")
            return
        if self.decided:  # answered at once
            self.close()
            return
        self._arm(self.memory.probe_timeout())

    def _arm(self, delay: float) -> None:
        self._due = self._now() + delay
        self._timer = self._call_later(delay, self._timed_out)

    def _timed_out(self) -> None:
        """No answer in time: plain, unless the timeout itself ran late (module doc)."""
        self._timer = None
        if self.decided:
            return
        if self._now() - self._due > LATE_S and self._rearms < LATE_REARMS:
            self._rearms += 1
            self._arm(LATE_GRACE_S)
            return
        self.decide("plain")

    def decide(self, mode: Mode) -> None:
        """Record the answer (the first one counts) and close the probe."""
        if self.decided:
            return
        self.answer.set_result(mode)
        self.memory.remember(mode)
        self.close()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._comm is not None:
            comm, self._comm = self._comm, None
            with contextlib.suppress(Exception):
                comm.close()
