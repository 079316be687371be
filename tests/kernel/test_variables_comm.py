"""The comm `blitz.variables` over a real kernel, the test playing the labextension: it opens
the comm as inline completion does while the kernel is idle and reads the names and types the
kernel answers with (docs/completion.md). None of the objects' own code runs, and no cell is
executed (the execution count does not move); without the extension the comm is closed
unanswered."""

from __future__ import annotations

import time
import uuid
from typing import Any

from .driver import KernelDriver

TARGET = "blitz.variables"

DEFINE = """
import os
touched = []
class Sneaky:
    def __repr__(self):
        touched.append("repr")
        return "sneaky"
    def __len__(self):
        touched.append("len")
        return 1
    @property
    def __class__(self):
        touched.append("__class__")
        return dict
sales = Sneaky()
total = 3.5
def helper(x):
    return x
_private = 1
"""


def ask(kernel: KernelDriver, timeout: float = 30) -> list[Any]:
    """Open the comm and read until the kernel closes it: the data it sent before that."""
    comm_id = uuid.uuid4().hex
    client = kernel.client
    client.shell_channel.send(
        client.session.msg("comm_open", {"comm_id": comm_id, "target_name": TARGET, "data": {"kind": "list"}})
    )
    deadline = time.monotonic() + timeout
    sent: list[Any] = []
    while True:
        message = kernel._next_iopub(deadline)
        content = message["content"]
        if message["msg_type"] == "comm_msg" and content.get("comm_id") == comm_id:
            sent.append(content["data"])
        if message["msg_type"] == "comm_close" and content.get("comm_id") == comm_id:
            return sent


def test_the_kernel_answers_names_and_types_without_running_the_users_code(kernel: KernelDriver) -> None:
    defined = kernel.run(DEFINE)
    assert defined.status == "ok", defined.reply
    [reply] = ask(kernel)
    assert reply["kind"] == "variables"
    pairs = {(v["name"], v["type"]) for v in reply["variables"]}
    assert {
        ("touched", "list"),
        ("Sneaky", "class"),
        ("sales", "Sneaky"),
        ("total", "float"),
        ("helper", "function"),
    } <= pairs
    names = {name for name, _ in pairs}
    assert not names & {"os", "_private", "In", "Out", "get_ipython", "exit"}
    after = kernel.run("print(touched)")
    assert after.stdout.strip() == "[]"  # no repr, len or __class__ of the user's ran
    assert after.reply["execution_count"] == defined.reply["execution_count"] + 1  # asking ran no cell


def test_without_the_extension_the_comm_is_closed_unanswered(kernel: KernelDriver) -> None:
    assert kernel.run("%unload_ext blitz_kernel").status == "ok"
    try:
        assert ask(kernel) == []
    finally:
        assert kernel.run("%load_ext blitz_kernel").status == "ok"
