"""Between turns: the inbox (a steer for an idle session goes, framed, with the next prompt),
truncating the conversation, and the limit on turns that run at once (docs/interface.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from blitz_kernel.core.history import UserMessage
from blitz_kernel.engine.steering import INBOX_HEADER, PROMPT_HEADER
from blitz_kernel.engine.workspace.turns import TurnSlots
from blitz_kernel.errors import SessionBusyError, TooManyTurnsError
from blitz_kernel.models.scripted import ScriptedModel
from tests.helpers.workspaces import open_workspace, scripted_workspace


def _user_texts(request) -> list[str]:
    return [m.text for m in request.messages if isinstance(m, UserMessage)]


async def test_a_steer_for_an_idle_session_is_queued_and_sent_framed_with_the_next_prompt(make_workspace):
    ws, model = make_workspace([{"text": "done"}, {"text": "again"}])
    ws.steer("s", "use pandas")
    ws.steer("s", "and be brief")
    assert ws.session("s").inbox == ["use pandas", "and be brief"]
    await ws.run("load the data", session="s")
    assert _user_texts(model.requests[0]) == [
        f"{INBOX_HEADER}\n- use pandas\n- and be brief\n\n{PROMPT_HEADER}\nload the data"
    ]
    assert ws.session("s").inbox == []
    await ws.run("next", session="s")
    assert _user_texts(model.requests[1])[-1] == "next"  # sent once, not again


async def test_the_inbox_stays_when_the_turn_is_refused_before_it_starts(tmp_path: Path):
    ws, model = scripted_workspace(tmp_path, [{"text": "done"}], **{"limits.max_cost_usd_session": 1.0})
    ws.session("s").trip_budget()
    ws.steer("s", "remember me")
    refused = await ws.run("go", session="s")
    assert refused.stop_reason == "max_cost" and not model.requests
    assert ws.session("s").inbox == ["remember me"]


def test_session_show_lists_the_inbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from blitz_kernel.notebook.magics import BlitzMagics

    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    magics = BlitzMagics(InteractiveShell.instance())
    magics.workspace().steer(magics._current_session(), "check the dates")
    magics.blitz_session("show")
    out = capsys.readouterr().out
    assert "inbox (1, sent with the next prompt):\n  - check the dates" in out


async def test_truncate_drops_the_last_turns_from_the_conversation_only(make_workspace, tmp_path: Path):
    from .conftest import call, tool_step

    ws, model = make_workspace(
        [{"text": "one"}, tool_step(call("write_file", path="b.txt", content="b")), {"text": "two"}, {"text": "3"}],
        **{"approval.tools.write_file": "allow"},
    )
    await ws.run("first", session="s")
    await ws.run("second", session="s")
    report = await ws.history.truncate("s", 1)
    assert report.conversation is not None and "removed turn 2" in report.conversation
    assert (tmp_path / "b.txt").read_text() == "b"  # files stay
    await ws.run("third", session="s")
    assert _user_texts(model.requests[-1]) == ["first", "third"]
    ws.sessions.close()
    again = open_workspace(tmp_path, ScriptedModel([]))
    assert [m.text for m in again.session("s").history if isinstance(m, UserMessage)] == ["first", "third"]


class _Waiting(ScriptedModel):
    """Answers only once `go` is set, so turns stay running while the test starts more."""

    def __init__(self, go: asyncio.Event, both: asyncio.Event, started: list[str]) -> None:
        super().__init__([{"text": "ok"}] * 10)
        self.go, self.both, self.started = go, both, started

    async def stream(self, request):
        self.started.append("x")
        if len(self.started) == 2:
            self.both.set()
        await self.go.wait()
        async for item in super().stream(request):
            yield item


async def test_more_turns_than_the_limit_are_refused_busy_per_workspace_and_per_kernel(tmp_path: Path):
    go, both, started = asyncio.Event(), asyncio.Event(), []
    limit = {"limits.max_concurrent_turns": 2}
    ws = open_workspace(tmp_path / "a", _Waiting(go, both, started), overrides=limit)
    other = open_workspace(tmp_path / "b", _Waiting(go, both, started), overrides=limit)
    running = [asyncio.ensure_future(ws.run("x", session=f"s{n}")) for n in range(2)]
    await asyncio.wait_for(both.wait(), 5)
    with pytest.raises(TooManyTurnsError, match=r"^busy: 2 turns are running in this workspace") as busy:
        await ws.run("one too many", session="s3")
    assert isinstance(busy.value, SessionBusyError)
    with pytest.raises(TooManyTurnsError, match="running in this kernel"):
        await other.run("elsewhere", session="s")
    assert "s3" not in [n for n in ws.sessions.names() if ws.session(n).history]
    go.set()
    assert [r.text for r in await asyncio.gather(*running)] == ["ok", "ok"]
    assert TurnSlots.kernel_running() == 0
    assert (await ws.run("now there is room", session="s3")).text == "ok"


async def test_a_front_end_that_sends_it_itself_can_refuse_the_inbox(make_workspace):
    from blitz_kernel.errors import SteerTooLateError

    ws, _ = make_workspace([])
    with pytest.raises(SteerTooLateError, match="has no running turn"):
        ws.steer("s", "mine", inbox=False)
    assert ws.session("s").inbox == []


def test_leftover_steers_go_framed_as_the_next_prompt_and_with_a_carry_out():
    from blitz_kernel.core.usage import UsageTotals
    from blitz_kernel.engine.steering import LEFTOVER_HEADER
    from blitz_kernel.engine.turn.modes import go_ahead_prompt
    from blitz_kernel.engine.turn.setup import TurnResult
    from blitz_kernel.notebook.live import CARRY_OUT_LABEL, NextTurn, follow_ups

    answered = TurnResult(text="done", stop_reason="end_turn", usage=UsageTotals(), session="s", turn_index=0)
    [alone] = follow_ups(NextTurn("go", plan=False), answered, ["in French", "and shorter"])
    assert alone.prompt == f"{LEFTOVER_HEADER}\n- in French\n- and shorter"
    assert alone.label == "in French\n\nand shorter"  # shown as the user wrote them
    assert follow_ups(NextTurn("go", plan=False), answered, []) == []

    planned = answered.model_copy(update={"plan": "1. do it", "plan_status": "approved"})
    [carry_out] = follow_ups(NextTurn("go", plan=True), planned, ["mind the tests"])
    assert carry_out.prompt == (
        f"{LEFTOVER_HEADER}\n- mind the tests\n\n{PROMPT_HEADER}\n{go_ahead_prompt('1. do it')}"
    )
    assert carry_out.label == CARRY_OUT_LABEL and not carry_out.plan
