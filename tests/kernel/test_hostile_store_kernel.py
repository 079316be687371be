"""A cloned repository's hostile `.blitz/` in a real kernel: a lock file linked to the user's
own file, and a damaged database. `%%blitz` answers, the user sees one line, nothing outside
the workspace changes (docs/store.md)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.fakeserver import FakeOpenAIServer

from .conftest import FAKE_KEY
from .driver import KernelDriver, kernel_environment


def start(server: FakeOpenAIServer, tmp_path: Path, workspace: Path) -> KernelDriver:
    env = kernel_environment(
        tmp_path / "home", BLITZ_MODEL="openai/fake-model", BLITZ_API_BASE=server.base_url, OPENAI_API_KEY=FAKE_KEY
    )
    driver = KernelDriver(workspace, env)
    loaded = driver.run("%load_ext blitz_kernel\n%blitz_config model_retries=0")
    assert loaded.status == "ok", loaded.reply
    return driver


def test_a_lock_linked_to_the_users_file_leaves_it_alone_and_the_cell_answers(server: FakeOpenAIServer, tmp_path: Path):
    victim = tmp_path / "home-bashrc"
    victim.write_text("alias ll='ls -l'\n")
    workspace = tmp_path / "repo"
    (workspace / ".blitz" / "locks").mkdir(parents=True)
    (workspace / ".blitz" / "locks" / "sessions.lock").symlink_to(victim)
    driver = start(server, tmp_path, workspace)
    try:
        server.enqueue({"text": "Hello from the model."})
        cell = driver.run("%%blitz --plain\nSay hello.")
        assert cell.status == "ok", cell.reply
        warnings = [line for line in cell.stdout.splitlines() if line.startswith("⚠ .blitz/locks/sessions.lock")]
        assert len(warnings) == 1 and "symbolic link" in warnings[0]
        assert "Hello from the model." in "".join(cell.displays.values()) and "Traceback" not in cell.stdout
    finally:
        driver.shutdown()
    assert victim.read_text() == "alias ll='ls -l'\n"


def test_a_damaged_row_is_named_by_session_show_and_the_next_cell_answers(server: FakeOpenAIServer, tmp_path: Path):
    workspace = tmp_path / "repo"
    workspace.mkdir()
    first = start(server, tmp_path, workspace)
    server.enqueue({"text": "First answer."})
    assert first.run("%%blitz --plain\nFirst question.").status == "ok"
    first.shutdown()
    with sqlite3.connect(workspace / ".blitz" / "blitz.db") as db:
        db.execute("UPDATE events SET body = 'not json' WHERE id = 1")
    second = start(server, tmp_path, workspace)
    try:
        shown = second.run("%blitz_session show")
        assert shown.status == "ok", shown.reply
        assert "row 1 of table events (session 'default')" in shown.stdout
        assert "mv .blitz/blitz.db .blitz/blitz.db.damaged" in shown.stdout and "Traceback" not in shown.stdout
        server.enqueue({"text": "Still here."})
        cell = second.run("%%blitz --plain\nAre you there?")
        assert cell.status == "ok" and "Still here." in "".join(cell.displays.values())
        assert "session not saved" in cell.stdout
    finally:
        second.shutdown()
