"""The notebook bridge over a real kernel: the test plays the labextension.

It opens the `blitz.notebook` comm the way the extension does (a hello), then answers the
kernel's requests while a `%%blitz` cell runs, exactly as the browser would: comm messages
on the shell channel, read back from iopub. The model is the fake OpenAI server, so the
assertions look at what the model was sent as each tool's result.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from tests.fakeserver import FakeOpenAIServer
from tests.helpers import wire

from .driver import CellRun, KernelDriver

TARGET = "blitz.notebook"
Answer = Callable[[dict[str, Any]], dict[str, Any] | None]

CELLS = [
    {
        "index": 0,
        "id": "intro",
        "cell_type": "markdown",
        "source": "# Sales",
        "execution_count": None,
        "running": False,
        "outputs": [],
    },
    {
        "index": 1,
        "id": "load",
        "cell_type": "code",
        "source": "df = load()",
        "execution_count": 1,
        "running": False,
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "loaded 3 rows\n"}],
    },
    {
        "index": 2,
        "id": "ask",
        "cell_type": "code",
        "source": "%%blitz\nfix the notebook",
        "execution_count": None,
        "running": True,
        "outputs": [],
    },
]


class PlayedFrontEnd:
    """The labextension's side of the comm, over jupyter_client."""

    def __init__(self, kernel: KernelDriver) -> None:
        self.kernel = kernel
        self.comm_id = ""
        self.requests: list[dict[str, Any]] = []
        self.pings: list[dict[str, Any]] = []

    def _send(self, msg_type: str, content: dict[str, Any]) -> None:
        client = self.kernel.client
        client.shell_channel.send(client.session.msg(msg_type, content))

    def connect(self, wait: bool = True) -> None:
        """Open a comm with a hello; wait for the kernel's welcome unless a cell is running
        (its messages must not be skipped then)."""
        self.comm_id = uuid.uuid4().hex
        hello = {"kind": "hello", "protocol": 1, "client": "test", "version": "0", "path": "work/nb.ipynb"}
        self._send("comm_open", {"comm_id": self.comm_id, "target_name": TARGET, "data": hello})
        if not wait:
            return
        deadline = time.monotonic() + 30
        while True:
            message = self.kernel._next_iopub(deadline)
            content = message["content"]
            if message["msg_type"] == "comm_msg" and content["comm_id"] == self.comm_id:
                assert content["data"] == {"kind": "welcome", "protocol": 1}
                return

    def disconnect(self) -> None:
        self._send("comm_close", {"comm_id": self.comm_id, "data": {}})

    def run(self, code: str, answer: Answer, timeout: float = 60) -> CellRun:
        """Run a cell, answering every request on our comm with `answer(request)` (None: stay
        silent) and every ping by connecting anew; return the cell's outputs."""
        msg_id = self.kernel.submit(code)
        deadline = time.monotonic() + timeout
        outputs: list[tuple[str, dict[str, Any]]] = []
        while True:
            message = self.kernel._next_iopub(deadline)
            kind, content = message["msg_type"], message["content"]
            if kind == "comm_open" and content["target_name"] == TARGET:
                self.pings.append(content["data"])
                self._send("comm_close", {"comm_id": content["comm_id"], "data": {}})
                self.connect(wait=False)
                continue
            if kind == "comm_msg" and content["comm_id"] == self.comm_id and content["data"].get("kind") == "request":
                request = content["data"]
                self.requests.append(request)
                reply = answer(request)
                if reply is not None:
                    self._send(
                        "comm_msg", {"comm_id": self.comm_id, "data": {"kind": "reply", "id": request["id"], **reply}}
                    )
                continue
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind not in ("status", "execute_input"):
                outputs.append((kind, content))
        reply_message = self.kernel.client.get_shell_msg(timeout=10)
        while reply_message["parent_header"].get("msg_id") != msg_id:
            reply_message = self.kernel.client.get_shell_msg(timeout=10)
        return CellRun(reply=reply_message["content"], outputs=outputs)


def notebook(request: dict[str, Any]) -> dict[str, Any]:
    """Answers like the extension over a three-cell notebook."""
    op, params = request["op"], request["params"]
    if op == "read_cells":
        chosen = CELLS if params["indices"] is None else [CELLS[i] for i in params["indices"]]
        return {"ok": True, "result": {"path": "work/nb.ipynb", "cell_count": 3, "cells": chosen}}
    if op == "list_cells":
        return {
            "ok": True,
            "result": {
                "path": "work/nb.ipynb",
                "cell_count": 3,
                "cells": [
                    {
                        **{key: c[key] for key in ("index", "id", "cell_type", "execution_count", "running")},
                        "first_line": c["source"].split("\n")[0],
                        "line_count": len(c["source"].split("\n")),
                        "output_count": len(c["outputs"]),
                    }
                    for c in CELLS
                ],
            },
        }
    if op == "insert_cell":
        return {"ok": True, "result": {"index": params["index"], "id": "new", "cell_count": 4}}
    if op == "replace_cell":
        return {
            "ok": True,
            "result": {
                "index": params["index"],
                "id": "load",
                "cell_type": "code",
                "previous_source": "df = load()",
                "cell_count": 3,
            },
        }
    if op == "delete_cell":
        cell = CELLS[params["index"]]
        return {
            "ok": True,
            "result": {
                "deleted": {"id": cell["id"], "cell_type": cell["cell_type"], "source": cell["source"]},
                "cell_count": 2,
            },
        }
    return {"ok": False, "error": {"code": "unknown_op", "message": f"unknown op {op}"}}


def tool_results(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    """Every tool result the model received, in order, parsed."""
    return wire.tool_results(server.requests[-1].body)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def front_end(kernel: KernelDriver) -> PlayedFrontEnd:
    played = PlayedFrontEnd(kernel)
    played.connect()
    return played


def test_read_goes_through_the_front_end_while_the_cell_runs(
    front_end: PlayedFrontEnd, server: FakeOpenAIServer
) -> None:
    server.enqueue(call("notebook_read"), call("notebook_read", cells=[1], include_outputs=False), {"text": "Read it."})
    cell = front_end.run("%%blitz -s read\nWhat is in this notebook?", notebook)
    assert cell.status == "ok", cell.reply
    assert [(r["op"], r["params"]) for r in front_end.requests] == [
        ("read_cells", {"indices": None, "include_outputs": True, "include_images": False, "max_output_chars": 8000}),
        ("read_cells", {"indices": [1], "include_outputs": False, "include_images": False, "max_output_chars": 8000}),
    ]
    assert len({r["id"] for r in front_end.requests}) == 2
    first, second = tool_results(server)
    assert first["result"] == (
        "notebook work/nb.ipynb — 3 cells; live from the open notebook\n\n"
        "[0] markdown · id intro\n# Sales\n\n"
        "[1] code · execution count 1 · id load\ndf = load()\n→ stdout:\nloaded 3 rows\n\n"
        "[2] code · RUNNING NOW (the %%blitz cell of this turn) · id ask\n%%blitz\nfix the notebook"
    )
    assert second["result"].endswith("[1] code · execution count 1 · id load\ndf = load()")


def test_insert_replace_and_delete(front_end: PlayedFrontEnd, server: FakeOpenAIServer) -> None:
    server.enqueue(
        call("notebook_edit", action="insert", index=3, source="df.describe()"),
        call("notebook_edit", action="replace", index=1, source="df = load(limit=10)"),
        call("notebook_edit", action="delete", index=0),
        {"text": "Done."},
    )
    cell = front_end.run("%%blitz -s edit --approve allow\nTidy up.", notebook)
    assert cell.status == "ok", cell.reply
    mark = {"session": "edit", "turn": 0, "edited": True}  # who made the cell, in its metadata
    assert [(r["op"], r["params"]) for r in front_end.requests] == [
        ("insert_cell", {"index": 3, "cell_type": "code", "source": "df.describe()", "metadata": mark}),
        ("replace_cell", {"index": 1, "source": "df = load(limit=10)", "metadata": mark}),
        ("delete_cell", {"index": 0}),
    ]
    inserted, replaced, deleted = (r["result"] for r in tool_results(server))
    assert inserted.startswith("inserted a code cell at index 3; the notebook now has 4 cells")
    assert replaced.endswith("-df = load()\n+df = load(limit=10)")
    assert deleted.startswith("deleted cell 0 (markdown: # Sales)")


def test_an_error_reply_reaches_the_model_as_an_error(front_end: PlayedFrontEnd, server: FakeOpenAIServer) -> None:
    server.enqueue(call("notebook_edit", action="delete", index=7), {"text": "No such cell."})

    def refuse(request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": False, "error": {"code": "bad_index", "message": "no cell 7: the notebook has 3 cells"}}

    cell = front_end.run("%%blitz -s refuse --approve allow\nDelete cell 7.", refuse)
    assert cell.status == "ok", cell.reply
    assert tool_results(server) == [
        {"error": "delete_cell failed in the notebook: no cell 7: the notebook has 3 cells"}
    ]


def test_a_silent_front_end_times_out_with_a_clear_message(front_end: PlayedFrontEnd, server: FakeOpenAIServer) -> None:
    front_end.kernel.run("from blitz_kernel.notebook import bridge\nbridge.current().request_timeout_s = 0.5")
    server.enqueue(call("notebook_read"), {"text": "The notebook did not answer."})
    try:
        cell = front_end.run("%%blitz -s silent\nRead the notebook.", lambda request: None)
    finally:
        front_end.kernel.run("bridge.current().request_timeout_s = 15")
    assert cell.status == "ok", cell.reply
    [result] = tool_results(server)
    assert result["error"].startswith("the notebook front end did not answer read_cells within 0.5 s")


def test_after_the_front_end_leaves_edits_are_refused(front_end: PlayedFrontEnd, server: FakeOpenAIServer) -> None:
    front_end.disconnect()
    server.enqueue(call("notebook_edit", action="delete", index=0), {"text": "I cannot edit it."})
    cell = front_end.run("%%blitz -s gone --approve allow\nDelete the first cell.", notebook)
    assert cell.status == "ok", cell.reply
    assert front_end.requests == []
    [result] = tool_results(server)
    assert result["error"].startswith("notebook_edit needs the notebook open in JupyterLab or Notebook 7")


def test_list_cells_is_a_request_like_the_others(front_end: PlayedFrontEnd) -> None:
    cell = front_end.run(
        "from blitz_kernel.notebook import bridge\n"
        "listed = await bridge.current().request('list_cells', {})\n"
        "print([c['id'] for c in listed['cells']])",
        notebook,
    )
    assert cell.status == "ok", cell.reply
    assert cell.stdout == "['intro', 'load', 'ask']\n"
    assert [r["op"] for r in front_end.requests] == ["list_cells"]


def test_a_reloaded_extension_pings_and_the_front_end_comes_back(
    front_end: PlayedFrontEnd, server: FakeOpenAIServer
) -> None:
    reloaded = front_end.run("%reload_ext blitz_kernel\n%blitz_config model_retries=0", notebook)
    assert reloaded.status == "ok", reloaded.reply
    assert front_end.pings == [{"kind": "ping", "protocol": 1}]
    server.enqueue(call("notebook_edit", action="delete", index=0), {"text": "Deleted."})
    cell = front_end.run("%%blitz -s back --approve allow\nDelete the first cell.", notebook)
    assert cell.status == "ok", cell.reply
    assert [r["op"] for r in front_end.requests] == ["delete_cell"]
    assert tool_results(server)[0]["result"].startswith("deleted cell 0")
