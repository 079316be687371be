"""The fallback chain, breakers and stall limits through the real litellm path: a workspace
configured with `fallback_models` against the fake server, which tells us which model names
it was asked for. Every model of the chain points at the same fake server; the names tell
them apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.engine.events import ModelSwitchEvent, UsageEvent
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.breaker import BreakerState, breaker_for, reset_breakers
from tests.fakeserver import FakeOpenAIServer
from tests.helpers.wire import received_models
from tests.helpers.workspaces import wire_workspace

pytestmark = pytest.mark.usefixtures("model_path")  # the direct OpenAI path and litellm

PRIMARY = "openai/primary-model"
FALLBACK = "openai/fallback-model"


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    reset_breakers()
    yield
    reset_breakers()


def open_workspace(
    tmp_path: Path, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch, **settings: Any
) -> Workspace:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wire-not-a-real-key")
    return wire_workspace(tmp_path, server, PRIMARY, retries=None, fallback_models=[FALLBACK], **settings)


async def test_GR01_the_fallback_answers_once_the_primary_has_spent_its_retries_on_500s(
    tmp_path: Path, fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_server.enqueue(
        *[{"fault": "status", "status": 500, "message": "upstream exploded"}] * 2,
        {"text": "the fallback answers", "usage": {"prompt_tokens": 30, "completion_tokens": 3}},
    )
    workspace = open_workspace(
        tmp_path, fake_server, monkeypatch, model_retries=1, prices={FALLBACK: {"input": 1.0, "output": 2.0}}
    )

    result = await workspace.run("hello")

    assert result.text == "the fallback answers" and result.stop_reason == "end_turn"
    assert received_models(fake_server) == ["primary-model", "primary-model", "fallback-model"]
    assert fake_server.requests[2].body["messages"] == fake_server.requests[0].body["messages"]  # same request
    switches = [event for event in result.events if isinstance(event, ModelSwitchEvent)]
    assert switches == [ModelSwitchEvent(failed=PRIMARY, reason="HTTP 500: upstream exploded", answered_by=FALLBACK)]
    (usage,) = [event for event in result.events if isinstance(event, UsageEvent)]
    assert usage.model == FALLBACK and usage.cost_usd == pytest.approx((30 * 1.0 + 3 * 2.0) / 1e6)


async def test_GR02_with_the_breaker_open_the_primary_is_not_called_at_all(
    tmp_path: Path, fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_server.enqueue(
        {"fault": "status", "status": 503, "message": "overloaded"}, {"text": "first answer"}, {"text": "second answer"}
    )
    workspace = open_workspace(
        tmp_path, fake_server, monkeypatch, model_retries=0, **{"breaker.failures": 1, "breaker.cooldown_s": 3600}
    )
    await workspace.run("first", session="s")
    assert received_models(fake_server) == ["primary-model", "fallback-model"]
    assert breaker_for(PRIMARY).state is BreakerState.OPEN

    result = await workspace.run("second", session="s")

    assert result.text == "second answer"
    assert received_models(fake_server)[2:] == ["fallback-model"]  # the primary was skipped
    (switch,) = [event for event in result.events if isinstance(event, ModelSwitchEvent)]
    assert (switch.failed, switch.answered_by) == (PRIMARY, FALLBACK)
    assert switch.reason.startswith("circuit open after 1 consecutive failure(s); next try in")


async def test_GR03_a_stalled_primary_is_a_stall_the_fallback_chain_acts_on(
    tmp_path: Path, fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_server.enqueue({"fault": "stall", "seconds": 30}, {"text": "awake elsewhere"})
    # the budget also bounds the fallback's healthy answer: generous for a busy machine
    workspace = open_workspace(tmp_path, fake_server, monkeypatch, model_retries=0, **{"stall.first_byte_s": 1.0})

    result = await workspace.run("hello")

    assert result.text == "awake elsewhere"
    assert received_models(fake_server) == ["primary-model", "fallback-model"]
    (switch,) = [event for event in result.events if isinstance(event, ModelSwitchEvent)]
    assert switch.reason == "sent nothing for 1 s (stall.first_byte_s)"


async def test_GR01_text_already_streamed_is_not_replaced_by_the_fallback(
    tmp_path: Path, fake_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_server.enqueue({"fault": "reset_mid_stream", "text": "The answer is"}, {"text": "never sent"})
    workspace = open_workspace(tmp_path, fake_server, monkeypatch, model_retries=3)

    result = await workspace.run("hello")

    assert result.stop_reason == "error"
    assert result.error is not None and "after part of the answer was shown" in result.error
    assert received_models(fake_server) == ["primary-model"] and fake_server.pending_steps == 1
    assert not [event for event in result.events if isinstance(event, ModelSwitchEvent)]
