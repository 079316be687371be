"""Interrupt fuzz: ■ at random points of multi-step
turns in a real kernel. Every interrupted turn ends "cancelled" in one line (no traceback),
the session's history stays valid (every tool call has exactly one result), and the next turn
of the same session works and sends the provider a well-formed conversation.

The seed is fixed and printed (set BLITZ_FUZZ_SEED to replay or vary it). Marked `fuzz`: it
takes about a minute; the test command runs it with everything else.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import check_request
from tests.kernel.driver import CellRun, KernelDriver, kernel_environment

pytestmark = [pytest.mark.fuzz, pytest.mark.kernel]

SEED = int(os.environ.get("BLITZ_FUZZ_SEED", "20261201"))
INTERRUPTS = 32
SLOW_TEXT = {"text": " ".join(f"word{i}" for i in range(60)), "delay_s": 0.04}


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}], "delay_s": 0.02}


SCENARIOS: dict[str, list[dict[str, Any]]] = {
    "slow-text": [SLOW_TEXT],
    "tool-then-slow-text": [tool("list_files"), SLOW_TEXT],
    "run-python-sleeps": [tool("run_python", code="import time\nfor _ in range(30):\n    time.sleep(0.1)"), SLOW_TEXT],
    "stall": [{"fault": "stall", "seconds": 10}],
    "three-steps": [
        tool("list_files"),
        tool("glob", pattern="*"),
        tool("run_python", code="import time; time.sleep(2)"),
        SLOW_TEXT,
    ],
    "parallel-tools": [
        {
            "tool_calls": [
                {"name": "list_files", "arguments": {}},
                {"name": "run_python", "arguments": {"code": "import time; time.sleep(2)"}},
            ]
        },
        SLOW_TEXT,
    ],
}

CHECK_HISTORY = """\
from blitz_kernel.notebook import extension as _ext
from blitz_kernel.core.history import check_history as _check
_state = _ext._state["magics"].workspace().sessions.get({session!r})
_check(_state.history)
print("valid", _state.turns, len(_state.history))
"""


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def kernel(server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelDriver]:
    env = kernel_environment(
        tmp_path_factory.mktemp("home"),
        BLITZ_MODEL="openai/fake-model",
        BLITZ_API_BASE=server.base_url,
        OPENAI_API_KEY="sk-fuzz-not-a-real-key",
    )
    driver = KernelDriver(tmp_path_factory.mktemp("fuzz"), env)
    loaded = driver.run("%load_ext blitz_kernel\n%blitz_config model_retries=0")
    assert loaded.status == "ok", loaded.reply
    yield driver
    driver.shutdown()


def ended_cancelled(cell: CellRun) -> bool:
    """Cancelled in one line: the turn's own stop line, or (■ before the turn started) the
    one-line cell error."""
    if cell.status == "ok":
        return any("cancelled" in line for line in cell.stdout.splitlines())
    return cell.ename == "BlitzCellError" and cell.evalue.startswith("interrupted:")


def test_interrupts_at_random_points_end_cancelled_and_the_next_turn_works(
    kernel: KernelDriver, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = random.Random(SEED)
    with capsys.disabled():
        print(f"\ninterrupt fuzz: seed {SEED} (BLITZ_FUZZ_SEED), {INTERRUPTS} interrupts")
    server.reset()
    server.enqueue({"text": "warm"})  # the first turn loads litellm: let the fuzz hit turns
    assert kernel.run("%%blitz -s warm-up --plain\nhello").status == "ok"
    outcomes: list[str] = []
    for index in range(INTERRUPTS):
        name = rng.choice(sorted(SCENARIOS))
        delay = round(rng.uniform(0.05, 1.2), 3)
        where = f"seed {SEED}, interrupt {index} ({name} after {delay} s)"
        session = f"fuzz{index}"
        server.reset()
        server.enqueue(*SCENARIOS[name])
        msg_id = kernel.submit(f"%%blitz -s {session} --approve allow --plain\nDo the {name} thing.")
        cell = interrupt_after(kernel, msg_id, delay)
        shown = json.dumps(cell.outputs)
        assert ended_cancelled(cell), f"{where}: {cell.status} {cell.ename} {cell.evalue}\n{cell.stdout}"
        errors = [content for kind, content in cell.outputs if kind == "error"]
        assert "Traceback" not in shown, f"{where}: {shown[-2000:]}"
        assert all(len(error["traceback"]) == 1 for error in errors), f"{where}: {errors}"

        valid = kernel.run(CHECK_HISTORY.format(session=session), timeout=30)
        assert valid.status == "ok" and valid.stdout.startswith("valid"), f"{where}: {valid.evalue} {valid.stdout}"

        server.reset()
        server.enqueue({"text": f"back {index}"})
        after = kernel.run(f"%%blitz -s {session} --plain\nAnd now?", timeout=60)
        assert after.status == "ok", f"{where}: next turn {after.ename}: {after.evalue}"
        assert f"back {index}" in after.stdout + json.dumps(after.outputs)
        [request] = server.requests
        check_request([m for m in request.body["messages"] if m["role"] != "system"])
        assert request.body["messages"][-1] == {"role": "user", "content": "And now?"}
        outcomes.append(f"{name}:{valid.stdout.split()[1]}")
    assert len(outcomes) == INTERRUPTS
    with capsys.disabled():
        print("interrupt fuzz: " + ", ".join(outcomes))


def interrupt_after(kernel: KernelDriver, msg_id: str, delay: float) -> CellRun:
    """Let the cell run `delay` seconds (reading its output meanwhile), interrupt, collect."""
    import time

    deadline = time.monotonic() + delay
    seen: list[tuple[str, dict[str, Any]]] = []
    while time.monotonic() < deadline:
        try:
            message = kernel.client.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
        except Exception:  # queue.Empty: nothing yet
            continue
        if message["parent_header"].get("msg_id") == msg_id:
            seen.append((message["msg_type"], message["content"]))
    kernel.interrupt()
    return kernel.collect(msg_id, timeout=30, already=seen)
