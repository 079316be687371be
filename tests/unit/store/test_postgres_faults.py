"""The PostgreSQL store when its connection fails (docs/store.md): a dropped connection is
re-established with backoff and its session locks taken again; the unit that was being written
is retried whole, never half-written nor written twice; a session another kernel took meanwhile
is reported busy; a statement timeout drops the store with nothing half-written. Against the
real server the test session starts (conftest.py `postgres_url`), the connection killed with
`pg_terminate_backend`."""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest

from blitz_kernel.core.history import user_prompt
from blitz_kernel.engine.store.postgres import PostgresStore, connection, owner, rows, workspace_identity
from blitz_kernel.engine.store.postgres.locks import lock_key
from blitz_kernel.engine.store.sessions import SessionBook
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import SessionBusyError
from blitz_kernel.models.scripted import ScriptedModel
from tests.helpers.postgres import free_port


def book(root: Path, url: str) -> SessionBook:
    return SessionBook.for_workspace(root, url=url, home=root / "home")


def kill_holder(url: str, root: Path, session: str) -> None:
    """Terminate the server connection that holds `session`'s lock (only that one: other tests'
    kernels share the server)."""
    key = lock_key(owner(), workspace_identity(root), session) & 0xFFFF_FFFF_FFFF_FFFF
    with psycopg.connect(url, autocommit=True) as admin:
        [(killed,)] = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE locktype = 'advisory' "
            "AND classid::bigint = %s AND objid::bigint = %s AND granted",
            (key >> 32, key & 0xFFFF_FFFF),
        ).fetchall()
    assert killed == 1


def texts(root: Path, url: str, session: str = "s") -> list[str]:
    other = book(root, url)
    try:
        return [getattr(m, "text", "") for m in other.get(session).history]
    finally:
        other.close()


def event_rows(url: str, root: Path) -> int:
    with psycopg.connect(url, autocommit=True) as admin:
        [(count,)] = admin.execute(
            "SELECT count(*) FROM events e JOIN sessions s ON s.id = e.session_id "
            "WHERE s.workspace = %s AND s.owner = %s",
            (workspace_identity(root), owner()),
        ).fetchall()
    return int(count)


def test_a_dropped_connection_is_re_established_and_the_lock_taken_again(tmp_path, postgres_url):
    first = book(tmp_path, postgres_url)
    session = first.get("s")
    session.commit([user_prompt("saved before")], 0)
    kill_holder(postgres_url, tmp_path, "s")
    session.commit([user_prompt("after the drop")], 1)
    assert first.store_problem is None and session.saved
    # the lock is this kernel's again: a second kernel is refused by name
    second = book(tmp_path, postgres_url)
    with pytest.raises(SessionBusyError, match=r"^session 's' is open in another kernel \(pid \d+"):
        second.get("s")
    second.close()
    first.close()
    assert texts(tmp_path, postgres_url) == ["saved before", "after the drop"]


def test_a_unit_whose_connection_drops_mid_transaction_is_retried_whole(tmp_path, postgres_url, monkeypatch):
    first = book(tmp_path, postgres_url)
    session = first.get("s")
    session.commit([user_prompt("one")], 0)
    original = rows.transcribe
    drops: list[bool] = []

    def dropping(*args, **kwargs):
        if not drops:  # the first attempt: the unit's event row is in, its transcript not yet
            drops.append(True)
            kill_holder(postgres_url, tmp_path, "s")
        return original(*args, **kwargs)

    monkeypatch.setattr(rows, "transcribe", dropping)
    session.commit([user_prompt("two")], 1)
    assert drops == [True] and first.store_problem is None and session.saved
    first.close()
    assert event_rows(postgres_url, tmp_path) == 2  # the failed attempt left nothing behind
    assert texts(tmp_path, postgres_url) == ["one", "two"]


def test_the_server_is_asked_whether_a_transaction_committed(postgres_url):
    link = connection.Link(postgres_url, postgres_url)
    try:
        with link.transaction() as db:
            committed = db.execute("SELECT pg_current_xact_id()::text").fetchall()[0][0]
        with pytest.raises(RuntimeError), link.transaction() as db:
            rolled_back = db.execute("SELECT pg_current_xact_id()::text").fetchall()[0][0]
            raise RuntimeError("the unit fails")
        assert link._committed(committed) and not link._committed(rolled_back)
    finally:
        link.db.close()


def test_a_session_taken_while_the_connection_was_lost_is_reported_busy(tmp_path, postgres_url):
    first = book(tmp_path, postgres_url)
    session = first.get("s")
    session.commit([user_prompt("mine")], 0)
    kill_holder(postgres_url, tmp_path, "s")
    second = book(tmp_path, postgres_url)
    taken = second.get("s")  # free: the server let go of the dead connection's lock
    taken.commit([user_prompt("theirs")], 1)
    session.commit([user_prompt("must not land")], 1)
    problem = first.store_problem
    assert problem is not None and "the connection to the store was lost, and meanwhile session 's' is open" in problem
    assert "in another kernel (pid " in problem and "this kernel no longer saves that session" in problem
    assert not session.saved
    second.close()
    first.close()
    assert texts(tmp_path, postgres_url) == ["mine", "theirs"]


def test_a_server_that_stays_away_drops_the_store_after_the_backoff(tmp_path, postgres_url, monkeypatch):
    monkeypatch.setattr(connection, "RECONNECT_PAUSES_S", (0.01, 0.01))
    first = book(tmp_path, postgres_url)
    session = first.get("s")
    session.commit([user_prompt("saved")], 0)
    store = first.link.store
    assert isinstance(store, PostgresStore)
    store.link.url = f"postgresql://blitz@127.0.0.1:{free_port()}/postgres"  # nobody answers there now
    kill_holder(postgres_url, tmp_path, "s")
    session.commit([user_prompt("not saved")], 1)
    problem = first.store_problem
    assert problem is not None and problem.startswith("cannot reach the session store ") and not session.saved
    first.close()
    assert texts(tmp_path, postgres_url) == ["saved"]


def test_a_statement_timeout_drops_the_store_with_nothing_half_written(tmp_path, postgres_url, monkeypatch):
    monkeypatch.setattr(connection, "STATEMENT_TIMEOUT_MS", 300)
    first = book(tmp_path, postgres_url)
    session = first.get("s")
    session.commit([user_prompt("saved")], 0)
    before = event_rows(postgres_url, tmp_path)
    locked, release = threading.Event(), threading.Event()

    def hold_the_table() -> None:  # a server in trouble: the events table is locked elsewhere
        with psycopg.connect(postgres_url) as other, other.transaction():
            other.execute("LOCK TABLE transcript IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold_the_table)
    holder.start()
    try:
        assert locked.wait(30)
        session.commit([user_prompt("timed out")], 1)
    finally:
        release.set()
        holder.join(30)
    problem = first.store_problem
    assert problem is not None and "canceling statement due to statement timeout" in problem
    assert not session.saved
    assert event_rows(postgres_url, tmp_path) == before  # the event row went with the rest
    first.close()
    assert texts(tmp_path, postgres_url) == ["saved"]


async def test_a_connection_dropped_mid_turn_loses_nothing_of_the_turn(tmp_path, postgres_url):
    def drop_then_answer(request: object) -> dict[str, str]:
        kill_holder(postgres_url, tmp_path, "s")  # between the tool's unit and the answer's
        return {"text": "done"}

    model = ScriptedModel([{"tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]}, drop_then_answer])
    workspace = Workspace.open(
        tmp_path, model=model, overrides={"store.url": postgres_url}, environ={}, home=tmp_path / "home"
    )
    result = await workspace.run("look around", session="s")
    assert result.stop_reason == "end_turn", result.error
    assert workspace.sessions.store_problem is None and workspace.session("s").saved
    workspace.sessions.close()
    reopened = book(tmp_path, postgres_url)
    try:
        history = reopened.get("s").history
        assert [type(m).__name__ for m in history] == [
            "UserMessage",
            "AssistantMessage",
            "ToolResultMessage",
            "AssistantMessage",
        ]
        assert reopened.outcomes("s")[-1].stop_reason == "end_turn"
    finally:
        reopened.close()
