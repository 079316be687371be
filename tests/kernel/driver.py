"""Drives a real ipykernel over jupyter_client the way a notebook front end does."""

from __future__ import annotations

import os
import queue
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager


@dataclass
class CellRun:
    """What one execute request produced."""

    reply: dict[str, Any]
    outputs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.reply["status"])

    @property
    def ename(self) -> str | None:
        return self.reply.get("ename")

    @property
    def evalue(self) -> str:
        return str(self.reply.get("evalue", ""))

    @property
    def stdout(self) -> str:
        return "".join(c["text"] for t, c in self.outputs if t == "stream" and c["name"] == "stdout")

    @property
    def displays(self) -> dict[str, str]:
        """The final Markdown of every display, after in-place updates, by display id."""
        shown: dict[str, str] = {}
        for kind, content in self.outputs:
            if kind in ("display_data", "update_display_data"):
                display_id = content.get("transient", {}).get("display_id", f"anon-{len(shown)}")
                shown[display_id] = content["data"].get("text/markdown", content["data"].get("text/plain", ""))
        return shown

    def count(self, kind: str) -> int:
        return sum(1 for t, _ in self.outputs if t == kind)


class KernelDriver:
    """One kernel process with a working directory and environment of the test's choosing."""

    def __init__(
        self, cwd: Path, env: dict[str, str], kernel_name: str = "python3", kernel_spec_manager: Any = None
    ) -> None:
        extra = {"kernel_spec_manager": kernel_spec_manager} if kernel_spec_manager is not None else {}
        self.manager = KernelManager(kernel_name=kernel_name, **extra)
        self.manager.start_kernel(cwd=str(cwd), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def submit(self, code: str, *, browser: bool = False) -> str:
        """Send a cell; `browser`: as JupyterLab sends it (@jupyterlab/services names messages
        with UUIDs and adds the cell's id to the metadata), so the kernel cannot tell this
        client from a browser and asks with its front-end probe. Without it the request is
        jupyter_client's own, as nbclient and papermill send it."""
        if not browser:
            return str(self.client.execute(code))
        content = {
            "code": code,
            "silent": False,
            "store_history": True,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        }
        message = self.client.session.msg(
            "execute_request",
            content,
            metadata={"cellId": str(uuid.uuid4()), "deletedCells": [], "recordTiming": False},
        )
        message["header"]["msg_id"] = message["msg_id"] = str(uuid.uuid4())
        self.client.shell_channel.send(message)
        return str(message["msg_id"])

    def collect(
        self, msg_id: str, timeout: float = 60, already: list[tuple[str, dict[str, Any]]] | None = None
    ) -> CellRun:
        """Read until the cell is idle; `already` holds outputs `wait_for_output` consumed."""
        deadline = time.monotonic() + timeout
        outputs = [(t, c) for t, c in already or [] if t not in ("status", "execute_input")]
        while True:
            message = self._next_iopub(deadline)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind not in ("status", "execute_input"):
                outputs.append((kind, content))
        while True:
            reply = self.client.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                return CellRun(reply=reply["content"], outputs=outputs)

    def run(self, code: str, timeout: float = 60) -> CellRun:
        return self.collect(self.submit(code), timeout)

    def wait_for_output(self, msg_id: str, needle: str, timeout: float = 30) -> list[tuple[str, dict[str, Any]]]:
        """Read iopub until a stream output of `msg_id` contains `needle`; returns what was read,
        to pass to `collect(..., already=...)`."""
        deadline = time.monotonic() + timeout
        seen: list[tuple[str, dict[str, Any]]] = []
        while True:
            message = self._next_iopub(deadline)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            seen.append((message["msg_type"], message["content"]))
            if message["msg_type"] == "stream" and needle in message["content"]["text"]:
                return seen

    def interrupt(self) -> None:
        self.manager.interrupt_kernel()

    def _next_iopub(self, deadline: float) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the kernel did not finish in time")
        try:
            return dict(self.client.get_iopub_msg(timeout=remaining))
        except queue.Empty:
            raise TimeoutError("the kernel did not finish in time") from None

    def shutdown(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def kernel_environment(home: Path, **extra: str) -> dict[str, str]:
    """The kernel's environment: this one without BLITZ_* settings, a private HOME (so no
    user config leaks in), and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    env.update(HOME=str(home), LITELLM_LOCAL_MODEL_COST_MAP="True", PYDEVD_DISABLE_FILE_VALIDATION="1")
    env.update(extra)
    return env


# -- playing the browser's part for the turn widget (additive: tests/kernel/test_widget_comm.py) --

PROBE_TARGET = "blitz.frontend_probe"
TURN_VIEW_ID = "blitz_kernel.notebook.widgets.view.TurnView"


class WidgetFrontEnd:
    """What JupyterLab does for one `%%blitz` cell, over jupyter_client: it closes the front-end
    probe comm (as @jupyterlab/services does for an unknown comm target), keeps each TurnView's
    synced state from `comm_open` and `update` messages, says `ready` as a rendered view does,
    and sends the same custom messages as static/turn.js."""

    def __init__(self, driver: KernelDriver, msg_id: str, *, answer_probe: bool = True, render: bool = True) -> None:
        self.driver = driver
        self.msg_id = msg_id
        self.answer_probe = answer_probe
        self.render = render
        self.views: dict[str, dict[str, Any]] = {}
        """comm id → synced state, for every TurnView opened (one per turn), oldest first."""
        self.others: dict[str, dict[str, Any]] = {}
        """comm id → synced state of every other anywidget the cell showed (Undo this turn)."""
        self.closed: set[str] = set()
        self.probes: list[str] = []
        """Front-end probe comms the kernel opened."""
        self.outputs: list[tuple[str, dict[str, Any]]] = []
        """The cell's own outputs (parent = the execute request)."""
        self.foreign_outputs: list[tuple[str, dict[str, Any]]] = []
        """Outputs parented to anything else (e.g. a comm message): there must be none."""
        self.idle = False

    @property
    def view_id(self) -> str:
        """The newest TurnView's comm id."""
        if not self.views:
            raise AssertionError("no TurnView was opened")
        return list(self.views)[-1]

    @property
    def state(self) -> dict[str, Any]:
        return self.views[self.view_id]

    def pump_until(self, condition: Any, timeout: float = 30, what: str = "a condition") -> None:
        """Read iopub, playing the front end, until `condition()` holds."""
        deadline = time.monotonic() + timeout
        while not condition():
            try:
                message = self.driver._next_iopub(deadline)
            except TimeoutError:
                raise TimeoutError(f"waited {timeout} s for {what}; widget state: {self.views}") from None
            self._handle(message)

    def _handle(self, message: dict[str, Any]) -> None:
        kind, content = message["msg_type"], message["content"]
        parent = message["parent_header"].get("msg_id")
        if kind == "comm_open":
            self._on_open(content)
        elif kind == "comm_msg" and (content["comm_id"] in self.views or content["comm_id"] in self.others):
            data = content["data"]
            if data.get("method") == "update":
                synced = self.views.get(content["comm_id"]) or self.others[content["comm_id"]]
                synced.update(data.get("state", {}))
        elif kind == "comm_close":
            self.closed.add(content["comm_id"])
        elif kind in ("stream", "display_data", "update_display_data", "execute_result", "error", "clear_output"):
            (self.outputs if parent == self.msg_id else self.foreign_outputs).append((kind, content))
        elif kind == "status" and parent == self.msg_id and content["execution_state"] == "idle":
            self.idle = True

    def _on_open(self, content: dict[str, Any]) -> None:
        if content.get("target_name") == PROBE_TARGET:
            self.probes.append(content["comm_id"])
            if self.answer_probe:
                self._send("comm_close", {"comm_id": content["comm_id"], "data": {}})
            return
        state = content.get("data", {}).get("state", {})
        if state.get("_anywidget_id") == TURN_VIEW_ID:
            self.views[content["comm_id"]] = dict(state)
            if self.render:
                self.send("ready")
        elif state.get("_anywidget_id"):
            self.others[content["comm_id"]] = dict(state)

    def send(self, kind: str, **fields: Any) -> None:
        """A custom message from the newest TurnView, as turn.js sends it (`model.send`)."""
        self.send_to(self.view_id, {"kind": kind, "turn_id": self.state["turn_id"], **fields})

    def send_to(self, comm_id: str, content: dict[str, Any]) -> None:
        self._send("comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": content}})

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        client = self.driver.client
        client.shell_channel.send(client.session.msg(msg_type, content))

    def other(self, anywidget_id: str) -> tuple[str, dict[str, Any]]:
        """(comm id, synced state) of the newest anywidget of that class the cell showed."""
        found = [
            (comm_id, state) for comm_id, state in self.others.items() if state.get("_anywidget_id") == anywidget_id
        ]
        if not found:
            raise AssertionError(f"no {anywidget_id} was opened")
        return found[-1]

    def finish(self, timeout: float = 60) -> CellRun:
        """Play on until the cell is idle; its reply and outputs."""
        self.pump_until(lambda: self.idle, timeout, "the cell to finish")
        deadline = time.monotonic() + timeout
        while True:
            reply = self.driver.client.get_shell_msg(timeout=max(1.0, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == self.msg_id:
                return CellRun(reply=reply["content"], outputs=self.outputs)
