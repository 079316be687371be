"""Choosing the store: `store.url` / `BLITZ_STORE_URL` and `store.path` (docs/store.md). SQLite
and PostgreSQL exist; any other scheme is a one-line error naming the key, and a workspace's own
file cannot move the store until it is trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from blitz_kernel.config.loading import load_config
from blitz_kernel.engine.events import NoticeEvent
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import ConfigError
from blitz_kernel.models.scripted import ScriptedModel


def config_error(root: Path, **kwargs) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(root, home=root / "home", **kwargs)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql+psycopg://db.example/blitz", "names a driver; write postgresql://"),
        ("mysql://db.example/blitz", "unknown store scheme 'mysql'"),
        ("blitz.db", "unknown store 'blitz.db'"),
        ("sqlite:///", "needs a file path"),
    ],
)
def test_a_store_url_that_names_no_backend_is_one_line_naming_the_key(tmp_path, url, says):
    message = config_error(tmp_path, overrides={"store.url": url})
    assert "'store.url'" in message and says in message


def test_the_environment_variable_names_itself_in_the_error(tmp_path):
    message = config_error(tmp_path, environ={"BLITZ_STORE_URL": "redis://x"})
    assert "'store.url'" in message and "environment variable BLITZ_STORE_URL" in message


def test_url_and_path_together_are_refused(tmp_path):
    message = config_error(tmp_path, overrides={"store.url": "sqlite:///a.db", "store.path": "b.db"})
    assert "store.url or store.path, not both" in message


async def test_store_url_from_the_environment_puts_the_database_and_its_locks_there(tmp_path):
    target = tmp_path / "elsewhere" / "team.db"
    ws = Workspace.open(
        tmp_path / "ws",
        model=ScriptedModel([{"text": "hi"}]),
        environ={"BLITZ_STORE_URL": f"sqlite:///{target}"},
        home=tmp_path / "home",
    )
    await ws.run("hello")
    assert ws.session("default").saved and target.exists() and (target.parent / "locks" / "sessions.lock").exists()
    assert not (tmp_path / "ws" / ".blitz" / "blitz.db").exists()
    assert ws.sessions.location == str(target)


def test_a_relative_store_path_starts_at_the_workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    ws = Workspace.open(
        root, model=ScriptedModel([]), overrides={"store.path": "data/s.db"}, environ={}, home=tmp_path / "home"
    )
    assert ws.session("default").saved and (root / "data" / "s.db").exists()


def test_a_workspace_file_cannot_move_the_store_until_trusted(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "blitz.toml").write_text('[store]\npath = "/tmp/attacker-chosen.db"\n')
    ws = Workspace.open(root, model=ScriptedModel([]), environ={}, home=tmp_path / "home")
    assert ws.config.store.path is None and "store" in ws.trust.held
    assert ws.sessions.location == ".blitz/blitz.db"
    trusted = Workspace.open(
        root,
        model=ScriptedModel([]),
        environ={"BLITZ_TRUST_WORKSPACE": str(root)},
        home=tmp_path / "home",
        durable=False,
    )
    assert trusted.config.store.path == "/tmp/attacker-chosen.db"


async def test_the_held_back_store_is_named_in_the_trust_notice(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "blitz.toml").write_text('[store]\nurl = "sqlite:///x.db"\n')
    ws = Workspace.open(root, model=ScriptedModel([{"text": "hi"}]), environ={}, home=tmp_path / "home")
    result = await ws.run("hello")
    [notice] = [e.message for e in result.events if isinstance(e, NoticeEvent)]
    assert "store" in notice and "%blitz_trust" in notice


def test_changing_the_store_after_opening_is_a_clear_error(tmp_path):
    ws = Workspace.open(tmp_path, model=ScriptedModel([]), environ={}, home=tmp_path / "home", durable=False)
    with pytest.raises(ConfigError, match="read when the workspace opens"):
        ws.configure(**{"store.path": "other.db"})
    assert ws.config.store.path is None
