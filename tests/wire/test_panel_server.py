"""The side panel's endpoints through the real Jupyter Server extension (docs/panel.md): a
workspace writes sessions to its store (no kernel runs while the panel reads), and the
endpoints list, search, open and account for them as JSON — behind the server's token."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.usage import Price
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel

from .test_completion_server import INSTALLED, Server

NOTEBOOK = "project/nb.ipynb"


def write_sessions(folder: Path, home: Path) -> None:
    """What a kernel in `folder` would leave behind: two sessions, one with a tool call."""
    (folder / "data.csv").write_text("a,b\n1,2\n")
    model = ScriptedModel(
        [
            {"text": "", "tool_calls": [{"name": "list_files", "arguments": {}}]},
            {
                "text": "The quarterly revenue table is data.csv.",
                "usage": {"prompt_tokens": 50, "completion_tokens": 9},
            },
            {"text": "Nothing else."},
        ],
        price=Price(input=1.0, output=2.0),
    )
    ws = Workspace.open(folder, model=model, overrides={}, environ={}, home=home)

    async def turns() -> None:
        await ws.run("which file has the revenue?", session="finance")
        await ws.run("anything else?", session="scratch")

    asyncio.run(turns())
    ws.sessions.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    assert INSTALLED.is_file(), f"{INSTALLED} is missing: `pip install -e .` installs the server extension's config"
    root, home = tmp_path_factory.mktemp("root"), tmp_path_factory.mktemp("home")
    (root / "project").mkdir()
    (root / "empty").mkdir()
    write_sessions(root / "project", home)
    running = Server(root, home, "http://127.0.0.1:9/unused")
    yield running
    running.stop()


def read(server: Server, path: str) -> Any:
    return server.get(path)


def query(**arguments: str) -> str:
    return urllib.parse.urlencode({"path": NOTEBOOK, **arguments})


def test_the_sessions_are_listed_with_their_turns_and_cost(server: Server):
    listed = read(server, f"/blitz/panel/sessions?{query()}")
    assert listed["store"] == ".blitz/blitz.db" and listed["problem"] is None
    rows = {row["name"]: row for row in listed["sessions"]}
    assert set(rows) == {"finance", "scratch"}
    assert rows["finance"]["turns"] == 1 and rows["finance"]["cost_usd"] > 0
    assert rows["finance"]["held_by"] is None  # no kernel runs


def test_search_finds_a_word_with_the_match_marked(server: Server):
    found = read(server, f"/blitz/panel/search?{query(q='revenue')}")
    hits = found["hits"]
    assert isinstance(hits, list) and hits and {hit["session"] for hit in hits} == {"finance"}
    assert any(part == {"text": "revenue", "match": True} for hit in hits for part in hit["parts"])


def test_transcript_usage_budget_and_audit_of_one_session(server: Server):
    transcript = read(server, f"/blitz/panel/transcript?{query(session='finance')}")
    texts = [entry["text"] for entry in transcript["messages"]]
    assert texts[0] == "which file has the revenue?" and texts[-1] == "The quarterly revenue table is data.csv."
    usage = read(server, f"/blitz/panel/usage?{query()}")
    assert usage["total"]["calls"] == 3
    assert sum(item["totals"]["calls"] for item in usage["by_day"]) == 3
    budget = read(server, f"/blitz/panel/budget?{query(session='finance')}")
    assert budget["limit_usd"] is None and budget["spent_usd"] > 0
    audit = read(server, f"/blitz/panel/audit?{query(session='finance', tool='list_files')}")
    assert [r["tool"] for r in audit["records"]] == ["list_files"]
    assert audit["decisions"] == ["allowed"]


def test_an_unknown_session_is_a_400_saying_so(server: Server):
    with pytest.raises(urllib.error.HTTPError) as refused:
        read(server, f"/blitz/panel/transcript?{query(session='ghost')}")
    assert refused.value.code == 400 and "no session 'ghost'" in str(refused.value.reason)


def test_a_folder_without_sessions_lists_none_and_gets_no_store(server: Server, tmp_path_factory):
    listed = read(server, "/blitz/panel/sessions?path=empty/nb.ipynb")
    assert listed["sessions"] == [] and listed["problem"] == "no sessions saved in this folder yet"


def test_without_the_token_nothing_is_answered(server: Server):
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.request(f"/blitz/panel/sessions?{query()}", token=False), timeout=10)
    assert refused.value.code == 403
