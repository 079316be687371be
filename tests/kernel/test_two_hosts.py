"""Two hosts sharing one PostgreSQL store (docs/store.md, docs/teams.md), with real kernels.

A "host" is a kernel in a mount namespace of its own, where its own disk is mounted at the
user's home path: two kernels see the same workspace path (as a Hub's pods do on any node),
with different files behind it, and share only the database. One holds a session, the other is
refused by name; `kill -9` of the first frees it (the server drops a dead connection's advisory
locks) and the second resumes the whole history; another JUPYTERHUB_USER sees none of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from jupyter_client.kernelspec import KernelSpecManager

from blitz_kernel.engine.store.postgres.locks import lock_key
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.postgres import PostgresMissing, PostgresServer

from .conftest import FAKE_KEY
from .driver import KernelDriver, kernel_environment

LOCK_RELEASE_TIMEOUT_S = 30.0
MOUNT_AND_START = 'mount --bind "$1" "$2" && cd "$2" && exec "$3" -m ipykernel_launcher -f "$0"'


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    try:
        server = PostgresServer().start()
    except PostgresMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server.url
    finally:
        server.stop()


def host_kernels(tmp_path: Path, home_path: Path) -> KernelSpecManager:
    """A kernelspec per host: the kernel starts in a new mount namespace with that host's disk
    bound at `home_path` (as root, or as root of a user namespace of its own)."""
    kernels = tmp_path / "kernels"
    unshare = ["unshare", "--mount"] + ([] if os.geteuid() == 0 else ["--user", "--map-root-user"])
    for host in ("host-a", "host-b"):
        disk = tmp_path / f"{host}-disk"
        disk.mkdir()
        (kernels / host).mkdir(parents=True)
        argv = [*unshare, "sh", "-c", MOUNT_AND_START, "{connection_file}", str(disk), str(home_path), sys.executable]
        (kernels / host / "kernel.json").write_text(
            json.dumps({"argv": argv, "display_name": host, "language": "python"}), encoding="utf-8"
        )
    return KernelSpecManager(kernel_dirs=[str(kernels)])


def start(host: str, specs: KernelSpecManager, workspace: Path, env: dict[str, str]) -> KernelDriver:
    kernel = KernelDriver(workspace, env, kernel_name=host, kernel_spec_manager=specs)
    loaded = kernel.run("%load_ext blitz_kernel\n%blitz_config model_retries=0")
    assert loaded.status == "ok", loaded.reply
    return kernel


def wait_until_unlocked(url: str, key: int) -> None:
    """Wait (with a deadline) for the server to drop the dead kernel's advisory lock."""
    unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
    deadline = time.monotonic() + LOCK_RELEASE_TIMEOUT_S
    with psycopg.connect(url, autocommit=True) as admin:
        while True:
            [(held,)] = admin.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND classid::bigint = %s AND objid::bigint = %s",
                (unsigned >> 32, unsigned & 0xFFFF_FFFF),
            ).fetchall()
            if held == 0:
                return
            assert time.monotonic() < deadline, "the server kept a dead kernel's session lock"
            time.sleep(0.05)


def prompts_sent(server: FakeOpenAIServer) -> list[str]:
    return [str(m.get("content")) for m in server.requests[-1].body["messages"] if m["role"] in ("user", "assistant")]


def test_two_hosts_share_one_store_lock_per_session_and_resume_after_kill_9(
    tmp_path: Path, server: FakeOpenAIServer, postgres_url: str
) -> None:
    workspace = tmp_path / "home" / "alice" / "work"  # the same path on both hosts
    workspace.mkdir(parents=True)
    specs = host_kernels(tmp_path, workspace)

    def env(host: str, user: str) -> dict[str, str]:
        home = tmp_path / f"{host}-{user}-home"
        home.mkdir()
        return kernel_environment(
            home,
            BLITZ_MODEL="openai/fake-model",
            BLITZ_API_BASE=server.base_url,
            OPENAI_API_KEY=FAKE_KEY,
            BLITZ_STORE_URL=postgres_url,
            JUPYTERHUB_USER=user,
        )

    first = start("host-a", specs, workspace, env("host-a", "alice"))
    second = third = None
    try:
        server.enqueue({"text": "Noted: the number is 7."})
        cell = first.run("%%blitz -s shared\nRemember the number 7.")
        assert cell.status == "ok", cell.reply
        assert first.run("import os; open('host.txt', 'w').write('a')").status == "ok"
        first_pid = first.manager.provisioner.process.pid  # type: ignore[union-attr]

        second = start("host-b", specs, workspace, env("host-b", "alice"))
        assert second.run("import os; print(os.path.exists('host.txt'))").stdout == "False\n"  # another disk
        refused = second.run("%%blitz -s shared\nWhich number?")
        assert refused.status == "error", refused.reply
        assert f"session 'shared' is open in another kernel (pid {first_pid}" in refused.evalue
        assert len(server.requests) == 1  # refused before any model call

        os.kill(first_pid, signal.SIGKILL)
        first.manager.provisioner.process.wait(timeout=30)  # type: ignore[union-attr]
        wait_until_unlocked(postgres_url, lock_key("alice", str(workspace), "shared"))

        server.enqueue({"text": "It was 7."})
        resumed = second.run("%%blitz -s shared\nWhich number?")
        assert resumed.status == "ok", resumed.reply
        earlier, answer, asked = prompts_sent(server)
        assert (earlier, answer) == ("Remember the number 7.", "Noted: the number is 7.")
        assert asked.endswith("Which number?") and "reopened in another kernel" in asked  # the resume note

        # another user of the same workspace path sees none of alice's sessions
        third = start("host-b", specs, workspace, env("host-b", "bob"))
        listed = third.run("%blitz_session list")
        assert listed.status == "ok" and "shared" not in listed.stdout, listed.stdout
        server.enqueue({"text": "Hello, Bob."})
        own = third.run("%%blitz -s shared\nHello.")
        assert own.status == "ok", own.reply
        assert prompts_sent(server) == ["Hello."]
    finally:
        for kernel in (first, second, third):
            if kernel is not None:
                with contextlib.suppress(Exception):  # the first one is already dead
                    kernel.shutdown()
