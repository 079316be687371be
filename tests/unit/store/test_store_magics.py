"""What the magics say about a damaged store, on an in-process IPython shell: one line naming
the bad row and how to move the store aside, no traceback, for `%blitz_session show`, `list`,
`search` and `%blitz_usage`."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.notebook.magics import BlitzMagics


@pytest.fixture
def damaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlitzMagics]:
    """A workspace whose stored session 'default' has a row that is not JSON."""
    for name in ("BLITZ_MODEL", "BLITZ_API_BASE", "BLITZ_AGENT", "BLITZ_STORE_URL"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    workspace = tmp_path / "work"
    workspace.mkdir()
    ws = Workspace.open(workspace, model=ScriptedModel([{"text": "stored"}]), environ={}, home=home)
    asyncio.run(ws.run("remember"))
    ws.sessions.close()
    with sqlite3.connect(workspace / ".blitz" / "blitz.db") as db:
        db.execute("UPDATE events SET body = '{not json' WHERE id = 1")
    monkeypatch.chdir(workspace)
    yield BlitzMagics(InteractiveShell.instance())


def test_show_names_the_bad_row_and_how_to_move_the_store_aside(damaged: BlitzMagics, capsys: Any) -> None:
    damaged.blitz_session("show")
    out = capsys.readouterr().out
    assert "session 'default': 0 turn(s)" in out and "in memory only (not saved)" in out
    [warning] = [line for line in out.splitlines() if line.startswith("⚠")]
    assert "row 1 of table events (session 'default')" in warning
    assert "mv .blitz/blitz.db .blitz/blitz.db.damaged" in warning and "Traceback" not in out


@pytest.mark.parametrize("line", ["list", "search remember", "show"])
def test_other_session_commands_say_it_in_one_line(damaged: BlitzMagics, capsys: Any, line: str) -> None:
    damaged.blitz_session("show")  # the damage is found where the session is read
    capsys.readouterr()
    damaged.blitz_session(line)
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("⚠")] != []
    damaged.blitz_usage("")
    assert "Error" not in capsys.readouterr().out
