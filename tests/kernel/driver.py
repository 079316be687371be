"""Drives a real ipykernel over jupyter_client the way a notebook front end does."""

from __future__ import annotations

import os
import queue
import time
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

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(cwd=str(cwd), env=env)
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def submit(self, code: str) -> str:
        return str(self.client.execute(code))

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
