"""Stop escalates: a graceful stop that has not ended the turn after `stop.grace_s` becomes a
force stop, so a stream that stalls (the fake server sends nothing) cannot keep a stopping turn
alive until `stall.first_byte_s` (docs/configuration.md)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from blitz_kernel.engine.events import Event, NoticeEvent, TurnDone
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.workspaces import wire_workspace

pytestmark = pytest.mark.usefixtures("model_path")  # the direct OpenAI path and litellm


async def test_a_graceful_stop_on_a_stalled_stream_is_forced_after_the_grace(
    fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")
    fake_server.enqueue({"fault": "stall", "seconds": 60})
    ws = wire_workspace(tmp_path, fake_server, **{"stop.grace_s": 0.5, "stall.first_byte_s": 120})
    events: list[Event] = []
    turn = asyncio.ensure_future(ws.run("hello", session="s", on_event=events.append))
    await asyncio.to_thread(fake_server.wait_for_requests, 1, 60)  # litellm loads first
    asked = time.monotonic()
    assert ws.stop("s")
    result = await asyncio.wait_for(turn, 10)
    took = time.monotonic() - asked
    assert result.stop_reason == "cancelled"
    assert 0.5 <= took < 5  # not before the grace, and far from the 60 s stall
    [done] = [e for e in events if isinstance(e, TurnDone)]
    assert done.forced
    notices = [e for e in events if isinstance(e, NoticeEvent) and e.kind == "force_stop"]
    assert [n.message for n in notices] == [
        "Stop did not end the turn within 0.5 s (stop.grace_s): its running step was cancelled"
    ]
    assert ws.session("s").running is None  # the session takes the next turn


async def test_a_graceful_stop_that_ends_in_time_is_not_forced(
    fake_server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")
    fake_server.enqueue({"text": "a short answer", "hold": "h"})
    ws = wire_workspace(tmp_path, fake_server, **{"stop.grace_s": 30})
    events: list[Event] = []
    turn = asyncio.ensure_future(ws.run("hello", session="s", on_event=events.append))
    await asyncio.to_thread(fake_server.wait_for_requests, 1, 60)  # litellm loads first
    assert ws.stop("s")
    fake_server.release("h")
    result = await asyncio.wait_for(turn, 10)
    [done] = [e for e in events if isinstance(e, TurnDone)]
    assert not done.forced and result.text == "a short answer"
    assert not [e for e in events if isinstance(e, NoticeEvent) and e.kind == "force_stop"]
