"""`blitz run` as the notebook's front end: the bridge's requests served on papermill's notebook.

Under papermill the notebook lives in this process's memory, not in a browser: papermill
executes it cell by cell and writes what it holds to the output notebook. A kernel tool that
wrote the `.ipynb` on disk would change the input file behind papermill's back, and the
output notebook would not hold the agent's cells. So `blitz run` answers the kernel's
`blitz.notebook` ping as the labextension does (notebook/bridge.py documents the protocol):
it opens its own comm, says hello, and serves `read_cells`, `insert_cell`, `replace_cell`,
`delete_cell` and `set_outputs` on papermill's in-memory notebook. The agent's cells and their
outputs then are in the output notebook, exactly where the run left them.

Cells the agent ran are not run again when papermill reaches them (their outputs are the
run's); cells it inserted without running are run by papermill in their turn, as a user's
would be. Cells inserted before the running cell do not make papermill run it twice.
"""

from __future__ import annotations

from typing import Any

import nbformat
from papermill.clientwrap import PapermillNotebookClient

from ..tools.notebook import disk_cell
from ..tools.notebook_file import cell_source

COMM_TARGET = "blitz.notebook"
PROTOCOL = 1


class HostRefusal(Exception):
    """A request the host refuses, with the protocol's error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class NotebookHost:
    """The bridge's requests on an nbformat notebook (papermill's, in memory)."""

    def __init__(self, nb: Any, path: str) -> None:
        self.nb = nb
        self.path = path
        self.ran: set[int] = set()
        """`id()` of the cells the agent ran: papermill skips them."""
        self.running: Any = None
        """The cell papermill is executing now (the %%blitz cell of the turn)."""

    def answer(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        handler = getattr(self, f"_op_{op}", None)
        if handler is None:
            raise HostRefusal("unknown_op", f"unknown op {op!r}")
        result: dict[str, Any] = handler(params)
        return result

    def _cells(self) -> list[Any]:
        cells: list[Any] = self.nb.cells
        return cells

    def _index(self, index: Any, limit: int | None = None) -> int:
        count = len(self._cells())
        top = count - 1 if limit is None else limit
        if not isinstance(index, int) or not 0 <= index <= top:
            raise HostRefusal("bad_index", f"no cell {index}: the notebook has {count} cells")
        return index

    def _shown(self, index: int, cell: Any, include_images: bool = False) -> dict[str, Any]:
        shown = disk_cell(index, cell, include_images)
        shown["running"] = cell is self.running
        return shown

    def _op_list_cells(self, params: dict[str, Any]) -> dict[str, Any]:
        cells = []
        for index, cell in enumerate(self._cells()):
            source = cell_source(cell)
            lines = source.splitlines()
            cells.append(
                {
                    "index": index,
                    "id": cell.get("id", ""),
                    "cell_type": cell.get("cell_type", "code"),
                    "execution_count": cell.get("execution_count"),
                    "running": cell is self.running,
                    "first_line": next((x for x in lines if x.strip()), ""),
                    "line_count": len(lines),
                    "output_count": len(cell.get("outputs", [])),
                }
            )
        return {"path": self.path, "cell_count": len(cells), "cells": cells}

    def _op_read_cells(self, params: dict[str, Any]) -> dict[str, Any]:
        cells = self._cells()
        indices = params.get("indices")
        chosen = range(len(cells)) if indices is None else [self._index(i) for i in indices]
        shown = []
        for index in chosen:
            cell = self._shown(index, cells[index], bool(params.get("include_images")))
            if not params.get("include_outputs", True):
                cell["outputs"] = []
            shown.append(cell)
        return {"path": self.path, "cell_count": len(cells), "cells": shown}

    def _new_cell(self, cell_type: str, source: str, metadata: dict[str, Any] | None) -> Any:
        maker = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
        cell = maker.get(cell_type, nbformat.v4.new_raw_cell)(source=source)
        # what papermill gives every cell before it starts, and reads when it runs one
        status = {"exception": None, "start_time": None, "end_time": None, "duration": None, "status": "pending"}
        cell.metadata["papermill"] = status
        if metadata is not None:
            cell.metadata["blitz"] = metadata
        return cell

    def _op_insert_cell(self, params: dict[str, Any]) -> dict[str, Any]:
        index = self._index(params.get("index"), limit=len(self._cells()))
        cell = self._new_cell(params.get("cell_type", "code"), params["source"], params.get("metadata"))
        self._cells().insert(index, cell)
        return {"index": index, "id": cell.get("id", ""), "cell_count": len(self._cells())}

    def _refuse_running(self, cell: Any, index: int, action: str) -> None:
        if cell is self.running:
            raise HostRefusal("running_cell", f"cannot {action} cell {index}: it is the running %%blitz cell")

    def _op_replace_cell(self, params: dict[str, Any]) -> dict[str, Any]:
        index = self._index(params.get("index"))
        cell = self._cells()[index]
        self._refuse_running(cell, index, "replace")
        previous = cell_source(cell)
        cell_type = params.get("cell_type") or cell.get("cell_type", "code")
        if cell_type != cell.get("cell_type"):
            replacement = self._new_cell(cell_type, params["source"], None)
            replacement.metadata = cell.get("metadata", {})
            self._cells()[index] = cell = replacement
        else:
            cell.source = params["source"]
        if params.get("metadata") is not None:
            cell.setdefault("metadata", {})["blitz"] = params["metadata"]
        result = {"index": index, "id": cell.get("id", ""), "cell_type": cell_type}
        return {**result, "previous_source": previous, "cell_count": len(self._cells())}

    def _op_delete_cell(self, params: dict[str, Any]) -> dict[str, Any]:
        index = self._index(params.get("index"))
        cell = self._cells()[index]
        self._refuse_running(cell, index, "delete")
        del self._cells()[index]
        deleted = {"id": cell.get("id", ""), "cell_type": cell.get("cell_type", "code"), "source": cell_source(cell)}
        return {"deleted": deleted, "cell_count": len(self._cells())}

    def _op_set_outputs(self, params: dict[str, Any]) -> dict[str, Any]:
        found = [(i, c) for i, c in enumerate(self._cells()) if c.get("id") == params.get("id")]
        if not found:
            raise HostRefusal("bad_index", f"no cell with id {params.get('id')!r}: it was deleted or replaced")
        index, cell = found[0]
        if cell.get("cell_type") != "code":
            raise HostRefusal(
                "bad_request", f"cell {index} is a {cell.get('cell_type')} cell; only code cells have outputs"
            )
        metadata = cell.setdefault("metadata", {})
        before = {
            "index": index,
            "id": cell.get("id", ""),
            "previous_outputs": [dict(o) for o in cell.get("outputs", [])],
            "previous_execution_count": cell.get("execution_count"),
            "previous_metadata": metadata.get("blitz"),
        }
        cell.outputs = [nbformat.from_dict(o) for o in params.get("outputs", [])]
        cell.execution_count = params.get("execution_count")
        if params.get("metadata") is None:
            metadata.pop("blitz", None)
        else:
            metadata["blitz"] = params["metadata"]
        self.ran.add(id(cell))
        return before


def send_on_shell(client: Any, msg_type: str, content: dict[str, Any]) -> None:
    """Send a message on the client's shell channel through its asyncio socket itself.

    jupyter_client's own send writes on a blocking shadow of that socket, behind the asyncio
    socket's back. A send that lands while nbclient waits on the same socket for a cell's
    execute_reply, just as the reply arrives, takes the socket's edge-triggered wake-up with
    it: the reply then sits unread and the run hangs with an idle kernel. The asyncio socket's
    own send re-checks for waiting input after sending, so the reply is read."""
    frames = client.session.serialize(client.session.msg(msg_type, content=content))
    client.shell_channel.socket.send_multipart(frames)


class _HostComm:
    """The comm `blitz run` opened to the kernel: requests in, replies out (on the shell channel)."""

    def __init__(self, client: HostedNotebookClient, comm_id: str) -> None:
        self.client, self.comm_id = client, comm_id

    def handle_msg(self, msg: dict[str, Any]) -> None:
        data = msg.get("content", {}).get("data") or {}
        if data.get("kind") != "request":
            return
        reply: dict[str, Any] = {"kind": "reply", "id": data.get("id")}
        try:
            reply.update(ok=True, result=self.client.host.answer(str(data.get("op")), data.get("params") or {}))
        except HostRefusal as refusal:
            reply.update(ok=False, error={"code": refusal.code, "message": str(refusal)})
        except Exception as error:  # a bug here must answer, not leave the kernel waiting
            reply.update(ok=False, error={"code": "internal", "message": f"{type(error).__name__}: {error}"})
        self.client.send_comm("comm_msg", {"comm_id": self.comm_id, "data": reply})


def execute_hosted(
    nb_man: Any,
    kernel_name: str,
    log_output: bool = False,
    stdout_file: Any = None,
    stderr_file: Any = None,
    start_timeout: int = 60,
    execution_timeout: float | None = None,
    **kwargs: Any,
) -> Any:
    """papermill's NBClientEngine.execute_managed_notebook, with the hosting client."""
    from papermill.log import logger
    from papermill.utils import merge_kwargs, remove_args

    kwargs = remove_args(["input_path"], **kwargs)
    safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
    final = merge_kwargs(
        safe_kwargs,
        timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
        startup_timeout=start_timeout,
        kernel_name=kernel_name,
        log=logger,
        log_output=log_output,
        stdout_file=stdout_file,
        stderr_file=stderr_file,
    )
    return HostedNotebookClient(nb_man, **final).execute()


class HostedNotebookClient(PapermillNotebookClient):
    """papermill's client, answering the kernel's notebook bridge (see the module docstring)."""

    def __init__(self, nb_man: Any, **kwargs: Any) -> None:
        super().__init__(nb_man, **kwargs)
        self.host = NotebookHost(nb_man.nb, str(getattr(nb_man, "output_path", "") or ""))
        self.comm_open_handlers[COMM_TARGET] = self._on_ping

    def send_comm(self, msg_type: str, content: dict[str, Any]) -> None:
        assert self.kc is not None
        send_on_shell(self.kc, msg_type, content)

    def _on_ping(self, msg: dict[str, Any]) -> None:
        """The kernel asks for a front end: open a comm with a hello, close the ping."""
        import uuid

        comm_id = uuid.uuid4().hex
        self.comm_objects[comm_id] = _HostComm(self, comm_id)
        hello = {"kind": "hello", "protocol": PROTOCOL, "client": "blitz-run", "version": "", "path": self.host.path}
        self.send_comm("comm_open", {"comm_id": comm_id, "target_name": COMM_TARGET, "data": hello})
        self.send_comm("comm_close", {"comm_id": msg["content"]["comm_id"], "data": {}})

    def papermill_execute_cells(self) -> None:
        """papermill's loop, on a list the agent may change while a cell runs: each cell once,
        in order, skipping those the agent ran."""
        from nbclient.exceptions import CellExecutionError

        done: set[int] = set()
        index = 0
        while index < len(self.nb.cells):
            cell = self.nb.cells[index]
            if id(cell) in done or id(cell) in self.host.ran:
                index += 1
                continue
            done.add(id(cell))
            self.host.running = cell
            try:
                self.nb_man.cell_start(cell, index)
                self.execute_cell(cell, index)
            except CellExecutionError as ex:
                self.nb_man.cell_exception(cell, cell_index=self._where(cell, index), exception=ex)
                break
            finally:
                self.host.running = None
                self.nb_man.cell_complete(cell, cell_index=self._where(cell, index))
            index = self._where(cell, index) + 1

    def _where(self, cell: Any, fallback: int) -> int:
        return next((i for i, c in enumerate(self.nb.cells) if c is cell), fallback)
