"""The PostgreSQL backend's own behaviour beyond the conformance suite (docs/store.md): how a
URL selects it, its schema versions, ownership, an unreachable server, and the holder message.
Against the real server the test session starts (conftest.py `postgres_url`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from blitz_kernel.core.history import user_prompt
from blitz_kernel.core.store_url import shown_url
from blitz_kernel.engine.store.locks import Holder
from blitz_kernel.engine.store.postgres import PostgresStore, owner, workspace_identity
from blitz_kernel.engine.store.postgres.schema import SCHEMA_VERSION
from blitz_kernel.engine.store.protocol import SchemaTooNewError
from blitz_kernel.engine.store.sessions import SessionBook
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import SessionBusyError
from blitz_kernel.models.scripted import ScriptedModel
from tests.helpers.postgres import free_port


@pytest.fixture
def fresh_database(postgres_url: str) -> Iterator[str]:
    """A database of its own on the shared server (for schema tests); its URL."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
    yield postgres_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())


async def test_blitz_store_url_selects_postgres_and_writes_nothing_to_blitz_db(tmp_path, postgres_url):
    ws = Workspace.open(
        tmp_path / "ws",
        model=ScriptedModel([{"text": "hi"}]),
        environ={"BLITZ_STORE_URL": postgres_url},
        home=tmp_path / "home",
    )
    await ws.run("hello")
    assert ws.session("default").saved and ws.sessions.store_problem is None
    assert ws.sessions.location == postgres_url
    assert not (tmp_path / "ws" / ".blitz" / "blitz.db").exists()
    assert not (tmp_path / "ws" / ".blitz" / "locks").exists()
    ws.sessions.close()
    bare = PostgresStore(postgres_url, owner=_me(), workspace=workspace_identity(tmp_path / "ws"))
    assert [m.kind for m in bare.open_session("default").history] == ["user", "assistant"]
    bare.close()


def test_a_workspace_file_cannot_point_the_store_at_a_server_until_trusted(tmp_path, postgres_url):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "blitz.toml").write_text(f'[store]\nurl = "{postgres_url}"\n')
    ws = Workspace.open(root, model=ScriptedModel([]), environ={}, home=tmp_path / "home")
    assert ws.config.store.url is None and "store" in ws.trust.held
    assert ws.sessions.location == ".blitz/blitz.db"


def test_the_schema_is_versioned_in_a_table_and_a_newer_one_is_refused_untouched(tmp_path, fresh_database):
    PostgresStore(fresh_database, owner="me", workspace="/w").close()
    with psycopg.connect(fresh_database, autocommit=True) as db:
        versions = [row[0] for row in db.execute("SELECT version FROM blitz_schema ORDER BY version")]
        assert versions == list(range(1, SCHEMA_VERSION + 1))
        db.execute("INSERT INTO blitz_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
        db.execute("CREATE TABLE left_alone (x int)")
    with pytest.raises(SchemaTooNewError, match=f"schema version {SCHEMA_VERSION + 1}, newer .* left untouched"):
        PostgresStore(fresh_database, owner="me", workspace="/w")
    link = SessionBook.for_workspace(tmp_path, url=fresh_database, home=tmp_path / "home").link
    assert link.store is None and link.problem is not None and "newer than this blitz_kernel" in link.problem
    with psycopg.connect(fresh_database, autocommit=True) as db:
        assert db.execute("SELECT max(version) FROM blitz_schema").fetchone() == (SCHEMA_VERSION + 1,)


def test_a_user_sees_only_their_own_sessions(tmp_path, postgres_url, monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    alice = SessionBook.for_workspace(tmp_path, url=postgres_url, home=tmp_path / "home")
    alice.get("analysis").commit([user_prompt("alice's secret zebra")], 0)
    assert alice.names() == ["analysis"] and alice.search("zebra")
    monkeypatch.setenv("JUPYTERHUB_USER", "bob")
    bob = SessionBook.for_workspace(tmp_path, url=postgres_url, home=tmp_path / "home")
    assert bob.names() == [] and bob.search("zebra") == []
    assert bob.get("analysis").history == []  # bob's own session of that name, not alice's
    alice.close()
    bob.close()
    with psycopg.connect(postgres_url) as db:
        owners = db.execute(
            "SELECT owner FROM sessions WHERE workspace = %s ORDER BY owner", (workspace_identity(tmp_path),)
        ).fetchall()
    assert owners == [("alice",), ("bob",)]


def test_a_second_book_is_refused_by_the_advisory_lock_until_the_first_lets_go(tmp_path, postgres_url):
    first = SessionBook.for_workspace(tmp_path, url=postgres_url, home=tmp_path / "home")
    second = SessionBook.for_workspace(tmp_path, url=postgres_url, home=tmp_path / "home")
    first.get("shared").commit([user_prompt("one")], 0)
    with pytest.raises(
        SessionBusyError, match=r"^session 'shared' is open in another kernel \(pid \d+, since .*, host "
    ):
        second.get("shared")
    first.close()
    assert [m.text for m in second.get("shared").history] == ["one"]
    second.close()


def test_an_unreachable_server_is_one_line_and_sessions_stay_in_memory(tmp_path):
    url = f"postgresql://someone:hunter2@127.0.0.1:{free_port()}/blitz"
    ws = Workspace.open(tmp_path, model=ScriptedModel([]), environ={"BLITZ_STORE_URL": url}, home=tmp_path / "home")
    problem = ws.sessions.store_problem
    assert problem is not None and "\n" not in problem
    assert problem.startswith("cannot reach the session store postgresql://someone:***@127.0.0.1:")
    assert "hunter2" not in problem and problem.endswith("will not survive a kernel restart")
    assert ws.session("s").not_saved is not None
    assert not (tmp_path / ".blitz" / "blitz.db").exists()


def test_messages_never_show_the_password():
    assert shown_url("postgresql://u:secret@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert shown_url("postgresql://u@db/x") == "postgresql://u@db/x"
    assert shown_url("postgresql://db/x") == "postgresql://db/x"


def test_the_holder_names_its_host():
    holder = Holder(pid=42, notebook="a.ipynb", since=0, host="hub-node-3")
    assert holder.describe().startswith("pid 42, notebook a.ipynb, since ") and holder.describe().endswith(
        ", host hub-node-3"
    )
    assert Holder.current().host


def _me() -> str:

    return owner()


def test_sessions_of_another_workspace_are_apart(tmp_path: Path, postgres_url):
    one = SessionBook.for_workspace(tmp_path / "one", url=postgres_url, home=tmp_path / "home")
    one.get("s").commit([user_prompt("in one")], 0)
    other = SessionBook.for_workspace(tmp_path / "two", url=postgres_url, home=tmp_path / "home")
    assert other.names() == [] and one.names() == ["s"]
    one.close()
    other.close()


def test_the_owner_is_the_hub_user_else_the_os_user():
    import getpass

    assert owner({"JUPYTERHUB_USER": "alice"}) == "alice"
    assert owner({}) == getpass.getuser()


def test_without_postgresql_installed_the_server_helper_fails_with_what_to_do(monkeypatch):
    import tests.helpers.postgres as helper

    monkeypatch.setattr(helper.glob, "glob", lambda pattern: [])
    with pytest.raises(helper.PostgresMissing, match=r"PostgreSQL is not installed .* run scripts/postgres.sh"):
        helper.PostgresServer().start()


def test_a_statement_timeout_is_a_busy_store_error_naming_the_server(postgres_url):
    from blitz_kernel.engine.store.postgres.edge import translate
    from blitz_kernel.engine.store.protocol import StoreBusyError

    with (
        psycopg.connect(postgres_url, autocommit=True, options="-c statement_timeout=10") as db,
        pytest.raises(psycopg.Error) as raised,
    ):
        db.execute("SELECT pg_sleep(5)")
    error = translate(raised.value, shown_url(postgres_url), "write to")
    assert isinstance(error, StoreBusyError)
    assert str(error).startswith(f"cannot write to the session store {postgres_url}: canceling statement")


def test_a_viewer_never_sets_up_or_migrates_the_database(tmp_path, fresh_database):
    """The side panel reads the team's store: opening it must not create blitz's tables (nor
    migrate them, which would lock older kernels out)."""
    from blitz_kernel.engine.store.factory import open_store

    link = open_store(fresh_database, workspace=tmp_path, home=tmp_path / "home", viewer=True)
    assert link.store is None and link.problem is not None and "schema version 0" in link.problem
    with psycopg.connect(fresh_database, autocommit=True) as db:
        assert db.execute("SELECT to_regclass('blitz_schema')").fetchone() == (None,)
    PostgresStore(fresh_database, owner="me", workspace="/w").close()  # a kernel sets it up
    viewed = open_store(fresh_database, workspace=tmp_path, home=tmp_path / "home", viewer=True)
    assert viewed.store is not None
    viewed.store.close()


def test_each_search_is_planned_for_its_own_words(fresh_database):
    """psycopg prepares a statement after its fifth run, and the server then may plan it once for
    every query: a word in every message and a rare one need different plans."""
    store = PostgresStore(fresh_database, owner="me", workspace="/w")
    session = store.open_session("s")
    for turn in range(20):
        store.append(session.id, [user_prompt(f"the outlier in column {turn}")], turn)
    for _ in range(8):
        assert store.search("outlier", "s")
    prepared = store.connection.execute(
        "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%ts_rank_cd%'"
    ).fetchone()
    store.close()
    assert prepared == (0,)


def test_a_unit_reaches_the_server_in_two_messages_and_a_fresh_session_in_one(fresh_database, monkeypatch):
    """The statements are bound on the client and sent together (docs/store.md): quotes,
    backslashes, `$$`, semicolons and SQL in a message are values, never statements."""
    store = PostgresStore(fresh_database, owner="me", workspace="/w")
    session = store.open_session("s")
    store.append(session.id, [user_prompt("warm-up")], 0)
    messages: list[bytes] = []
    send = psycopg.Cursor.execute

    def counting(cursor, query, *args, **kwargs):
        messages.append(query if isinstance(query, bytes) else str(query).encode())
        return send(cursor, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counting)
    assert store.open_session("fresh").history == [] and len(messages) == 1  # a fresh session's row: one statement
    messages.clear()
    tricky = "it's \\ 'quoted' \"too\"\n$$; DROP TABLE events; -- ünïcode 😀 %s %(x)s ?"
    store.append(session.id, [user_prompt(tricky), user_prompt("second")], 1)
    monkeypatch.undo()
    assert len(messages) == 2 and messages[-1].rstrip().endswith(b"COMMIT")
    reopened = PostgresStore(fresh_database, owner="me", workspace="/w")
    history = reopened.open_session("s").history
    assert [message.text for message in history] == ["warm-up", tricky, "second"]  # type: ignore[union-attr]
    assert reopened.search("quoted", "s")[0].turn == 1
    reopened.close()
    store.close()


def test_a_statement_that_fails_in_a_batch_rolls_back_the_whole_unit(fresh_database):
    store = PostgresStore(fresh_database, owner="me", workspace="/w")
    session = store.open_session("s")
    store.append(session.id, [user_prompt("kept")], 0)
    with pytest.raises(psycopg.Error), store.link.transaction() as work:
        work.execute("UPDATE sessions SET last_used = 0 WHERE id = %s", (session.id,))
        work.execute("INSERT INTO events (session_id) VALUES (NULL)")  # NOT NULL: the batch fails here
    assert store.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    store.append(session.id, [user_prompt("after")], 1)  # the connection is usable
    last_used = store.connection.execute("SELECT last_used FROM sessions WHERE id = %s", (session.id,)).fetchone()
    assert last_used is not None and last_used[0] > 0
    store.close()
    reopened = PostgresStore(fresh_database, owner="me", workspace="/w")
    assert [message.text for message in reopened.open_session("s").history] == ["kept", "after"]  # type: ignore[union-attr]
    reopened.close()
