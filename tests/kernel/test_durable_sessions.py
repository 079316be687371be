"""Durable sessions in real kernels: a conversation survives a kernel restart, a kernel
killed mid-turn leaves an `interrupted` turn and a valid history, and one kernel at a time holds
a session (the lock goes with a dead kernel)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakeserver import FakeOpenAIServer

from .conftest import FAKE_KEY
from .driver import KernelDriver, kernel_environment


@pytest.fixture
def start_kernel(server: FakeOpenAIServer, tmp_path: Path) -> Iterator[object]:
    """Starts kernels on one workspace (tmp_path/work); shuts down those still alive."""
    started: list[KernelDriver] = []
    workspace = tmp_path / "work"
    workspace.mkdir()

    def start(notebook: str = "analysis.ipynb") -> KernelDriver:
        env = kernel_environment(
            tmp_path / "home",
            BLITZ_MODEL="openai/fake-model",
            BLITZ_API_BASE=server.base_url,
            OPENAI_API_KEY=FAKE_KEY,
            JPY_SESSION_NAME=str(workspace / notebook),
        )
        driver = KernelDriver(workspace, env)
        started.append(driver)
        loaded = driver.run("%load_ext blitz_kernel\n%blitz_config model_retries=0")
        assert loaded.status == "ok", loaded.reply
        return driver

    yield start
    for driver in started:
        if driver.manager.is_alive():
            driver.shutdown()
        else:
            driver.client.stop_channels()


def kill(driver: KernelDriver, pid: int) -> None:
    """kill -9 the kernel process, and wait until it is gone."""
    os.kill(pid, signal.SIGKILL)
    driver.manager.provisioner.process.wait(timeout=30)  # type: ignore[union-attr]


def sent(server: FakeOpenAIServer, index: int = -1) -> list[tuple[str, object]]:
    return [(m["role"], m.get("content")) for m in server.requests[index].body["messages"] if m["role"] != "system"]


def test_a_conversation_survives_a_kernel_restart(start_kernel, server: FakeOpenAIServer):
    first = start_kernel()
    server.enqueue(
        {"tool_calls": [{"name": "run_python", "arguments": {"code": "ada_age = 36"}}]},
        {"text": "Noted, Ada."},
    )
    assert first.run("%%blitz -s memo --approve allow --plain\nMy name is Ada; store my age.").status == "ok"
    first.shutdown()

    second = start_kernel()
    server.enqueue({"text": "Your name is Ada."})
    cell = second.run("%%blitz -s memo --plain\nWhat is my name?")
    assert cell.status == "ok", cell.reply
    messages = sent(server)
    assert messages[0] == ("user", "My name is Ada; store my age.")  # the turn remembers
    assert [role for role, _ in messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert messages[3] == ("assistant", "Noted, Ada.")
    prompt = str(messages[-1][1])
    assert prompt.endswith("\nWhat is my name?")
    assert "kernel was restarted" in prompt and "no longer exist: ada_age." in prompt
    shown = second.run("%blitz_session use memo\n%blitz_session show").stdout
    assert "session 'memo': 2 turn(s), 6 message(s) in the history" in shown and "saved in .blitz/blitz.db" in shown


def test_a_kernel_killed_mid_turn_leaves_an_interrupted_turn_and_a_valid_history(
    start_kernel, server: FakeOpenAIServer
):
    first = start_kernel()
    pid = int(first.run("import os; print(os.getpid())").stdout)
    server.enqueue({"tool_calls": [{"name": "run_python", "arguments": {"code": "import time\ntime.sleep(600)"}}]})
    running = first.submit("%%blitz -s crash --approve allow --plain\nRun the long job.")
    first.wait_for_output(running, "⚙ run_python(")  # the tool runs: its unit is not committed
    kill(first, pid)

    second = start_kernel()
    shown = second.run("%blitz_session use crash\n%blitz_session show").stdout
    assert "session 'crash': 1 turn(s), 1 message(s) in the history" in shown
    assert "last turn (1): interrupted" in shown
    server.enqueue({"text": "Starting over."})
    cell = second.run("%%blitz -s crash --plain\nTry again, shorter.")
    assert cell.status == "ok", cell.reply
    messages = sent(server)
    assert messages[0] == ("user", "Run the long job.")
    assert [role for role, _ in messages] == ["user", "user"]  # no call without its result


def test_two_kernels_on_one_session_and_the_lock_goes_with_a_dead_kernel(start_kernel, server: FakeOpenAIServer):
    first = start_kernel("analysis.ipynb")
    server.enqueue({"text": "one"}, {"text": "two"}, {"text": "three"})
    assert first.run("%%blitz -s analysis --plain\nFirst.").status == "ok"
    pid = int(first.run("import os; print(os.getpid())").stdout)

    second = start_kernel("other.ipynb")
    refused = second.run("%%blitz -s analysis --plain\nMe too.")
    assert refused.status == "error" and refused.ename == "UsageError"
    assert refused.evalue.startswith(
        f"session 'analysis' is open in another kernel (pid {pid}, notebook analysis.ipynb, since "
    )
    assert "\n" not in refused.evalue and len(server.requests) == 1  # nothing was sent or recorded
    listed = second.run("%blitz_session list").stdout
    assert f"another kernel (pid {pid}, notebook analysis.ipynb" in listed

    assert first.run("%%blitz -s analysis --plain\nSecond.").status == "ok"  # the first goes on
    assert sent(server)[-1] == ("user", "Second.")

    kill(first, pid)
    cell = second.run("%%blitz -s analysis --plain\nMe now.")
    assert cell.status == "ok", cell.reply
    assert [content for role, content in sent(server) if role == "user"][:2] == ["First.", "Second."]


def test_reloading_the_extension_lets_go_of_the_sessions(start_kernel, server: FakeOpenAIServer):
    kernel = start_kernel()
    server.enqueue({"text": "one"}, {"text": "two"})
    assert kernel.run("%%blitz -s reload --plain\nFirst.").status == "ok"
    assert kernel.run("%reload_ext blitz_kernel").status == "ok"
    cell = kernel.run("%%blitz -s reload --plain\nSecond.")
    assert cell.status == "ok", cell.reply
    assert [content for role, content in sent(server) if role == "user"][0] == "First."


def test_a_subagents_nested_turn_comes_back_with_the_session_in_a_new_kernel(
    start_kernel, server: FakeOpenAIServer, tmp_path: Path
):
    """The sub-agent's whole turn is stored in the caller's, and a restarted kernel has it; the
    model of the next turn still reads only the call's result."""
    agents = tmp_path / "work" / ".blitz" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("---\nname: reviewer\ndescription: reviews\ntools: read_file\n---\nReview.\n")
    (tmp_path / "work" / "prep.py").write_text("import pandas as pd\n")
    first = start_kernel()
    server.enqueue(
        {"tool_calls": [{"name": "invoke_agent", "arguments": {"agent": "reviewer", "prompt": "Review prep.py"}}]},
        {"text": "Looking.", "tool_calls": [{"name": "read_file", "arguments": {"path": "prep.py"}}]},
        {"text": "It imports pandas."},
        {"text": "The reviewer found nothing wrong."},
    )
    assert first.run("%%blitz -s nested --plain\nAsk the reviewer.").status == "ok"
    first.shutdown()

    second = start_kernel()
    shown = second.run("%blitz_session use nested\n%blitz_session show")
    assert "sub-agent turn: reviewer, 4 message(s), end_turn" in shown.stdout, shown.stdout
    probe = second.run(
        "_m = get_ipython().magics_manager.registry['BlitzMagics']\n"
        "_r = [m for m in _m.workspace().session('nested').history if m.kind == 'tool_result'][0]\n"
        "print([(m.kind, getattr(m, 'text', None) or getattr(m, 'output', None)) for m in _r.subagent.messages])"
    )
    assert probe.status == "ok", probe.reply
    assert "('user', 'Review prep.py'), ('assistant', 'Looking.'), ('tool_result', " in probe.stdout
    assert "('assistant', 'It imports pandas.')" in probe.stdout
    server.enqueue({"text": "Nothing else."})
    assert second.run("%%blitz -s nested --plain\nAnything else?").status == "ok"
    [result] = [m for m in server.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "Looking." not in str(result["content"]) and "It imports pandas." in str(result["content"])
