"""notebook_read / notebook_edit and the kernel side of the bridge, without a kernel.

The bridge is driven through comm stand-ins that behave like ipykernel's (send, on_msg,
on_close, close); the front end's answers are the message shapes bridge.py documents. The
kernel tests (tests/kernel/test_bridge.py) run the same protocol over a real kernel.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.notebook.bridge import COMM_TARGET, PROTOCOL, NotebookBridge
from blitz_kernel.tools import builtin_tools
from blitz_kernel.tools.images import view_image
from blitz_kernel.tools.notebook import (
    NEEDS_EXTENSION,
    NotebookRequestError,
    NotebookUnavailableError,
    find_notebook_file,
    notebook_read,
)
from blitz_kernel.tools.notebook_run import notebook_edit
from blitz_kernel.tools.registry import Tool, ToolContext, ToolError, ToolKind, ToolOutput

from .test_images import tiny_png


class FakeComm:
    """ipykernel's comm as the bridge uses it; `sent` is what went to the front end."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.closed = False
        self._on_msg: Callable[[dict[str, Any]], None] | None = None
        self._on_close: Callable[[dict[str, Any]], None] | None = None

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)

    def on_msg(self, callback: Callable[[dict[str, Any]], None]) -> None:
        self._on_msg = callback

    def on_close(self, callback: Callable[[dict[str, Any]], None]) -> None:
        self._on_close = callback

    def close(self, data: dict[str, Any] | None = None) -> None:
        self.closed = True

    # what the front end does
    def reply(self, data: dict[str, Any]) -> None:
        assert self._on_msg is not None
        self._on_msg({"content": {"data": data}})

    def close_from_front_end(self) -> None:
        assert self._on_close is not None
        self._on_close({"content": {"data": {}}})


NO_CELLS = {"path": "nb.ipynb", "cell_count": 0, "cells": []}
"""A list_cells result of an empty notebook, as the extension sends it."""


def hello(comm: FakeComm, bridge: NotebookBridge, **extra: Any) -> None:
    data = {"kind": "hello", "protocol": PROTOCOL, "client": "test", "path": "nb.ipynb", **extra}
    bridge.on_comm_open(comm, {"content": {"data": data}})


async def next_request(comm: FakeComm) -> dict[str, Any]:
    """The next request the bridge sends (lets the bridge's coroutine run until it has)."""
    seen = len([m for m in comm.sent if m["kind"] == "request"])
    for _ in range(100):  # a few loop iterations: the request goes out without any real wait
        requests = [m for m in comm.sent if m["kind"] == "request"]
        if len(requests) > seen:
            return requests[-1]
        await asyncio.sleep(0)
    raise AssertionError("the bridge sent no request")


# -- the bridge --------------------------------------------------------------------------------


async def test_hello_is_welcomed_and_requests_resolve_by_id() -> None:
    bridge, comm = NotebookBridge(), FakeComm()
    hello(comm, bridge)
    assert comm.sent == [{"kind": "welcome", "protocol": PROTOCOL}]
    assert bridge.connected and bridge.client["path"] == "nb.ipynb"
    task = asyncio.ensure_future(bridge.request("list_cells", {}))
    request = await next_request(comm)
    assert request == {"kind": "request", "id": request["id"], "op": "list_cells", "params": {}}
    comm.reply({"kind": "reply", "id": "someone-else", "ok": True, "result": {"wrong": True}})
    comm.reply({"kind": "reply", "id": request["id"], "ok": True, "result": NO_CELLS})
    assert await task == NO_CELLS


async def test_a_malformed_reply_fails_its_request_in_one_line_saying_what_is_wrong() -> None:
    bridge, comm = NotebookBridge(), FakeComm()
    hello(comm, bridge)
    task = asyncio.ensure_future(bridge.request("list_cells", {}))
    request = await next_request(comm)
    comm.reply({"kind": "reply", "id": request["id"], "ok": True, "result": {"cell_count": 2}})
    with pytest.raises(NotebookRequestError, match="malformed list_cells result: path: Field required"):
        await task
    task = asyncio.ensure_future(bridge.request("delete_cell", {"index": 0}))
    request = await next_request(comm)
    comm.reply({"kind": "reply", "id": request["id"], "ok": False, "error": "nope"})
    with pytest.raises(NotebookRequestError, match="malformed reply to delete_cell"):
        await task


async def test_a_result_keeps_what_the_protocol_defines_and_drops_unknown_fields() -> None:
    bridge, comm = NotebookBridge(), FakeComm()
    hello(comm, bridge)
    task = asyncio.ensure_future(bridge.request("insert_cell", {"index": 0, "cell_type": "code", "source": "1"}))
    request = await next_request(comm)
    assert request["params"] == {"index": 0, "cell_type": "code", "source": "1"}
    comm.reply(
        {"kind": "reply", "id": request["id"], "ok": True, "result": {"index": 0, "id": "a", "cell_count": 1, "x": 1}}
    )
    assert await task == {"index": 0, "id": "a", "cell_count": 1}


async def test_params_that_do_not_fit_the_op_are_refused_before_anything_is_sent() -> None:
    bridge, comm = NotebookBridge(), FakeComm()
    hello(comm, bridge)
    with pytest.raises(NotebookRequestError, match="bad params for replace_cell: source: Field required"):
        await bridge.request("replace_cell", {"index": 0})
    with pytest.raises(NotebookRequestError, match="unknown notebook bridge op 'move_cell'"):
        await bridge.request("move_cell", {})
    assert [m["kind"] for m in comm.sent] == ["welcome"]


def test_a_hello_of_another_shape_is_refused() -> None:
    bridge, comm = NotebookBridge(), FakeComm()
    bridge.on_comm_open(comm, {"content": {"data": {"kind": "hello", "protocol": PROTOCOL, "client": 7}}})
    assert comm.closed and not bridge.connected


async def test_an_error_reply_becomes_an_error_the_model_reads() -> None:
    bridge, comm = NotebookBridge(), FakeComm()
    hello(comm, bridge)
    task = asyncio.ensure_future(bridge.request("delete_cell", {"index": 9}))
    request = await next_request(comm)
    comm.reply(
        {
            "kind": "reply",
            "id": request["id"],
            "ok": False,
            "error": {"code": "bad_index", "message": "no cell 9: the notebook has 2 cells"},
        }
    )
    with pytest.raises(
        NotebookRequestError, match="delete_cell failed in the notebook: no cell 9: the notebook has 2 cells"
    ):
        await task


async def test_no_answer_times_out_with_a_clear_message_and_a_late_reply_is_ignored() -> None:
    bridge, comm = NotebookBridge(request_timeout_s=0.05), FakeComm()
    hello(comm, bridge)
    with pytest.raises(NotebookRequestError, match="did not answer read_cells within 0.05 s"):
        await bridge.request("read_cells", {})
    comm.reply({"kind": "reply", "id": comm.sent[-1]["id"], "ok": True, "result": {}})  # no effect


async def test_a_front_end_that_goes_away_fails_its_pending_requests() -> None:
    bridge, comm = NotebookBridge(), FakeComm()
    hello(comm, bridge)
    task = asyncio.ensure_future(bridge.request("read_cells", {}))
    await next_request(comm)
    comm.close_from_front_end()
    with pytest.raises(NotebookRequestError, match="disconnected"):
        await task
    assert not bridge.connected


async def test_without_a_front_end_requests_fail_at_once() -> None:
    bridge = NotebookBridge(open_comm=lambda target, data: FakeComm())
    with pytest.raises(NotebookUnavailableError, match="no JupyterLab/Notebook 7 front end"):
        await bridge.request("read_cells", {})  # no ping went out: nothing to wait for


async def test_a_request_right_after_a_ping_waits_for_the_hello() -> None:
    opened: list[tuple[str, dict[str, Any], FakeComm]] = []

    def open_comm(target: str, data: dict[str, Any]) -> FakeComm:
        opened.append((target, data, FakeComm()))
        return opened[-1][2]

    bridge, comm = NotebookBridge(open_comm=open_comm, handshake_grace_s=30), FakeComm()
    bridge.on_pre_run_cell()
    bridge.on_pre_run_cell()  # one ping outstanding at most
    assert [(t, d) for t, d, _ in opened] == [(COMM_TARGET, {"kind": "ping", "protocol": PROTOCOL})]
    task = asyncio.ensure_future(bridge.request("list_cells", {}))
    await asyncio.sleep(0)
    hello(comm, bridge)  # the front end answers the ping
    request = await next_request(comm)
    comm.reply({"kind": "reply", "id": request["id"], "ok": True, "result": NO_CELLS})
    assert await task == NO_CELLS


async def test_the_newest_hello_wins_and_other_comms_are_refused() -> None:
    bridge, old, new, stranger = NotebookBridge(), FakeComm(), FakeComm(), FakeComm()
    hello(old, bridge)
    hello(new, bridge)
    task = asyncio.ensure_future(bridge.request("list_cells", {}))
    request = await next_request(new)
    new.reply({"kind": "reply", "id": request["id"], "ok": True, "result": NO_CELLS})
    assert await task == NO_CELLS
    bridge.on_comm_open(stranger, {"content": {"data": {"kind": "hello", "protocol": 99}}})
    assert stranger.closed and bridge.connected


# -- the tools, against a front end that answers like the extension -------------------------


@dataclass
class FrontEnd:
    """A NotebookAccess holding cells the way the extension reports them."""

    cells: list[dict[str, Any]]
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    available: bool = True

    async def request(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        if not self.available:
            raise NotebookUnavailableError("nobody there")
        self.requests.append((op, params))
        if op == "read_cells":
            indices = params.get("indices")
            chosen = self.cells if indices is None else [self.cells[i] for i in indices]
            return {"path": "work/nb.ipynb", "cell_count": len(self.cells), "cells": chosen}
        if op == "insert_cell":
            return {"index": params["index"], "id": "new", "cell_count": len(self.cells) + 1}
        if op == "replace_cell":
            cell = self.cells[params["index"]]
            return {
                "index": params["index"],
                "id": cell["id"],
                "cell_type": params.get("cell_type", cell["cell_type"]),
                "previous_source": cell["source"],
                "cell_count": len(self.cells),
            }
        if op == "delete_cell":
            cell = self.cells[params["index"]]
            return {
                "deleted": {"id": cell["id"], "cell_type": cell["cell_type"], "source": cell["source"]},
                "cell_count": len(self.cells) - 1,
            }
        raise NotebookRequestError(f"unknown op {op}")


@dataclass
class NotebookKernel:
    notebook: Any = None
    user_ns: dict[str, Any] = field(default_factory=dict)


PNG = tiny_png(4, 3)
CELLS = [
    {
        "index": 0,
        "id": "c0",
        "cell_type": "markdown",
        "source": "# Sales",
        "execution_count": None,
        "running": False,
        "outputs": [],
    },
    {
        "index": 1,
        "id": "c1",
        "cell_type": "code",
        "source": "df.plot()\nprint('hi')",
        "execution_count": 4,
        "running": False,
        "outputs": [
            {"output_type": "stream", "name": "stdout", "text": "hi\n"},
            {
                "output_type": "display_data",
                "mime_types": ["image/png", "text/plain"],
                "text": "<Figure>",
                "images": [{"mime_type": "image/png", "width": 4, "height": 3, "data": base64.b64encode(PNG).decode()}],
            },
            {"output_type": "error", "ename": "KeyError", "evalue": "'x'", "traceback": "\x1b[31mKeyError\x1b[0m: 'x'"},
        ],
    },
    {
        "index": 2,
        "id": "c2",
        "cell_type": "code",
        "source": "%%blitz\nplot the sales",
        "execution_count": None,
        "running": True,
        "outputs": [],
    },
]


async def use(tool: Tool, ctx: ToolContext, **arguments: Any) -> Any:
    return await tool.func(tool.parse_arguments(json.dumps(arguments)), ctx)


def context(tmp_path: Path, front_end: FrontEnd | None) -> ToolContext:
    return ToolContext(workspace=tmp_path, kernel=NotebookKernel(notebook=front_end))


def test_names_kinds_and_arguments_match_the_interface() -> None:
    tools = {t.name: t for t in builtin_tools()}
    assert tools["notebook_read"].kind is ToolKind.READ_ONLY
    assert tools["notebook_edit"].kind is ToolKind.MUTATING
    assert set(tools["notebook_read"].spec().parameters["properties"]) == {"cells", "include_outputs"}
    assert set(tools["notebook_edit"].spec().parameters["properties"]) == {
        "action",
        "index",
        "source",
        "cell_type",
        "run",
    }


async def test_read_shows_cells_outputs_images_and_the_running_cell(tmp_path: Path) -> None:
    front_end = FrontEnd(CELLS)
    text = await use(notebook_read, context(tmp_path, front_end))
    assert front_end.requests == [
        ("read_cells", {"indices": None, "include_outputs": True, "include_images": False, "max_output_chars": 8000})
    ]
    assert text == "\n\n".join(
        [
            "notebook work/nb.ipynb — 3 cells; live from the open notebook",
            "[0] markdown · id c0\n# Sales",
            "[1] code · execution count 4 · FAILED (KeyError) · id c1\ndf.plot()\nprint('hi')\n→ stdout:\nhi\n→ display:\n<Figure>\n"
            "→ image/png 4×3: view_image(output=\"cell:1:1\")\n→ error: KeyError: 'x'\nKeyError: 'x'",
            "[2] code · RUNNING NOW (the %%blitz cell of this turn) · id c2\n%%blitz\nplot the sales",
        ]
    )


async def test_read_without_outputs_and_chosen_cells(tmp_path: Path) -> None:
    text = await use(notebook_read, context(tmp_path, FrontEnd(CELLS)), cells=[1], include_outputs=False)
    assert text.endswith("[1] code · execution count 4 · FAILED (KeyError) · id c1\ndf.plot()\nprint('hi')")


async def test_view_image_shows_a_cells_image_output(tmp_path: Path) -> None:
    front_end = FrontEnd(CELLS)
    output = await use(view_image, context(tmp_path, front_end), output="cell:1")
    assert isinstance(output, ToolOutput)
    assert output.text == "cell:1:1: PNG 4×3, 1 KB (output of notebook cell 1); the image follows"
    assert base64.b64decode(output.images[0].data_base64) == PNG
    assert front_end.requests[-1][1]["include_images"] is True
    with pytest.raises(ToolError, match="cell 1 has 1 image output"):
        await use(view_image, context(tmp_path, front_end), output="cell:1:2")


async def test_edit_insert_replace_delete(tmp_path: Path) -> None:
    front_end = FrontEnd(CELLS)
    ctx = context(tmp_path, front_end)
    inserted = await use(notebook_edit, ctx, action="insert", index=3, source="df.describe()")
    assert inserted.startswith("inserted a code cell at index 3; the notebook now has 4 cells")
    replaced = await use(notebook_edit, ctx, action="replace", index=1, source="df.plot()\nprint('bye')")
    assert replaced == (
        "replaced the source of cell 1 (code); it has not been run:\n--- before\n+++ after\n"
        "@@ -1,2 +1,2 @@\n df.plot()\n-print('hi')\n+print('bye')"
    )
    deleted = await use(notebook_edit, ctx, action="delete", index=0)
    assert (
        deleted == "deleted cell 0 (markdown: # Sales); the notebook now has 2 cells (cells after it moved up by one)"
    )
    assert [op for op, _ in front_end.requests] == ["insert_cell", "replace_cell", "delete_cell"]
    assert "cell_type" not in front_end.requests[1][1]  # replace keeps the type unless asked
    await use(notebook_edit, ctx, action="replace", index=0, source="x = 1", cell_type="code")
    assert front_end.requests[-1][1]["cell_type"] == "code"


async def test_edit_needs_source_and_the_extension(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="insert needs `source`"):
        await use(notebook_edit, context(tmp_path, FrontEnd(CELLS)), action="insert", index=0)
    for front_end in (None, FrontEnd(CELLS, available=False)):
        with pytest.raises(NotebookUnavailableError) as caught:
            await use(notebook_edit, context(tmp_path, front_end), action="delete", index=0)
        assert str(caught.value) == NEEDS_EXTENSION


# -- without the extension: the file on disk ------------------------------------------------


def write_notebook(path: Path) -> None:
    notebook = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["# Title\n", "text"]},
            {
                "cell_type": "code",
                "id": "k",
                "metadata": {},
                "execution_count": 2,
                "source": "1 + 1",
                "outputs": [
                    {
                        "output_type": "execute_result",
                        "execution_count": 2,
                        "metadata": {},
                        "data": {"text/plain": ["2"], "image/png": base64.b64encode(PNG).decode()},
                    }
                ],
            },
        ],
    }
    path.write_text(json.dumps(notebook))


async def test_read_falls_back_to_the_file_and_says_it_may_be_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_notebook(tmp_path / "analysis.ipynb")
    monkeypatch.chdir(tmp_path)
    ctx = ToolContext(
        workspace=tmp_path,
        kernel=NotebookKernel(
            notebook=FrontEnd(CELLS, available=False), user_ns={"__session__": "sub/dir/analysis.ipynb"}
        ),
    )
    text = await use(notebook_read, ctx)
    assert text.startswith(f"notebook {tmp_path / 'analysis.ipynb'} — 2 cells; read from the file on disk")
    assert "unsaved edits and outputs of this session may be missing" in text
    assert (
        '[1] code · execution count 2 · id k\n1 + 1\n→ result:\n2\n→ image/png 4×3: view_image(output="cell:1:1")'
        in text
    )
    image = await use(view_image, ctx, output="cell:1")
    assert base64.b64decode(image.images[0].data_base64) == PNG


async def test_read_without_extension_or_file_explains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    with pytest.raises(NotebookUnavailableError, match="does not know its .ipynb file"):
        await use(notebook_read, context(tmp_path, None))


def test_the_notebook_file_is_found_from_the_session(tmp_path: Path) -> None:
    write_notebook(tmp_path / "a.ipynb")
    assert find_notebook_file({}, {"JPY_SESSION_NAME": str(tmp_path / "a.ipynb")}, Path("/")) == tmp_path / "a.ipynb"
    assert find_notebook_file({"__session__": "x/a.ipynb"}, {}, tmp_path) == tmp_path / "a.ipynb"
    assert find_notebook_file({"__vsc_ipynb_file__": str(tmp_path / "a.ipynb")}, {}, Path("/")) == tmp_path / "a.ipynb"
    assert find_notebook_file({"__session__": "console-1"}, {}, tmp_path) is None
