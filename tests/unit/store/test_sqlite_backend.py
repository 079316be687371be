"""The SQLite backend's own behaviour: its rows, schema migrations, two processes on one file,
SQLite's failures (a corrupt file, a full disk) becoming the store's typed errors, the
transactions a turn costs, and the search plan."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import user_prompt
from blitz_kernel.core.todos import TodoItem
from blitz_kernel.engine.store.factory import open_store
from blitz_kernel.engine.store.locks import SessionLocks
from blitz_kernel.engine.store.protocol import StoreError
from blitz_kernel.engine.store.sqlite import SCHEMA_VERSION, Store
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel

from ..conftest import call, tool_step
from .conftest import BACKENDS
from .test_conformance import a_conversation

ROOT = Path(__file__).resolve().parents[3]
SQLITE = next(backend for backend in BACKENDS if backend.name == "sqlite")


def open_workspace(root: Path, steps: list[Any], **overrides: Any) -> Any:
    return SQLITE.workspace(root, steps, **overrides)


def rows(root: Path, sql: str, *parameters: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(root / ".blitz" / "blitz.db") as db:
        return db.execute(sql, parameters).fetchall()


WRITER = """
import sys
from pathlib import Path
from blitz_kernel.core.history import user_prompt
from blitz_kernel.engine.store.sqlite import Store
store = Store.for_workspace(Path(sys.argv[1]))
session = store.open_session(sys.argv[2])
sys.stdin.readline()  # go
for turn in range(int(sys.argv[3])):
    store.append(session.id, [user_prompt(f"{sys.argv[2]} {turn}")], turn)
print("done")
"""


async def test_compaction_appends_a_summary_row_and_keeps_every_row(tmp_path):
    ws = await a_conversation(SQLITE, tmp_path)
    events = rows(tmp_path, "SELECT id, kind, messages, covers_from, covers_to, covered FROM events ORDER BY id")
    kinds = [kind for _, kind, *_ in events]
    # turn 1: prompt, response + 2 results, answer; turn 2: prompt, answer; summary; turn 3
    assert kinds == ["unit", "unit", "unit", "unit", "unit", "summary", "unit", "unit"]
    summary = events[5]
    assert (summary[3], summary[4]) == (events[0][0], events[2][0])  # it names the rows it covers
    assert summary[5] == 5  # messages of turn 1 (prompt, response, 2 results, answer)
    session = ws.session("s")
    transcript = rows(tmp_path, "SELECT message, role FROM transcript ORDER BY message")
    assert len(transcript) == len(session.archive) + len(session.history)  # nothing deleted
    assert [m for m, _ in transcript] == list(range(len(transcript)))


async def test_a_todo_list_saved_as_plain_json_objects_loads_as_todo_items(tmp_path):
    ws, _ = open_workspace(tmp_path, [{"text": "one"}])
    await ws.run("hi", session="s")
    ws.sessions.close()
    saved = '[{"content": "load", "status": "done"}, {"content": "plot", "status": "pending"}]'
    with sqlite3.connect(tmp_path / ".blitz" / "blitz.db") as db:
        db.execute("UPDATE sessions SET todos = ? WHERE name = 's'", (saved,))
    again, _ = open_workspace(tmp_path, [])
    assert again.session("s").todos == [TodoItem(content="load", status="done"), TodoItem(content="plot")]


async def test_the_todo_list_is_stored_as_plain_json_objects(tmp_path):
    items = [{"content": "load", "status": "done"}, {"content": "plot"}]
    ws, _ = open_workspace(tmp_path, [tool_step(call("todo", items=items)), {"text": "ok"}])
    await ws.run("go", session="s")
    [(stored,)] = rows(tmp_path, "SELECT todos FROM sessions WHERE name = 's'")
    assert json.loads(stored) == [{"content": "load", "status": "done"}, {"content": "plot", "status": "pending"}]


def test_migration_from_version_0(tmp_path):
    path = tmp_path / ".blitz" / "blitz.db"
    path.parent.mkdir()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE unrelated (x)")  # version 0: a database with none of our tables
    store = Store(path)
    store.open_session("s")
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {
        "sessions",
        "events",
        "transcript",
        "transcript_fts",
        "turns",
        "usage",
        "trace_links",
        "unrelated",
    } <= tables


def test_a_newer_schema_is_refused_and_nothing_is_written(tmp_path):
    path = tmp_path / ".blitz" / "blitz.db"
    path.parent.mkdir()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    content, files = path.read_bytes(), sorted(p.name for p in path.parent.iterdir())
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}, newer than"):
        Store(path)
    link = open_store(None, workspace=tmp_path, home=tmp_path / "home")
    assert link.store is None and "upgrade blitz_kernel" in (link.problem or "")
    assert path.read_bytes() == content and sorted(p.name for p in path.parent.iterdir()) == files


def test_two_processes_write_different_sessions_at_once_and_lose_no_row(tmp_path):
    units = 300
    Store.for_workspace(tmp_path).close()  # created once, as the first kernel would
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), name, str(units)],
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [writer.communicate("go\n", timeout=60) for writer in writers]
    assert [(w.returncode, out.strip()) for w, (out, _) in zip(writers, outputs, strict=True)] == [(0, "done")] * 2, (
        outputs
    )
    counts = rows(
        tmp_path, "SELECT s.name, count(*) FROM events e JOIN sessions s ON s.id = e.session_id GROUP BY s.name"
    )
    assert sorted(counts) == [("a", units), ("b", units)]


def byte_locks(folder: Path, holders: dict[str, str]) -> Any:
    from blitz_kernel.engine.store.byte_locks import ByteRangeSessionLocks
    from blitz_kernel.engine.store.private import PrivateDir

    return ByteRangeSessionLocks(PrivateDir(folder, ("locks",), "locks"), holders.get)


def test_one_lock_file_serves_every_session_and_two_holders_exclude_each_other(tmp_path, monkeypatch):
    """A session's lock is a byte of `sessions.lock` (no file per session); it belongs to the
    open file, so a second manager in the same process is refused as another kernel is, and
    the message names the holder the store recorded."""
    monkeypatch.setenv("JPY_SESSION_NAME", "work/analysis.ipynb")
    from blitz_kernel.engine.store.locks import Holder
    from blitz_kernel.errors import SessionBusyError

    holders = {"s": Holder.current().model_dump_json()}
    first, second = byte_locks(tmp_path, holders), byte_locks(tmp_path, holders)
    for name in ("s", "t", "u"):
        first.acquire(name)
    assert sorted(p.name for p in (tmp_path / "locks").iterdir()) == ["sessions.lock"]
    assert (tmp_path / "locks" / "sessions.lock").stat().st_size == 0  # never written
    with pytest.raises(SessionBusyError) as busy:
        second.acquire("s")
    assert f"(pid {os.getpid()}, notebook analysis.ipynb, since " in str(busy.value)
    assert second.holder("t") is not None and second.holder("other") is None and first.holder("s") is None
    first.release("s")
    second.acquire("s")  # free once released
    assert first.holder("s") is not None
    first.release_all()
    second.acquire("t")  # closing the file let every byte go


def test_a_session_an_older_kernel_holds_through_its_own_lock_file_is_busy(tmp_path):
    """Kernels of earlier versions flock `<session>.lock`: while one holds it, the session is
    busy here too, named after the holder record in that file."""
    import fcntl

    from blitz_kernel.errors import SessionBusyError

    (tmp_path / "locks").mkdir()
    older = tmp_path / "locks" / "s.lock"
    older.write_text(json.dumps({"pid": 4242, "notebook": "old.ipynb", "since": 1.0}))
    locks = byte_locks(tmp_path, {})
    with older.open("rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(SessionBusyError, match=r"pid 4242, notebook old.ipynb"):
            locks.acquire("s")
        assert locks.holder("s") is not None and locks.holder("s").pid == 4242
    locks.acquire("s")  # the older kernel let it go
    assert older.read_text().startswith('{"pid": 4242')  # probed, never written


def test_lock_files_per_session_exclude_a_second_holder_in_the_same_process(tmp_path):
    """Where there are no open-file-description locks, a lock file per session (flock)."""
    from blitz_kernel.errors import SessionBusyError

    first, second = SessionLocks(tmp_path / "locks"), SessionLocks(tmp_path / "locks")
    first.acquire("s")
    with pytest.raises(SessionBusyError, match=f"pid {os.getpid()}"):
        second.acquire("s")
    first.release("s")
    second.acquire("s")


def test_lock_file_says_who_holds_it(tmp_path, monkeypatch):
    monkeypatch.setenv("JPY_SESSION_NAME", "work/analysis.ipynb")
    locks = SessionLocks(tmp_path / "locks")
    locks.acquire("s")
    content = (tmp_path / "locks" / "s.lock").read_text()
    assert f'"pid":{os.getpid()}' in content and "analysis.ipynb" in content
    locks.release("s")


async def test_a_corrupt_database_falls_back_to_memory_with_one_line(tmp_path):
    (tmp_path / ".blitz").mkdir()
    (tmp_path / ".blitz" / "blitz.db").write_bytes(b"this is not a database at all" * 100)
    ws, _ = open_workspace(tmp_path, [{"text": "still works"}])
    problem = ws.sessions.store_problem
    assert problem is not None and "\n" not in problem and "not a database" in problem and "memory" in problem
    result = await ws.run("hello", session="s")
    assert result.text == "still works" and len(ws.session("s").history) == 2
    assert not ws.session("s").saved
    assert result.events[-1].not_saved == problem  # type: ignore[union-attr] - the usage line says so


async def test_a_store_path_that_cannot_be_a_directory_falls_back_to_memory(tmp_path):
    (tmp_path / ".blitz").write_text("a file where the directory should be")
    ws, _ = open_workspace(tmp_path, [{"text": "fine"}])
    assert ws.sessions.store_problem is not None and "memory" in ws.sessions.store_problem
    assert (await ws.run("hi")).text == "fine"


async def test_a_full_disk_mid_session_keeps_the_turn_in_memory(tmp_path):
    ws, _ = open_workspace(tmp_path, [{"text": "first"}, tool_step(call("list_files")), {"text": "second"}])
    await ws.run("one", session="s")
    store = ws.sessions.link.store
    assert store is not None
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "database or disk is full"
    result = await ws.run("two " + "x" * 50_000, session="s")
    assert result.stop_reason == "end_turn" and result.text == "second"
    session = ws.session("s")
    assert [m.kind for m in session.history] == ["user", "assistant", "user", "assistant", "tool_result", "assistant"]
    assert not session.saved and "full" in (ws.sessions.store_problem or "")
    assert result.events[-1].not_saved == ws.sessions.store_problem  # type: ignore[union-attr]
    assert rows(tmp_path, "SELECT count(*) FROM events") == [(2,)]  # what was saved stays valid


def test_delete_leaves_no_event_row_of_the_session(tmp_path):
    book = SQLITE.book(tmp_path)
    book.get("gone").commit([user_prompt("remember the zebra")], 0)
    book.get("kept").commit([user_prompt("remember the zebra too")], 0)
    book.delete("gone")
    assert rows(tmp_path, "SELECT count(*) FROM events") == [(1,)]


# -- speed: what a turn costs the store ------------------------------------------------------


def statements(store: Any) -> list[str]:
    """Every statement the store's connection runs from now on (SQLite's trace hook)."""
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    return seen


async def test_one_transaction_per_unit_with_its_audit_rows_and_one_for_the_outcome_and_span(tmp_path):
    """Regression: each unit, each audit row, the outcome and the span link committed on their
    own (10 commits for this turn); now its first 3 units, and the answer with the outcome and
    the span: 4."""
    ws, _ = open_workspace(
        tmp_path,
        [
            tool_step(call("list_files"), call("list_files", path=".")),
            tool_step(call("list_files", path="./"), call("list_files", path="././")),
            {"text": "done"},
        ],
        **{"telemetry.enabled": True, "telemetry.exporter": "memory"},
    )
    ws.session("s")
    seen = statements(ws.sessions.link.store)
    result = await ws.run("go", session="s")
    assert result.stop_reason == "end_turn"
    commits = [sql for sql in seen if sql == "COMMIT"]
    assert len(commits) == 4  # prompt, two responses with their results; the answer with the outcome
    ws.sessions.close()
    assert rows(tmp_path, "SELECT count(*) FROM audit") == [(4,)]
    assert rows(tmp_path, "SELECT count(*) FROM trace_links") == [(1,)]
    again, _ = open_workspace(tmp_path, [])
    assert [record.tool for record in again.audit("s")] == ["list_files"] * 4
    assert again.session("s").history[-1].text == "done"  # type: ignore[union-attr]


def test_a_fresh_session_is_one_small_transaction_and_reads_no_rows(tmp_path):
    """Regression: a fresh session ran 13 statements (insert, select, update, then the full
    load of an empty session); its row now costs one transaction of one insert (the look-up
    only when the name was there: UNIQUE (kind, name) makes the insert a no-op then)."""
    book = SQLITE.book(tmp_path)
    book.get("warm")
    seen = statements(book.link.store)
    session = book.get("fresh")
    assert session.saved and session.history == []
    assert len(seen) == 3 and seen[0] == "BEGIN IMMEDIATE" and seen[-1] == "COMMIT"
    assert seen[1].startswith("INSERT OR IGNORE INTO sessions")
    assert not [sql for sql in seen if "events" in sql or "audit" in sql]
    book.release("fresh")
    again = book.get("fresh")  # the name is there now: the insert does nothing, the row is read
    assert again.saved and again.history == [] and len({r.name for r in book.listing()}) == 2


def test_wal_checkpoints_run_on_a_thread_of_their_own_not_inside_a_commit(tmp_path):
    """Regression: SQLite checkpointed inside whichever commit pushed the WAL past 1,000
    pages (tens of ms for that unit). The store's connection now checkpoints only as a
    backstop, and its own thread copies the WAL back every EVERY_COMMITS commits."""
    import time

    from blitz_kernel.engine.store.sqlite.checkpointer import BACKSTOP_PAGES, EVERY_COMMITS

    store = Store(tmp_path / "blitz.db")
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == BACKSTOP_PAGES
    session = store.open_session("s")
    database = tmp_path / "blitz.db"
    before = database.stat().st_size
    for n in range(EVERY_COMMITS):  # one page a commit: far below SQLite's own 1,000 pages
        store.save_budget(session.id, float(n), False)
    deadline = time.monotonic() + 10
    while database.stat().st_size == before and time.monotonic() < deadline:
        time.sleep(0.01)  # polling the file for the thread's work, bounded
    assert database.stat().st_size > before
    store.close()
    assert store._checkpoints is not None and store._checkpoints._thread is not None
    assert not store._checkpoints._thread.is_alive()


def test_search_runs_no_correlated_subquery_and_finds_rewinds_by_index(tmp_path):
    """Regression: an EXISTS over the session's events ran for every match, and a snippet was
    made for every match before the LIMIT (then for a list of row ids FTS5 tested every match
    against)."""
    book = SQLITE.book(tmp_path)
    session = book.get("s")
    for turn in range(30):
        session.commit([user_prompt(f"common word number {turn}")], turn)
        session.end_turn(turn, "end_turn", None)
    session.rewind_history([29])
    store = book.link.store
    seen = statements(store)
    hits = book.search("common")
    assert len(hits) == 20
    store._db.set_trace_callback(None)
    snippets = [sql for sql in seen if "snippet(" in sql]
    # one query, sought by the range of the 20 rows returned (the 20 newest of 30 here)
    assert len(snippets) == 1 and snippets[0].endswith("rowid >= 11 AND transcript_fts.rowid <= 30")
    assert [h.rewound for h in book.search("number 29")] == [True]
    assert [h.rewound for h in book.search("number 28")] == [False]
    plans = {
        sql: " | ".join(row[-1] for row in store._db.execute("EXPLAIN QUERY PLAN " + sql, ()).fetchall())
        for sql in [s for s in seen if s.startswith("SELECT") and "?" not in s]
    }
    assert plans and not [plan for plan in plans.values() if "CORRELATED" in plan]
    rewind_plans = [plan for sql, plan in plans.items() if "kind = 'rewind'" in sql]
    assert rewind_plans and all("events_rewinds" in plan for plan in rewind_plans)


def fts_check(root: Path) -> None:
    """FTS5's own check that the index matches the transcript rows it was given."""
    rows(root, "INSERT INTO transcript_fts (transcript_fts, rank) VALUES ('integrity-check', 1)")


def test_units_join_the_search_index_in_batches_at_a_turns_end_or_before_a_search(tmp_path):
    """Regression: every unit's transaction wrote to the FTS5 index (a segment each, most of
    a unit's write cost), then every turn's end did (FTS5's merges of the common words' lists
    grew with the session); now the rows go in at a turn's end once a batch of them waits, and
    a search first adds every row still waiting."""
    from blitz_kernel.engine.store.sqlite.rows import INDEX_BATCH_ROWS

    def indexed(word: str) -> int:
        return rows(tmp_path, f"SELECT count(*) FROM transcript_fts WHERE transcript_fts MATCH '{word}'")[0][0]

    book = SQLITE.book(tmp_path)
    session = book.get("s")
    session.commit([user_prompt("the quokka smiles")], 0)
    assert rows(tmp_path, "SELECT count(*) FROM transcript") == [(1,)]
    assert indexed("quokka") == 0
    assert [hit.index for hit in book.search("quokka")] == [0]  # a turn still running
    session.commit([user_prompt("and the wombat digs")], 0)
    session.end_turn(0, "end_turn", None)
    assert indexed("wombat") == 0  # one turn's rows wait for the batch
    assert [hit.index for hit in book.search("wombat")] == [1]  # a search adds them first
    assert indexed("wombat") == 1
    for turn in range(1, INDEX_BATCH_ROWS + 1):
        session.commit([user_prompt(f"the platypus swims, turn {turn}")], turn)
        session.end_turn(turn, "end_turn", None)
    assert 0 < indexed("platypus") <= INDEX_BATCH_ROWS  # a batch went in at a turn's end, no search
    fts_check(tmp_path)
    assert book.search("platypus")[0].index == INDEX_BATCH_ROWS + 1  # the newest first
    assert indexed("platypus") == INDEX_BATCH_ROWS  # every row, once the search added the rest
    fts_check(tmp_path)


def test_deleting_unindexed_rows_keeps_the_index_whole_and_new_rows_findable(tmp_path):
    """A session deleted before its rows were indexed, and the newest rows deleted (their ids
    are then given again): the index stays consistent and later rows are found."""
    book = SQLITE.book(tmp_path)
    book.get("kept").commit([user_prompt("an early platypus")], 0)
    book.get("kept").end_turn(0, "end_turn", None)
    book.get("gone").commit([user_prompt("a platypus never indexed")], 0)
    book.delete("gone")
    fts_check(tmp_path)
    later = book.get("later")
    later.commit([user_prompt("a later platypus")], 0)
    later.end_turn(0, "end_turn", None)
    assert sorted(hit.session for hit in book.search("platypus")) == ["kept", "later"]
    fts_check(tmp_path)


def test_a_fresh_sessions_record_is_what_validation_would_make() -> None:
    """A fresh session's record is constructed without validation (its open costs less): it
    must still be the record validation makes, every field included."""
    from blitz_kernel.core.usage import UsageLedger
    from blitz_kernel.engine.store.records import StoredSession
    from blitz_kernel.engine.store.sqlite.reads import empty_session

    made = empty_session(7, "fresh")
    validated = StoredSession(
        id=7,
        name="fresh",
        history=[],
        archive=[],
        turns=0,
        ledger=UsageLedger(),
        todos=[],
        last_span=None,
        variables=[],
    )
    assert made.model_fields_set == set(StoredSession.model_fields)  # every field given: no factory looked into
    assert made.model_dump() == validated.model_dump()


def test_a_file_system_without_byte_locks_keeps_the_session_in_memory_with_one_line(tmp_path, monkeypatch):
    """A file system that refuses open-file-description locks (ENOLCK) fails no cell: the
    session runs in memory and says why."""
    import errno

    from blitz_kernel.engine.store import byte_locks, factory

    monkeypatch.setattr(factory, "BYTE_RANGE_LOCKS", True)
    real_fcntl = byte_locks.fcntl.fcntl

    def refusing(fd: int, command: int, argument: Any = 0) -> Any:
        if command == byte_locks.fcntl.F_OFD_SETLK:
            raise OSError(errno.ENOLCK, "No locks available")
        return real_fcntl(fd, command, argument)

    monkeypatch.setattr(byte_locks.fcntl, "fcntl", refusing)
    session = SQLITE.book(tmp_path).get("s")
    assert not session.saved
    assert session.not_saved is not None and "cannot be locked here (No locks available)" in session.not_saved
    assert "\n" not in session.not_saved


class WaitingModel(ScriptedModel):
    """A scripted model that sends its request and waits for its provider, as a real one does
    (the headers, a pause, the body, a pause), and notes how many event rows are on disk then."""

    def __init__(self, steps: list[Any], root: Path) -> None:
        super().__init__(steps)
        self.root, self.rows_seen = root, []

    async def stream(self, request: Any) -> Any:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        self.rows_seen.append(rows(self.root, "SELECT count(*) FROM events")[0][0])
        async for item in super().stream(request):
            yield item


async def test_each_unit_is_on_disk_while_the_turn_waits_for_the_next_model_call(tmp_path):
    model = WaitingModel([tool_step(call("list_files")), tool_step(call("list_files")), {"text": "done"}], tmp_path)
    ws = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "home")
    result = await ws.run("go", session="s")
    assert result.stop_reason == "end_turn"
    assert model.rows_seen == [1, 2, 3]  # the prompt, then each response with its results
    assert rows(tmp_path, "SELECT count(*) FROM events") == [(4,)]  # the answer, with the outcome
    ws.sessions.close()
