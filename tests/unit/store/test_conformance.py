"""The session store's conformance suite: what every backend must do, through the engine
(Workspace, SessionBook) and the SessionStore protocol, never through its SQL. Each test that
takes `store_backend` runs once per backend (conftest.py): round trips, compaction, restarts,
snapshots, concurrency, locks across processes, interrupted turns, resume notes, search, audit
and budgets. The SQLite backend's own rows are tested in test_sqlite_backend.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import (
    HISTORY_ADAPTER,
    AssistantMessage,
    SummaryMessage,
    UserMessage,
    check_history,
    user_prompt,
)
from blitz_kernel.core.todos import TodoItem
from blitz_kernel.core.usage import Price, TokenUsage, UsageLedger
from blitz_kernel.engine.store.locks import SessionNameError
from blitz_kernel.engine.store.log import PAUSES_BEFORE_WRITE
from blitz_kernel.engine.store.resume import code_names, variable_names
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import SessionBusyError
from blitz_kernel.models.scripted import ScriptedModel

from ..conftest import call, tool_step
from .conftest import Backend

ROOT = Path(__file__).resolve().parents[3]
TELEMETRY = {"telemetry.enabled": True, "telemetry.exporter": "memory"}


def dump(messages: list[Any]) -> list[dict[str, Any]]:
    return HISTORY_ADAPTER.dump_python(messages, mode="json")


def run_script(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=environment, capture_output=True, text=True, timeout=60
    )


class FakeKernel:
    """The front end's KernelContext: a user namespace."""

    def __init__(self, names: dict[str, Any]) -> None:
        self.user_ns = names
        self.hidden_names: dict[str, Any] = {}


async def a_conversation(backend: Backend, root: Path) -> Workspace:
    (root / "notes.txt").write_text("the outlier is in March")
    ws, _ = backend.workspace(
        root,
        [
            tool_step(call("read_file", path="notes.txt"), call("list_files"), text="Reading."),
            {"text": "Found the outlier.", "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
            {"text": "second answer"},
            {"text": "SUMMARY of the outlier hunt"},
            {"text": "third answer"},
        ],
    )
    await ws.run("where is the outlier?", session="s")
    await ws.run("and then?", session="s")
    await ws.compact("s")
    await ws.run("and now?", session="s")
    return ws


# -- round trips ---------------------------------------------------------------------------


async def test_append_and_load_round_trip_equals_the_in_memory_session(store_backend: Backend, tmp_path):
    ws = await a_conversation(store_backend, tmp_path)
    before = ws.session("s")
    expected = (dump(before.history), dump(before.archive), before.turns, before.ledger.model_dump())
    ws.sessions.close()

    again, _ = store_backend.workspace(tmp_path, [])
    loaded = again.session("s")
    assert (dump(loaded.history), dump(loaded.archive), loaded.turns, loaded.ledger.model_dump()) == expected
    assert isinstance(loaded.history[0], SummaryMessage)
    assert loaded.ledger.total.calls == 5 and loaded.ledger.total.cost_usd > 0
    check_history(loaded.history)


async def test_always_allowed_is_not_kept_but_todos_and_turns_are(store_backend: Backend, tmp_path):
    ws, _ = store_backend.workspace(tmp_path, [{"text": "one"}])
    await ws.run("hi", session="s")
    state = ws.session("s")
    state.always_allowed.add("write_file")
    ws.sessions.close()
    again, _ = store_backend.workspace(tmp_path, [])
    assert again.session("s").always_allowed == set() and again.session("s").turns == 1


async def test_the_todo_list_survives_a_restart_as_todo_items(store_backend: Backend, tmp_path):
    items = [{"content": "load", "status": "done"}, {"content": "plot"}]
    ws, _ = store_backend.workspace(tmp_path, [tool_step(call("todo", items=items)), {"text": "ok"}])
    await ws.run("go", session="s")
    ws.sessions.close()
    again, _ = store_backend.workspace(tmp_path, [])
    assert again.session("s").todos == [TodoItem(content="load", status="done"), TodoItem(content="plot")]


async def test_ENG91_previous_turn_link_survives_a_restart(store_backend: Backend, tmp_path):
    ws, _ = store_backend.workspace(tmp_path, [{"text": "one"}], **TELEMETRY)
    await ws.run("first", session="s")
    [first] = [s for s in ws.telemetry.memory.get_finished_spans() if s.name == "blitz.turn"]
    ws.sessions.close()
    again, _ = store_backend.workspace(tmp_path, [{"text": "two"}], **TELEMETRY)
    await again.run("second", session="s")
    [second] = [s for s in again.telemetry.memory.get_finished_spans() if s.name == "blitz.turn"]
    [link] = second.links
    assert (link.context.trace_id, link.context.span_id) == (first.context.trace_id, first.context.span_id)
    assert link.attributes["link.type"] == "previous_turn"


async def test_snapshot_survives_restart_and_loading_it_starts_a_new_session(store_backend: Backend, tmp_path):
    ws, _ = store_backend.workspace(tmp_path, [{"text": "first answer"}, {"text": "second answer"}])
    await ws.run("first question", session="main")
    ws.sessions.snapshot("main", "before")
    await ws.run("second question", session="main")
    ws.sessions.close()
    again, model = store_backend.workspace(tmp_path, [{"text": "branch answer"}])
    assert again.sessions.snapshot_names() == ["before"]
    loaded = again.sessions.load("before")
    assert loaded.name == "before-2"
    await again.run("branch question", session="before-2")
    assert [getattr(m, "text", "") for m in model.requests[0].messages] == [
        "first question",
        "first answer",
        "branch question",
    ]
    assert again.sessions.names() == ["before-2", "main"]
    assert len(again.session("main").history) == 4


# -- schema ---------------------------------------------------------------------------------


# -- concurrency and locks --------------------------------------------------------------------


def test_two_threads_write_different_sessions_at_once_and_lose_no_row(store_backend: Backend, tmp_path):
    units = 150
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def writer(name: str) -> None:
        try:
            store = store_backend.bare(tmp_path)  # its own connection, as another kernel has
            session = store.open_session(name)
            start.wait(timeout=30)
            for turn in range(units):
                store.append(session.id, [user_prompt(f"{name} {turn}")], turn)
            store.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == []
    bare = store_backend.bare(tmp_path)
    counts = [(name, len(bare.open_session(name).history)) for name in ("a", "b")]
    bare.close()
    assert sorted(counts) == [("a", units), ("b", units)]


HOLDER = """
import sys, os
from pathlib import Path
os.environ["JPY_SESSION_NAME"] = "/home/me/analysis.ipynb"
from blitz_kernel.engine.store.sessions import SessionBook
root = Path(sys.argv[1])
book = SessionBook.for_workspace(root, url=sys.argv[2] or None, home=root / "home")
book.get("analysis")
print("held", flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def holder_process(store_backend: Backend, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A second process (another kernel) that holds session 'analysis' until killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path), store_backend.url(tmp_path) or ""],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # blocks until it holds the lock (or dies)
    assert line.strip() == "held", process.stderr.read() if process.stderr else ""
    yield process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)


def test_a_session_held_by_another_process_is_busy_with_who_holds_it(store_backend: Backend, tmp_path, holder_process):
    book = store_backend.book(tmp_path)
    with pytest.raises(SessionBusyError) as raised:
        book.get("analysis")
    message = str(raised.value)
    assert message.startswith(
        f"session 'analysis' is open in another kernel (pid {holder_process.pid}, notebook analysis.ipynb, since "
    )
    assert "\n" not in message
    with pytest.raises(SessionBusyError, match="open in another kernel"):
        book.delete("analysis")  # asks nothing, refuses
    [listed] = book.listing()
    assert listed.name == "analysis" and listed.held_by is not None and listed.held_by.pid == holder_process.pid
    assert book.get("other").name == "other"  # the way out


def test_the_lock_is_released_when_the_holder_is_killed(store_backend: Backend, tmp_path, holder_process):
    book = store_backend.book(tmp_path)
    with pytest.raises(SessionBusyError):
        book.get("analysis")
    holder_process.send_signal(signal.SIGKILL)
    holder_process.wait(timeout=30)
    assert book.get("analysis").name == "analysis"
    assert book.listing()[0].held_by is None  # held by this book now, not by another kernel


def test_delete_removes_every_row_of_a_free_session(store_backend: Backend, tmp_path):
    book = store_backend.book(tmp_path)
    session = book.get("gone")
    session.commit([user_prompt("remember the zebra")], 0)
    book.get("kept").commit([user_prompt("remember the zebra too")], 0)
    book.delete("gone")
    assert book.names() == ["kept"]
    assert [hit.session for hit in book.search("zebra")] == ["kept"]
    book.close()
    bare = store_backend.bare(tmp_path)  # what is left on disk: the kept session alone
    assert not bare.exists("gone") and [info.name for info in bare.sessions()] == ["kept"]
    assert len(bare.open_session("kept").history) == 1 and bare.open_session("gone").history == []
    bare.close()


@pytest.mark.parametrize("name", ["", "  ", "a/b", "../up", "x..y", "tab\there", "bell\x07", "back\\slash"])
def test_bad_session_names_are_a_clear_error(store_backend: Backend, tmp_path, name):
    book = store_backend.book(tmp_path)
    with pytest.raises(SessionNameError, match="session name"):
        book.get(name)
    assert not (tmp_path / ".blitz" / "locks").exists() or list((tmp_path / ".blitz" / "locks").iterdir()) == []


# -- interrupted turns ----------------------------------------------------------------------------

KILLED_MID_TURN = """
import os, signal, sys, asyncio, json
from pathlib import Path
from pydantic import BaseModel
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.tools.registry import Tool, ToolKind

class NoArgs(BaseModel):
    pass

async def die(args, ctx):
    os.kill(os.getpid(), signal.SIGKILL)  # the process dies in the middle of the turn

steps = [
    {"text": "first answer"},
    {"text": "looking", "tool_calls": [{"name": "list_files", "arguments": {}}]},
    {"text": "dying", "tool_calls": [{"name": "die", "arguments": {}}]},
]
ws = Workspace.open(Path(sys.argv[1]), model=ScriptedModel(steps), overrides=json.loads(sys.argv[2]), environ={},
                    home=Path(sys.argv[1]) / "home")
ws.tools.register(Tool(name="die", description="die", args_model=NoArgs, kind=ToolKind.READ_ONLY, func=die))
asyncio.run(ws.run("first", session="s"))
asyncio.run(ws.run("second", session="s"))
"""


def test_a_turn_whose_process_died_is_interrupted_on_the_next_open(store_backend: Backend, tmp_path):
    (tmp_path / "a.txt").write_text("x")
    died = run_script(KILLED_MID_TURN, str(tmp_path), json.dumps(store_backend.overrides(tmp_path)))
    assert died.returncode == -signal.SIGKILL, died.stderr
    ws, _ = store_backend.workspace(tmp_path, [])
    session = ws.session("s")
    assert session.interrupted is not None and session.interrupted.turn == 1
    assert session.interrupted.stop_reason == "interrupted"
    assert session.turns == 2
    check_history(session.history)  # the unit whose call never finished is not there
    assert [m.kind for m in session.history] == ["user", "assistant", "user", "assistant", "tool_result"]
    outcomes = ws.sessions.outcomes("s")
    assert [(o.turn, o.stop_reason) for o in outcomes] == [(0, "end_turn"), (1, "interrupted")]
    ws.sessions.close()
    reopened, _ = store_backend.workspace(tmp_path, [])
    assert reopened.session("s").interrupted is None  # reported once


# -- resume note ----------------------------------------------------------------------------------


def test_code_names_are_created_and_read_user_variables():
    code = "import pandas as pd\ndf = pd.read_csv(path)\ntotal = sum(x for x in df.a)\ndef f(y):\n    return y + z\n"
    assert code_names(code) == {"pd", "df", "path", "total", "f", "z"}
    assert code_names("this is (not python") == set()


async def test_after_a_restart_the_first_prompt_names_the_variables_that_are_gone(store_backend: Backend, tmp_path):
    first, _ = store_backend.workspace(
        tmp_path,
        [
            tool_step(call("run_python", code="df = load(path)\ntotal = df.sum()")),
            {"text": "done"},
        ],
    )
    await first.run("load it", session="s", approve="deny")
    first.sessions.close()

    again, model = store_backend.workspace(tmp_path, [{"text": "ok"}, {"text": "ok again"}])
    again.kernel = FakeKernel({"df": object()})  # the notebook re-created df, not the rest
    await again.run("what is the total?", session="s")
    prompt = model.requests[0].messages[-1]
    assert isinstance(prompt, UserMessage)
    assert prompt.parts[-1].text == "what is the total?"  # type: ignore[union-attr]
    note = prompt.text
    assert "kernel was restarted" in note and "no longer exist: load, path, total." in note and "df," not in note
    await again.run("and then?", session="s")
    assert model.requests[1].messages[-1].text == "and then?"  # only the first prompt
    assert variable_names(model.requests[1].messages) == ["df", "load", "path", "total"]


async def test_no_note_for_a_new_session_or_in_the_same_kernel(store_backend: Backend, tmp_path):
    ws, model = store_backend.workspace(tmp_path, [{"text": "a"}, {"text": "b"}])
    await ws.run("one", session="s")
    await ws.run("two", session="s")
    assert [m.text for m in model.requests[1].messages if isinstance(m, UserMessage)] == ["one", "two"]


# -- search -----------------------------------------------------------------------------------------


def test_search_ranks_highlights_and_filters_by_session(store_backend: Backend, tmp_path):
    book = store_backend.book(tmp_path)
    one, two = book.get("one"), book.get("two")
    one.commit([user_prompt("a long message that mentions the merge once among many other words " * 3)], 0)
    one.commit([user_prompt("merge merge: how do I merge these frames?")], 1)
    two.commit([user_prompt("the merge went fine")], 0)
    hits = book.search("MERGE")
    assert [(h.session, h.index) for h in hits][0] == ("one", 1)  # the densest passage first
    assert {(h.session, h.index) for h in hits} == {("one", 0), ("one", 1), ("two", 0)}
    assert "«merge»" in hits[0].excerpt and hits[0].turn == 1 and hits[0].role == "user"
    assert [(h.session, h.index) for h in book.search("merge", session="two")] == [("two", 0)]
    assert book.search("merge frames") and book.search("frames banana") == []
    assert book.search('"; DROP TABLE events; --') == []  # words only, no query syntax


# -- faults -------------------------------------------------------------------------------------------


def test_a_workspace_can_be_opened_without_a_store(tmp_path):
    ws = Workspace.open(tmp_path, model=ScriptedModel([]), environ={}, home=tmp_path / "home", durable=False)
    assert ws.session("s").not_saved is None  # in memory on purpose: nothing to warn about
    assert not (tmp_path / ".blitz").exists() and ws.sessions.store_problem is None


def test_many_appends_load_back_in_order(store_backend: Backend, tmp_path):
    store = store_backend.bare(tmp_path)
    session = store.open_session("s")
    for turn in range(200):
        store.append(session.id, [user_prompt(f"prompt {turn}")], turn)
    assert store.open_session("s").history == [user_prompt(f"prompt {turn}") for turn in range(200)]


# -- the search_session tool ------------------------------------------------------------


async def test_search_session_tool_finds_compacted_passages_in_plan_mode(store_backend: Backend, tmp_path):
    (await a_conversation(store_backend, tmp_path)).sessions.close()
    again, model = store_backend.workspace(
        tmp_path, [tool_step(call("search_session", query="march")), {"text": "found it"}]
    )
    result = await again.run("where was the outlier?", session="s", plan=True)
    assert result.stop_reason == "end_turn"
    [found] = [m for m in model.requests[1].messages if getattr(m, "name", None) == "search_session"]
    assert found.error is None and found.output is not None
    header, excerpt = found.output.split("\n")[:2]
    assert header.startswith("[message 2, result of read_file, ") and header.endswith(
        "(compacted away: only the summary stands for it in what you see)"
    )
    assert excerpt.endswith("\tthe outlier is in «March»")  # read_file numbers its lines


def test_the_plain_usage_line_says_the_session_is_not_saved():
    from blitz_kernel.core.usage import UsageTotals
    from blitz_kernel.engine.events import TurnDone
    from blitz_kernel.notebook.lines import usage_line
    from blitz_kernel.notebook.widgets.state import TurnState

    lines = []
    for not_saved in (None, "disk full"):
        state = TurnState(turn_id="t", prompt="p", session="s")
        state.apply(TurnDone(stop_reason="end_turn", usage=UsageTotals(), not_saved=not_saved))
        lines.append(usage_line(state))
    saved, unsaved = lines
    assert "not saved" not in saved
    assert unsaved.startswith(saved.rsplit(" · ", 2)[0]) and unsaved.endswith(
        " · end_turn · ⚠ session not saved (%blitz_session show says why)"
    )


def test_two_compactions_replay_exactly_and_mark_what_the_model_no_longer_sees(store_backend: Backend, tmp_path):
    book = store_backend.book(tmp_path)
    session = book.get("s")
    for turn, word in enumerate(["alpha", "bravo", "charlie"]):
        session.commit([user_prompt(f"{word} question")], turn)
        session.commit([AssistantMessage(text=f"{word} answer")], turn)
    session.replace_window(3, SummaryMessage(text="first summary", covered_events=3))  # splits turn 2
    session.commit([user_prompt("delta question")], 3)
    session.replace_window(2, SummaryMessage(text="second summary", covered_events=2))
    expected = (dump(session.history), dump(session.archive))
    book.close()
    again = store_backend.book(tmp_path)
    loaded = again.get("s")
    assert (dump(loaded.history), dump(loaded.archive)) == expected
    assert [m.kind for m in loaded.history] == ["summary", "user", "assistant", "user"]
    compacted = {hit.excerpt.split()[0].strip("«»"): hit.compacted for hit in again.search("question")}
    assert compacted == {"alpha": True, "bravo": True, "charlie": False, "delta": False}
    summaries = {hit.excerpt: hit.compacted for hit in again.search("summary")}
    assert summaries == {"first «summary»": True, "second «summary»": False}


def test_the_plain_front_end_says_why_once_and_not_saved_on_every_usage_line(capsys):
    from blitz_kernel.core.usage import UsageTotals
    from blitz_kernel.engine.events import TurnDone
    from blitz_kernel.notebook.render import plain_event_handler
    from blitz_kernel.notebook.widgets.state import TurnState

    reason = f"cannot open the session store (test {id(capsys)}); sessions are kept in memory only"
    for _ in range(2):
        handle = plain_event_handler(TurnState(turn_id="t", prompt="p", session="s"))
        handle(TurnDone(stop_reason="end_turn", usage=UsageTotals(), not_saved=reason))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"⚠ {reason}" and len(lines) == 3
    assert all(line.endswith("⚠ session not saved (%blitz_session show says why)") for line in lines[1:])


async def test_WS07_GR05_audit_and_a_budget_trip_survive_a_restart(store_backend: Backend, tmp_path):
    from blitz_kernel.engine.workspace import Workspace
    from blitz_kernel.models.scripted import ScriptedModel

    from ..conftest import call, tool_step

    def reopen(steps):
        model = ScriptedModel(steps, price=Price(input=0.0, output=1_000_000.0))
        overrides = {"limits.max_cost_usd_session": 1.0, **store_backend.overrides(tmp_path)}
        return Workspace.open(tmp_path, model=model, overrides=overrides, environ={}, home=tmp_path / "home")

    spend = {"usage": {"prompt_tokens": 1, "completion_tokens": 2}}
    ws = reopen([{**tool_step(call("list_files")), **spend}, {"text": "never"}])
    result = await ws.run("go", session="s")
    assert result.stop_reason == "max_cost" and ws.session("s").budget_tripped
    ws.sessions.close()

    again = reopen([{"text": "after the top-up"}])
    state = again.session("s")
    assert state.budget_tripped
    # the ceiling tripped before the call ran: audited as cancelled all the same
    assert [(r.tool, r.decision, r.status) for r in again.audit("s")] == [("list_files", "cancelled", "cancelled")]
    refused = await again.run("more", session="s")
    assert refused.stop_reason == "max_cost" and "--add-budget" in (refused.error or "")
    again.add_budget("s", 5.0)
    again.sessions.close()
    third = reopen([{"text": "after the top-up"}])
    assert not third.session("s").budget_tripped and third.session("s").budget_added_usd == 5.0
    assert (await third.run("more", session="s")).text == "after the top-up"


async def test_a_manual_compactions_cost_is_saved_at_once(store_backend: Backend, tmp_path):
    """Regression: the summariser's usage reached the disk only at the next turn's end, so a
    restart right after %blitz_compact lost it."""
    ws, _ = store_backend.workspace(
        tmp_path,
        [{"text": "a", "usage": {"prompt_tokens": 10, "completion_tokens": 1}}] * 2
        + [{"text": "SUMMARY", "usage": {"prompt_tokens": 100, "completion_tokens": 50}}],
    )
    await ws.run("one", session="s")
    await ws.run("two", session="s")
    before = ws.usage("s").total.calls
    await ws.compact("s")
    assert ws.usage("s").total.calls == before + 1
    ws.sessions.close()
    again, _ = store_backend.workspace(tmp_path, [])
    assert again.usage("s").total.calls == before + 1


async def test_the_inbox_survives_a_restart_and_goes_framed_with_the_next_prompt(store_backend: Backend, tmp_path):
    from blitz_kernel.engine.steering import INBOX_HEADER, PROMPT_HEADER

    ws, _ = store_backend.workspace(tmp_path, [])
    ws.steer("s", "use pandas")
    ws.steer("s", "token sk-abcdefghijklmnopqrstuvwx0123456789abcd")  # stored redacted, like every row
    ws.sessions.close()

    again, model = store_backend.workspace(tmp_path, [{"text": "done"}])
    assert again.session("s").inbox[0] == "use pandas"
    assert "sk-abcdefghijklmnopqrstuvwx0123456789abcd" not in again.session("s").inbox[1]
    await again.run("load the data", session="s")
    [prompt] = [m.text for m in model.requests[0].messages if isinstance(m, UserMessage)]
    assert prompt.startswith(f"{INBOX_HEADER}\n- use pandas\n- ") and prompt.endswith(f"{PROMPT_HEADER}\nload the data")
    again.sessions.close()

    third, _ = store_backend.workspace(tmp_path, [])
    assert third.session("s").inbox == []  # taken by the turn that sent it, in the store too


async def test_the_watchdogs_window_survives_a_restart(store_backend: Backend, tmp_path):
    """A loop that ran to max_turns in one kernel is stopped by the watchdog in the next: the
    window of recent calls came back with the session."""
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    a, b = call("read_file", path="a.txt"), call("read_file", path="b.txt")
    limits = {"limits.repeat_warn": 2, "limits.repeat_stop": 3, "limits.max_turns": 3}
    ws, _ = store_backend.workspace(tmp_path, [tool_step(a), tool_step(b), tool_step(a)], **limits)
    assert (await ws.run("cell 1", session="s")).stop_reason == "max_turns"
    ws.sessions.close()

    again, model = store_backend.workspace(tmp_path, [tool_step(b), tool_step(a), tool_step(b)], **limits)
    second = await again.run("cell 2", session="s")
    assert second.stop_reason == "watchdog", second.error
    assert len(model.requests) == 3  # the third round's `b` was refused
    again.sessions.close()

    third, model = store_backend.workspace(tmp_path, [tool_step(a), {"text": "fine"}], **limits)
    assert (await third.run("cell 3", session="s")).stop_reason == "end_turn"  # the stop started afresh


async def test_read_session_reads_a_held_session_and_writes_nothing(store_backend: Backend, tmp_path):
    ws = await a_conversation(store_backend, tmp_path)
    held = ws.session("s")  # this kernel still holds it: a viewer reads beside it
    viewer = store_backend.bare(tmp_path)
    before = viewer.sessions()
    seen = viewer.read_session("s")
    assert seen is not None
    assert (dump(seen.history), dump(seen.archive), seen.turns) == (dump(held.history), dump(held.archive), 3)
    assert seen.ledger.total.calls == held.ledger.total.calls == 5
    assert [r.tool for r in seen.audit] == ["read_file", "list_files"]
    assert viewer.read_session("nobody") is None
    assert viewer.sessions() == before  # nothing created, no `last_used` moved
    viewer.close()


async def test_each_turn_keeps_the_ledger_as_it_ended(store_backend: Backend, tmp_path):
    ws = await a_conversation(store_backend, tmp_path)
    final = ws.session("s").ledger
    viewer = store_backend.bare(tmp_path)
    kept = viewer.turn_usage("s")
    assert [t.turn for t in kept] == [0, 1, 2] and all(t.ended is not None for t in kept)
    calls = [t.ledger.total.calls for t in kept if t.ledger is not None]
    assert calls == [2, 3, 5]  # the compaction's call is in the third turn's ledger
    assert kept[-1].ledger == final
    assert viewer.turn_usage("nobody") == []
    viewer.close()


# -- the answer goes with the turn's outcome ------------------------------------------------------


def test_an_answer_given_with_the_outcome_is_stored_as_a_unit_of_its_turn(store_backend: Backend, tmp_path):
    store = store_backend.bare(tmp_path)
    session = store.open_session("s")
    answer = AssistantMessage(text="the outlier is in March")
    store.append(session.id, [user_prompt("where?")], 0)
    store.end_turn(session.id, 0, "end_turn", None, ledger=UsageLedger(), todos=[], answer=[answer])
    store.append(session.id, [user_prompt("and then?")], 1)  # numbered after the answer
    store.close()
    again = store_backend.bare(tmp_path)
    loaded = again.open_session("s")
    assert loaded.history == [user_prompt("where?"), answer, user_prompt("and then?")]
    assert [(o.turn, o.stop_reason) for o in again.outcomes("s")] == [(0, "end_turn"), (1, "interrupted")]
    assert [hit.message for hit in again.search("outlier")] == [1]


async def test_a_write_between_the_answer_and_the_outcome_keeps_the_order_on_disk(store_backend: Backend, tmp_path):
    book = store_backend.book(tmp_path)
    session = book.get("s")
    session.commit([user_prompt("where?")], 0)
    session.commit([AssistantMessage(text="in March")], 0)  # held: no pause of the loop yet
    session.record_usage("m", TokenUsage(input_tokens=7, output_tokens=2), 0.01)  # written at once, after both
    session.end_turn(0, "end_turn", None)
    book.close()
    again = store_backend.book(tmp_path).get("s")
    assert dump(again.history) == dump([user_prompt("where?"), AssistantMessage(text="in March")])
    assert again.turns == 1 and again.ledger.total.input_tokens == 7


async def test_a_committed_unit_is_written_at_the_loops_second_pause(store_backend: Backend, tmp_path):
    """The write overlaps whatever the turn waits for next (its model, a tool) instead of
    holding up the request: not in the pause between a request's headers and its body, but
    in the next one; with no loop to pause it is written at once."""
    book = store_backend.book(tmp_path)
    session = book.get("s")
    session.commit([user_prompt("where?")], 0)
    reader = store_backend.bare(tmp_path)
    assert reader.open_session("s").history == []
    await asyncio.sleep(0)  # the request's headers are out; its body goes next
    assert reader.open_session("s").history == []
    await asyncio.sleep(0)  # the turn waits for its answer: the loop runs the write
    assert reader.open_session("s").history == [user_prompt("where?")]
    reader.close()
    book.close()


async def test_each_held_unit_waits_its_own_pauses(store_backend: Backend, tmp_path):
    """A unit committed while another waits writes that one first; the pauses it waits for are
    counted from its own commit, not from the first one's."""
    book = store_backend.book(tmp_path)
    session = book.get("s")
    session.commit([user_prompt("where?")], 0)
    await asyncio.sleep(0)
    session.commit([AssistantMessage(text="in March")], 0)  # the prompt is written first
    reader = store_backend.bare(tmp_path)
    assert reader.open_session("s").history == [user_prompt("where?")]
    await asyncio.sleep(0)  # the prompt's second pause, the answer's first
    assert reader.open_session("s").history == [user_prompt("where?")]
    await asyncio.sleep(0)
    assert dump(reader.open_session("s").history) == dump([user_prompt("where?"), AssistantMessage(text="in March")])
    reader.close()
    book.close()


def test_with_no_running_loop_a_unit_is_written_at_once(store_backend: Backend, tmp_path):
    book = store_backend.book(tmp_path)
    book.get("s").commit([user_prompt("where?")], 0)
    reader = store_backend.bare(tmp_path)
    assert reader.open_session("s").history == [user_prompt("where?")]
    reader.close()
    book.close()


def test_a_very_common_word_is_ranked_among_the_newest_matches(store_backend: Backend, tmp_path, monkeypatch):
    """Search ranks the newest CANDIDATES matching messages only (a word in every message
    would have every one ranked): an older, better match outside them is not shown."""
    from blitz_kernel.engine.store.sqlite import reads

    monkeypatch.setattr(reads, "CANDIDATES", 5)
    book = store_backend.book(tmp_path)
    session = book.get("s")
    session.commit([user_prompt("ferret ferret ferret")], 0)  # the best match, but the oldest
    for turn in range(1, 9):
        session.commit([user_prompt(f"a ferret in a long sentence about turn number {turn} of many")], turn)
    session.end_turn(8, "end_turn", None)
    store = book.link.store
    assert store is not None
    hits = store.search("ferret", limit=3)
    assert len(hits) == 3 and all(hit.message >= 4 for hit in hits)
    monkeypatch.setattr(reads, "CANDIDATES", 100)
    assert store.search("ferret", limit=3)[0].message == 0  # with every match ranked, it wins
    book.close()


async def test_deleting_a_session_with_a_unit_still_waiting_leaves_no_row(store_backend: Backend, tmp_path):
    book = store_backend.book(tmp_path)
    book.get("gone").commit([user_prompt("remember the zebra")], 0)  # waits for the loop's pause
    book.delete("gone")
    for _ in range(PAUSES_BEFORE_WRITE):  # the pauses come: nothing is left to write
        await asyncio.sleep(0)
    assert book.search("zebra") == [] and "gone" not in book.names()
    book.close()
