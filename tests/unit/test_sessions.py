"""Sessions, snapshots and search (`%blitz_session`), in memory."""

from __future__ import annotations

import pytest

from blitz_kernel.core.history import SummaryMessage
from blitz_kernel.engine.store.sessions import SessionBook, SessionError


async def test_snapshot_is_a_deep_copy_and_loading_starts_a_new_session(make_workspace):
    ws, model = make_workspace([{"text": "first answer"}, {"text": "second answer"}, {"text": "branch answer"}])
    await ws.run("first question", session="main")
    ws.sessions.snapshot("main", "before")
    await ws.run("second question", session="main")
    loaded = ws.sessions.load("before")
    assert loaded.name == "before-2"
    assert [m.kind for m in loaded.history] == ["user", "assistant"]
    await ws.run("branch question", session="before-2")
    texts = [getattr(m, "text", "") for m in model.requests[2].messages]
    assert texts == ["first question", "first answer", "branch question"]
    assert len(ws.session("main").history) == 4  # the original went on untouched
    assert ws.sessions.load("before").name == "before-3"  # the snapshot itself never changed


def test_create_delete_and_errors():
    book = SessionBook()
    book.create("a")
    with pytest.raises(SessionError, match="already exists"):
        book.create("a")
    book.delete("a")
    with pytest.raises(SessionError, match="no session 'a'"):
        book.delete("a")
    with pytest.raises(SessionError, match="no snapshot 'nope'"):
        book.load("nope")


async def test_search_finds_prompts_answers_tool_results_and_compacted_parts(make_workspace, tmp_path):
    (tmp_path / "notes.txt").write_text("the outlier is in March")
    ws, _ = make_workspace(
        [
            {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"text": "Found the outlier."},
            {"text": "later"},
            {"text": "SUMMARY"},
        ]
    )
    await ws.run("where is the OUTLIER?", session="s")
    await ws.run("and then?", session="s")
    await ws.compact("s")
    assert isinstance(ws.session("s").history[0], SummaryMessage)
    hits = sorted(ws.sessions.search("outlier"), key=lambda hit: hit.index)  # ranked: put in order
    assert [(h.session, h.role, h.compacted) for h in hits] == [
        ("s", "user", True),
        ("s", "result of read_file", True),
        ("s", "assistant", True),
    ]
    assert "March" in hits[1].excerpt and "«outlier»" in hits[1].excerpt
    assert ws.sessions.search("nothing like this") == []
