"""The side panel's reads on every store backend (docs/panel.md): the store a kernel of the
folder would use, chosen by the user's configuration; on PostgreSQL a user sees only their own
sessions; and a read beside a turn left open changes nothing (the next kernel still finds it
interrupted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from blitz_kernel.core.history import user_prompt
from blitz_kernel.server.completion import Workspaces
from blitz_kernel.server.panel import Panel

from .conftest import Backend

NOTEBOOK = "nb.ipynb"


def panel_for(backend: Backend, root: Path) -> Panel:
    """A panel whose configuration names the backend's store, in the user's own config file."""
    url = backend.url(root)
    if url is not None:
        (root / "home" / ".blitz").mkdir(parents=True, exist_ok=True)
        (root / "home" / ".blitz" / "config.toml").write_text(f'[store]\nurl = "{url}"\n')
    return Panel(Workspaces(root, home=root / "home"))


async def test_the_panel_reads_the_store_the_folders_kernel_writes(
    store_backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    ws, _ = store_backend.workspace(tmp_path, [{"text": "the ledger balances"}])
    await ws.run("does the ledger balance?", session="books")
    ws.sessions.close()
    panel = panel_for(store_backend, tmp_path)
    listed = panel.sessions(NOTEBOOK)
    assert [row.name for row in listed.sessions] == ["books"] and listed.problem is None
    assert panel.transcript(NOTEBOOK, "books").messages[-1].text == "the ledger balances"
    assert [hit.session for hit in panel.search(NOTEBOOK, "ledger").hits] == ["books", "books"]
    panel.close()
    if store_backend.name == "postgres":  # another user of the same database sees none of it
        monkeypatch.setenv("JUPYTERHUB_USER", "bob")
        other = panel_for(store_backend, tmp_path)
        assert other.sessions(NOTEBOOK).sessions == []
        assert other.search(NOTEBOOK, "ledger").hits == []
        other.close()


def test_reading_beside_a_turn_left_open_leaves_it_open(store_backend: Backend, tmp_path: Path):
    book = store_backend.book(tmp_path)
    book.get("crashed").commit([user_prompt("a turn whose kernel died")], 0)
    book.close()  # the process is gone; its turn was never ended
    panel = panel_for(store_backend, tmp_path)
    assert panel.transcript(NOTEBOOK, "crashed").messages[0].text == "a turn whose kernel died"
    panel.close()
    again = store_backend.bare(tmp_path)
    assert again.open_session("crashed").interrupted is not None  # the viewer closed nothing
    again.close()


def test_a_store_this_user_did_not_create_is_refused_and_left_where_it_is(tmp_path: Path):
    from blitz_kernel.engine.store.sqlite import Store

    foreign = Store.for_workspace(tmp_path)  # as if it came with a clone: no identity recorded
    foreign.open_session("theirs")
    foreign.close()
    panel = Panel(Workspaces(tmp_path, home=tmp_path / "home"))
    listed = panel.sessions(NOTEBOOK)
    assert listed.sessions == [] and listed.problem is not None and "not created by this user" in listed.problem
    assert sorted(path.name for path in (tmp_path / ".blitz").iterdir() if "foreign" in path.name) == []
    assert Store.for_workspace(tmp_path).exists("theirs")  # still there, untouched
    panel.close()
