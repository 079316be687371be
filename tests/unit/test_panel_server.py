"""The side panel's reads (blitz_kernel/server/panel.py, docs/panel.md) on a store a real
workspace wrote: the session list with who holds a session, ranked search with its matches
split out, the transcript, usage per model, the budget with the admin policy's ceiling, the
audit trail's filters — and that none of it writes to the store or creates one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.usage import Price
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.server.completion import Workspaces
from blitz_kernel.server.panel import Panel, PanelError, Part, split_excerpt

from .conftest import call, tool_step

NOTEBOOK = "analysis.ipynb"


def open_workspace(root: Path, steps: list[Any]) -> Workspace:
    model = ScriptedModel(steps, price=Price(input=1.0, output=2.0))
    return Workspace.open(root, model=model, overrides={}, environ={}, home=root / "home")


@pytest.fixture
def written(tmp_path: Path) -> Workspace:
    """Two sessions: `hunt` (two turns, two tool calls, still held) and `other` (one turn)."""
    (tmp_path / "notes.txt").write_text("the outlier is in March")
    ws = open_workspace(
        tmp_path,
        [
            {**tool_step(call("read_file", path="notes.txt"), call("list_files")), "model": "model-a"},
            {"text": "Found the outlier in March.", "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
            {"text": "second answer about pandas"},
            {"text": "an unrelated answer"},
        ],
    )
    return ws


async def fill(ws: Workspace) -> None:
    await ws.run("where is the outlier?", session="hunt")
    await ws.run("and pandas?", session="hunt")
    await ws.run("hello", session="other")


@pytest.fixture
def panel(tmp_path: Path) -> Iterator[Panel]:
    made = Panel(Workspaces(tmp_path, home=tmp_path / "home"))
    yield made
    made.close()


async def test_the_list_shows_each_session_newest_first_with_its_cost_and_holder(written, panel, tmp_path):
    await fill(written)
    listed = panel.sessions(NOTEBOOK)
    assert listed.problem is None and listed.store == ".blitz/blitz.db" and listed.workspace == "."
    assert [(row.name, row.turns) for row in listed.sessions] == [("other", 1), ("hunt", 2)]
    hunt = listed.sessions[1]
    assert hunt.cost_usd > 0 and hunt.input_tokens >= 100 and hunt.output_tokens >= 10
    assert hunt.held_by is not None and "pid" in hunt.held_by  # this process's kernel holds it
    written.sessions.close()
    assert all(row.held_by is None for row in panel.sessions(NOTEBOOK).sessions)


async def test_reading_writes_nothing(written, panel, tmp_path):
    await fill(written)
    written.sessions.close()
    database = tmp_path / ".blitz" / "blitz.db"
    before = panel.sessions(NOTEBOOK)
    panel.transcript(NOTEBOOK, "hunt")
    panel.budget(NOTEBOOK, "hunt")
    panel.audit(NOTEBOOK, "hunt")
    panel.usage(NOTEBOOK)
    panel.search(NOTEBOOK, "outlier")
    with pytest.raises(PanelError, match="no session 'ghost'"):
        panel.transcript(NOTEBOOK, "ghost")
    after = panel.sessions(NOTEBOOK)
    assert after == before  # no session created, no `last_used` moved
    assert database.is_file()


def test_a_folder_without_a_store_has_no_sessions_and_gets_no_store(panel, tmp_path):
    listed = panel.sessions(NOTEBOOK)
    assert listed.sessions == [] and listed.problem == "no sessions saved in this folder yet"
    with pytest.raises(PanelError, match="no sessions saved"):
        panel.transcript(NOTEBOOK, "hunt")
    assert not (tmp_path / ".blitz").exists()


def test_a_notebook_outside_the_root_is_refused(panel):
    with pytest.raises(Exception, match="outside the server's root"):
        panel.sessions("../elsewhere/x.ipynb")


async def test_search_ranks_across_sessions_and_splits_out_the_matches(written, panel):
    await fill(written)
    found = panel.search(NOTEBOOK, "OUTLIER")
    assert found.hits and {hit.session for hit in found.hits} == {"hunt"}
    matched = [part.text for hit in found.hits for part in hit.parts if part.match]
    assert matched and all(text.lower() == "outlier" for text in matched)
    assert all("«" not in part.text for hit in found.hits for part in hit.parts)
    assert [hit.session for hit in panel.search(NOTEBOOK, "pandas", session="other").hits] == []
    assert panel.search(NOTEBOOK, "   ").hits == []


def test_an_excerpt_splits_into_plain_and_matched_parts():
    assert split_excerpt("a «b» c «d»") == [
        Part(text="a "),
        Part(text="b", match=True),
        Part(text=" c "),
        Part(text="d", match=True),
    ]
    assert split_excerpt("no marks «open") == [Part(text="no marks «open")]


async def test_the_transcript_has_every_message_in_order(written, panel):
    await fill(written)
    shown = panel.transcript(NOTEBOOK, "hunt")
    assert shown.turns == 2
    roles = [entry.role for entry in shown.messages]
    assert roles[0] == "user" and "result of read_file" in roles and roles[-1] == "assistant"
    assert shown.messages[0].text == "where is the outlier?"
    assert shown.messages[-1].text == "second answer about pandas"


async def test_usage_per_model_of_one_session_and_of_all(written, panel):
    await fill(written)
    one = panel.usage(NOTEBOOK, "hunt")
    every = panel.usage(NOTEBOOK)
    assert one.total.calls == 3 and every.total.calls == 4
    assert sum(item.totals.calls for item in every.by_model) == 4
    assert every.total.cost_usd == pytest.approx(sum(item.totals.cost_usd for item in every.by_model))


async def test_the_budget_follows_the_admin_policy_and_says_what_is_left(written, panel, tmp_path, monkeypatch):
    await fill(written)
    assert panel.budget(NOTEBOOK, "hunt").limit_usd is None
    policy = tmp_path / "policy.toml"
    policy.write_text("[locked]\nlimits.max_cost_usd_session = 5\n")
    monkeypatch.setenv("BLITZ_ADMIN_POLICY", str(policy))
    fresh = Panel(Workspaces(tmp_path, home=tmp_path / "home"))
    budget = fresh.budget(NOTEBOOK, "hunt")
    assert budget.limit_usd == 5 and budget.left_usd == pytest.approx(5 - budget.spent_usd)
    assert budget.spent_usd > 0 and not budget.tripped
    policy.write_text("[locked\n")  # a policy that does not parse fails closed
    broken = Panel(Workspaces(tmp_path, home=tmp_path / "home"))
    listed = broken.sessions(NOTEBOOK)
    assert listed.sessions == [] and listed.problem is not None and "policy.toml" in listed.problem
    fresh.close()
    broken.close()


async def test_the_audit_trail_filters_by_tool_and_decision(written, panel):
    await fill(written)
    every = panel.audit(NOTEBOOK, "hunt")
    assert [r.tool for r in every.records] == ["read_file", "list_files"]
    assert every.tools == ["list_files", "read_file"] and every.decisions == ["allowed"]
    assert [r.tool for r in panel.audit(NOTEBOOK, "hunt", tool="list_files").records] == ["list_files"]
    assert panel.audit(NOTEBOOK, "hunt", decision="denied").records == []
    assert panel.audit(NOTEBOOK, "hunt", decision="denied").tools == ["list_files", "read_file"]


def test_usage_per_day_is_each_turns_ledger_less_the_one_before():
    from datetime import datetime

    from blitz_kernel.core.usage import UsageLedger, UsageTotals
    from blitz_kernel.engine.store.records import TurnUsage
    from blitz_kernel.server.panel import per_day

    def ledger(**models: tuple[int, float]) -> UsageLedger:
        made = UsageLedger()
        for model, (calls, cost) in models.items():
            made.by_model[model] = UsageTotals(calls=calls, cost_usd=cost, input_tokens=10 * calls)
        return made

    monday, tuesday = datetime(2026, 3, 2, 12).timestamp(), datetime(2026, 3, 3, 12).timestamp()
    turns = [
        TurnUsage(turn=0, ended=monday, ledger=ledger(a=(2, 0.2))),
        TurnUsage(turn=1, ended=None, ledger=None),  # interrupted: its spend falls to the next
        TurnUsage(turn=2, ended=tuesday, ledger=ledger(a=(3, 0.3), b=(1, 1.0))),
    ]
    final = ledger(a=(4, 0.4), b=(1, 1.0))  # one more call after the last turn (a compaction)
    days = per_day(turns, final, last_used=tuesday)
    assert {key: (t.calls, round(t.cost_usd, 6), t.input_tokens) for key, t in days.items()} == {
        ("2026-03-02", "a"): (2, 0.2, 20),
        ("2026-03-03", "a"): (2, 0.2, 20),
        ("2026-03-03", "b"): (1, 1.0, 10),
    }
    assert per_day([], final, last_used=monday)[("2026-03-02", "b")].calls == 1  # nothing kept per turn


async def test_usage_per_day_of_a_real_store_adds_up_to_the_total(written, panel):
    await fill(written)
    every = panel.usage(NOTEBOOK)
    assert every.by_day and sum(item.totals.calls for item in every.by_day) == every.total.calls
    assert every.by_day[0].day == __import__("datetime").date.today().isoformat()
    with pytest.raises(PanelError, match="no session 'ghost'"):
        panel.usage(NOTEBOOK, "ghost")
