"""Two front ends on one kernel. A second client that sends the bridge's hello
must not become "the notebook": requests go to the client that ran the cell (or loaded the
extension), never to another one. The second client is a real second jupyter_client
connection (its own session id), sending the comm messages a second browser tab would."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.session import Session

from tests.fakeserver import FakeOpenAIServer

from .driver import CellRun, KernelDriver
from .test_bridge import TARGET, PlayedFrontEnd, call, notebook, tool_results


class Intruder:
    """Another client of the same kernel that says the bridge's hello for its own notebook."""

    def __init__(self, kernel: KernelDriver) -> None:
        self.kernel = kernel
        own = kernel.manager.session
        # a client of its own: manager.client() would share the driver's session id
        self.client = kernel.manager.client(session=Session(key=own.key, signature_scheme=own.signature_scheme))
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)
        self.comm_id = uuid.uuid4().hex
        assert self.client.session.session != kernel.client.session.session

    def hello(self) -> None:
        data = {"kind": "hello", "protocol": 1, "client": "intruder", "version": "0", "path": "intruder.ipynb"}
        self.client.shell_channel.send(
            self.client.session.msg("comm_open", {"comm_id": self.comm_id, "target_name": TARGET, "data": data})
        )
        # iopub goes to every client: wait (on the driver's) until the kernel has welcomed it,
        # so the hello is surely handled before the next cell
        deadline = time.monotonic() + 30
        while True:
            message = self.kernel._next_iopub(deadline)
            content = message["content"]
            if message["msg_type"] == "comm_msg" and content.get("comm_id") == self.comm_id:
                assert content["data"] == {"kind": "welcome", "protocol": 1}
                return

    def close(self) -> None:
        self.client.shell_channel.send(self.client.session.msg("comm_close", {"comm_id": self.comm_id, "data": {}}))
        self.client.stop_channels()


class WatchingFrontEnd(PlayedFrontEnd):
    """The notebook's own front end, also noting any request that goes to another comm."""

    def __init__(self, kernel: KernelDriver, other_comm: str) -> None:
        super().__init__(kernel)
        self.other_comm = other_comm
        self.stolen: list[dict[str, Any]] = []

    def run(self, code: str, answer: Any, timeout: float = 60) -> CellRun:
        original = self.kernel._next_iopub

        def next_iopub(deadline: float) -> dict[str, Any]:
            message = original(deadline)
            content = message["content"]
            theirs = message["msg_type"] == "comm_msg" and content.get("comm_id") == self.other_comm
            if theirs and content["data"].get("kind") == "request":
                self.stolen.append(content["data"])
            return message

        self.kernel._next_iopub = next_iopub  # type: ignore[method-assign]
        try:
            return super().run(code, answer, timeout)
        finally:
            del self.kernel._next_iopub


@pytest.fixture
def intruder(kernel: KernelDriver) -> Iterator[Intruder]:
    other = Intruder(kernel)
    yield other
    other.close()


def test_a_second_clients_hello_does_not_take_over_the_notebook(
    kernel: KernelDriver, server: FakeOpenAIServer, intruder: Intruder
) -> None:
    own = WatchingFrontEnd(kernel, intruder.comm_id)
    own.connect()
    intruder.hello()  # newer than ours: it used to win
    server.enqueue(call("notebook_read", cells=[1], include_outputs=False), {"text": "Read it."})
    cell = own.run("%%blitz -s twofronts\nWhat is in cell 1?", notebook)
    assert cell.status == "ok", cell.reply
    assert [r["op"] for r in own.requests] == ["read_cells"]
    assert own.stolen == []
    [result] = tool_results(server)
    assert result["result"].startswith("notebook work/nb.ipynb")
    own.disconnect()


def test_with_no_front_end_of_its_own_the_cell_is_not_served_by_another_client(
    kernel: KernelDriver, server: FakeOpenAIServer, intruder: Intruder
) -> None:
    intruder.hello()
    server.enqueue(call("notebook_read"), {"text": "No notebook."})
    cell = kernel.run("%%blitz -s headless_two\nRead the notebook.")
    assert cell.status == "ok", cell.reply
    stolen = [c for kind, c in cell.outputs if kind == "comm_msg" and c.get("comm_id") == intruder.comm_id]
    assert stolen == []
    [result] = tool_results(server)
    assert result["error"].startswith(
        "cannot see the notebook: no JupyterLab/Notebook 7 front end with the blitz_kernel extension is connected"
    )
