"""`blitz run`'s side of the notebook bridge (cli/notebook_host.py) on an nbformat notebook,
and the kernel's checks of the `set_outputs` op (bridge_messages.py)."""

from __future__ import annotations

import asyncio
import select

import nbformat
import pytest
import zmq
from jupyter_client import AsyncKernelClient

from blitz_kernel.cli.notebook_host import HostRefusal, NotebookHost, send_on_shell
from blitz_kernel.notebook.bridge_messages import checked_result, request_data


def host() -> NotebookHost:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("%%blitz\nAdd cells.")]
    served = NotebookHost(nb, "out.ipynb")
    served.running = nb.cells[1]
    return served


def test_cells_are_read_inserted_and_given_outputs_in_memory() -> None:
    served = host()
    mark = {"session": "default", "turn": 0, "edited": True}
    inserted = served.answer("insert_cell", {"index": 2, "cell_type": "code", "source": "x = 1", "metadata": mark})
    assert inserted["index"] == 2 and inserted["cell_count"] == 3
    new = served.nb.cells[2]
    assert new.metadata["blitz"] == mark and new.metadata["papermill"]["status"] == "pending"
    read = served.answer("read_cells", {"indices": None, "include_outputs": True})
    assert checked_result("read_cells", read) == read
    assert [c["running"] for c in read["cells"]] == [False, True, False]
    outputs = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    before = served.answer("set_outputs", {"id": new.id, "outputs": outputs, "execution_count": 4, "metadata": None})
    assert checked_result("set_outputs", before) == before
    assert before["previous_metadata"] == mark and before["previous_outputs"] == []
    assert new.outputs[0].text == "1\n" and new.execution_count == 4 and "blitz" not in new.metadata
    assert id(new) in served.ran


def test_the_running_cell_and_missing_cells_are_refused() -> None:
    served = host()
    with pytest.raises(HostRefusal, match="it is the running %%blitz cell"):
        served.answer("delete_cell", {"index": 1})
    with pytest.raises(HostRefusal, match="no cell 5"):
        served.answer("replace_cell", {"index": 5, "source": "x"})
    with pytest.raises(HostRefusal, match="only code cells have outputs"):
        served.answer("set_outputs", {"id": served.nb.cells[0].id, "outputs": [], "execution_count": None})
    with pytest.raises(HostRefusal, match="unknown op"):
        served.answer("run_everything", {})


def test_set_outputs_params_are_checked_before_anything_is_sent() -> None:
    sent = request_data("r-1", "set_outputs", {"id": "c1", "outputs": [], "execution_count": 3, "metadata": None})
    assert sent["params"] == {"id": "c1", "outputs": [], "execution_count": 3, "metadata": None}
    with pytest.raises(ValueError, match="bad params for set_outputs: id: Field required"):
        request_data("r-2", "set_outputs", {"outputs": [], "execution_count": 3})


async def test_a_message_sent_while_a_reply_is_awaited_does_not_strand_the_reply() -> None:
    """`blitz run` answers the kernel's bridge on the shell socket that nbclient is waiting on for
    the cell's execute_reply. A send that lands just as the reply arrives must not take the
    socket's wake-up with it: the reply is read, and the run does not hang."""
    context = zmq.Context.instance()
    kernel = context.socket(zmq.ROUTER)
    kernel.linger = 0
    port = kernel.bind_to_random_port("tcp://127.0.0.1")
    client = AsyncKernelClient()
    client.load_connection_info({"transport": "tcp", "ip": "127.0.0.1", "shell_port": port, "key": ""})
    client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
    try:
        send_on_shell(client, "kernel_info_request", {})  # the kernel learns the client's identity
        assert kernel.poll(10_000)
        identity = kernel.recv_multipart()[0]
        waiting = asyncio.ensure_future(client.shell_channel.get_msg(timeout=None))  # nbclient's wait
        await asyncio.sleep(0)  # the wait is now polling the socket
        kernel.send_multipart([identity, *client.session.serialize(client.session.msg("execute_reply", {}))])
        # the reply reaches the client's socket and its wake-up is spent behind the loop's back,
        # as a blocking send's own bookkeeping spends it…
        behind = zmq.Socket.shadow(client.shell_channel.socket.underlying)
        while not behind.get(zmq.EVENTS) & zmq.POLLIN:
            select.select([behind.FD], [], [], 10)
        send_on_shell(client, "comm_msg", {"comm_id": "c", "data": {}})  # …and the host sends now
        reply = await asyncio.wait_for(waiting, 10)  # bounds a failure; a pass is at once
        assert reply["msg_type"] == "execute_reply"
    finally:
        client.stop_channels()
        kernel.close()
