"""`%blitz_mcp` and a `%%blitz` turn that uses a stdio MCP server, in a real kernel; after the
kernel shuts down, no server process is left."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakeserver import FakeOpenAIServer

from .conftest import FAKE_KEY
from .driver import KernelDriver, kernel_environment

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_until_gone(pids: list[int], timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [pid for pid in pids if alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


@pytest.fixture(scope="module")
def mcp_kernel(
    server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KernelDriver, Path]]:
    home = tmp_path_factory.mktemp("home")
    pid_file = home / "server-pids"
    (home / ".blitz").mkdir()
    (home / ".blitz" / "config.toml").write_text(
        "[mcp.servers.warehouse]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(SERVER)}, "--pid-file", {json.dumps(str(pid_file))}]\n'
        "timeout_s = 30\n"
        '[mcp.servers.broken]\ncommand = "/nonexistent/blitz-mcp-server"\n'
        '[approval.tools]\n"mcp__warehouse__image" = "deny"\n'
    )
    env = kernel_environment(
        home, BLITZ_MODEL="openai/fake-model", BLITZ_API_BASE=server.base_url, OPENAI_API_KEY=FAKE_KEY
    )
    driver = KernelDriver(tmp_path_factory.mktemp("workspace"), env)
    try:
        loaded = driver.run("%load_ext blitz_kernel\n%blitz_config model_retries=0")
        assert loaded.status == "ok", loaded.reply
        yield driver, pid_file
    finally:
        if driver.manager.is_alive():  # the last test shuts it down itself
            driver.client.stop_channels()
            driver.manager.shutdown_kernel(now=False)


def test_blitz_mcp_lists_servers_tools_and_policies(mcp_kernel: tuple[KernelDriver, Path]):
    kernel, _ = mcp_kernel
    cell = kernel.run("%blitz_mcp", timeout=90)
    assert cell.status == "ok", cell.reply
    out = cell.stdout
    assert "MCP servers (2):" in out
    assert "• broken — stdio: /nonexistent/blitz-mcp-server — failed · tools unknown" in out
    assert "last error: FileNotFoundError" in out
    assert f"• warehouse — stdio: {sys.executable} {SERVER}" in out and "ready · 7 tools" in out
    lines = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.strip().startswith("mcp__")}
    assert lines["mcp__warehouse__echo"] == "ask" and lines["mcp__warehouse__image"] == "deny"
    assert "the server says read-only; still asks" in out
    wrong = kernel.run("%blitz_mcp stop warehouse")
    assert wrong.ename == "UsageError" and "usage: %blitz_mcp" in wrong.evalue


def test_a_blitz_turn_calls_a_stdio_server_tool(mcp_kernel: tuple[KernelDriver, Path], server: FakeOpenAIServer):
    kernel, _ = mcp_kernel
    server.enqueue(
        {"tool_calls": [{"name": "mcp__warehouse__echo", "arguments": {"text": "from the kernel"}}]},
        {"text": "The server echoed."},
    )
    cell = kernel.run("%%blitz -s mcp --approve allow\nEcho something.", timeout=90)
    assert cell.status == "ok", cell.reply
    assert "⚙ mcp__warehouse__echo(" in cell.stdout
    assert "⚠ MCP server 'broken' failed to start" in cell.stdout  # the turn went on without it
    names = {t["function"]["name"] for t in server.requests[0].body["tools"]}
    assert "mcp__warehouse__echo" in names
    [tool_message] = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "from the kernel" in tool_message["content"]


def test_restart_starts_a_new_process_and_stops_the_old(mcp_kernel: tuple[KernelDriver, Path]):
    kernel, pid_file = mcp_kernel
    cell = kernel.run("%blitz_mcp restart warehouse", timeout=90)
    assert cell.status == "ok", cell.reply
    assert "restarted MCP server 'warehouse'" in cell.stdout
    pids = [int(line) for line in pid_file.read_text().split()]
    assert len(pids) == 2 and alive(pids[1])
    assert wait_until_gone(pids[:1]) == []
    missing = kernel.run("%blitz_mcp restart nowhere")
    assert missing.ename == "UsageError" and "no MCP server named 'nowhere'" in missing.evalue


def test_unload_ext_stops_the_servers(mcp_kernel: tuple[KernelDriver, Path]):
    kernel, pid_file = mcp_kernel
    running = [int(line) for line in pid_file.read_text().split()][-1]
    assert alive(running)
    assert kernel.run("%unload_ext blitz_kernel").status == "ok"
    assert wait_until_gone([running]) == []
    assert kernel.run("%load_ext blitz_kernel").status == "ok"
    again = kernel.run("%blitz_mcp", timeout=90)
    assert again.status == "ok", again.reply
    assert "ready · 7 tools" in again.stdout


def test_no_orphan_server_after_the_kernel_shuts_down(mcp_kernel: tuple[KernelDriver, Path]):
    kernel, pid_file = mcp_kernel
    pids = [int(line) for line in pid_file.read_text().split()]
    assert alive(pids[-1])
    kernel.client.stop_channels()
    kernel.manager.shutdown_kernel(now=False)
    assert wait_until_gone(pids) == []
