"""The fallback chain and its circuit breakers, on scripted models and a controllable clock.

The chain is driven with `ScriptedModel`s (and one tiny model that breaks mid-answer, which a
script cannot express); time is a `FakeClock` the test moves, so nothing waits.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.core.history import user_prompt
from blitz_kernel.core.usage import Price
from blitz_kernel.engine.events import ModelSwitchEvent, TextEvent, UsageEvent
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import (
    ConfigError,
    ContextWindowError,
    FallbackExhaustedError,
    ModelUnavailableError,
)
from blitz_kernel.models.base import (
    Model,
    ModelRequest,
    ModelResponse,
    ModelSwitch,
    StreamItem,
    TextDelta,
)
from blitz_kernel.models.breaker import BreakerState, CircuitBreaker, breaker_for, reset_breakers
from blitz_kernel.models.factory import build_model
from blitz_kernel.models.fallback import FallbackModel
from blitz_kernel.models.litellm_model import LiteLLMModel
from blitz_kernel.models.placeholder import PlaceholderModel
from blitz_kernel.models.scripted import ScriptedModel


class FakeClock:
    """Monotonic time that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class BreaksMidAnswer:
    """Streams some text, then fails the way a dropped connection does."""

    def __init__(self, name: str = "breaks") -> None:
        self.name = name
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.calls += 1
        yield TextDelta(text="The answer is")
        raise ModelUnavailableError(self.name, "the connection broke after part of the answer was shown")

    def price(self, model: str) -> Price | None:
        return None

    def context_window(self) -> int | None:
        return None


@pytest.fixture(autouse=True)
def fresh_breakers() -> Iterator[None]:
    """Breakers are per process: every test starts (and leaves) with none."""
    reset_breakers()
    yield
    reset_breakers()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def request() -> ModelRequest:
    return ModelRequest(system="test", messages=[user_prompt("hi")])


async def collect(model: Model) -> list[StreamItem]:
    return [item async for item in model.stream(request())]


def answer(text: str = "from the fallback") -> dict[str, Any]:
    return {"text": text, "usage": {"prompt_tokens": 10, "completion_tokens": 4}}


def failure(kind: str = "unavailable", message: str = "HTTP 500: upstream exploded") -> dict[str, Any]:
    return {"error": kind, "message": message}


def chain(*models: Model, clock: FakeClock | None = None, failures: int = 3, cooldown_s: float = 60) -> FallbackModel:
    return FallbackModel(list(models), breaker_failures=failures, breaker_cooldown_s=cooldown_s, clock=clock)


# -- the breaker on its own --------------------------------------------------------------------


def test_GR02_a_breaker_opens_after_n_consecutive_failures(clock: FakeClock) -> None:
    breaker = CircuitBreaker("m", failures=3, cooldown_s=60, clock=clock)

    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED and breaker.allow()
    breaker.record_failure()

    assert breaker.state is BreakerState.OPEN and not breaker.allow()
    assert breaker.describe() == "circuit open after 3 consecutive failure(s); next try in 60 s (breaker.cooldown_s)"


def test_GR02_a_success_in_between_resets_the_count(clock: FakeClock) -> None:
    breaker = CircuitBreaker("m", failures=2, cooldown_s=60, clock=clock)

    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()

    assert breaker.state is BreakerState.CLOSED and breaker.failures == 1


def test_GR02_after_the_cooldown_one_trial_goes_through_and_a_success_closes(clock: FakeClock) -> None:
    breaker = CircuitBreaker("m", failures=1, cooldown_s=60, clock=clock)
    breaker.record_failure()
    clock.advance(59.5)
    assert breaker.state is BreakerState.OPEN and not breaker.allow()

    clock.advance(0.5)

    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.allow()  # the one trial
    assert not breaker.allow()  # a second caller while the trial runs is refused
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED and breaker.allow() and breaker.failures == 0


def test_GR02_a_failed_trial_opens_the_breaker_for_another_cooldown(clock: FakeClock) -> None:
    breaker = CircuitBreaker("m", failures=3, cooldown_s=60, clock=clock)
    for _ in range(3):
        breaker.record_failure()
    clock.advance(60)
    assert breaker.allow()

    breaker.record_failure()

    assert breaker.state is BreakerState.OPEN
    clock.advance(59)
    assert not breaker.allow()
    clock.advance(1)
    assert breaker.state is BreakerState.HALF_OPEN


def test_GR02_an_abandoned_trial_frees_the_slot(clock: FakeClock) -> None:
    breaker = CircuitBreaker("m", failures=1, cooldown_s=10, clock=clock)
    breaker.record_failure()
    clock.advance(10)
    assert breaker.allow()

    breaker.abandon()  # e.g. the user pressed Stop during the trial

    assert breaker.state is BreakerState.HALF_OPEN and breaker.allow()


def test_GR02_one_breaker_per_model_name_in_the_process(clock: FakeClock) -> None:
    first = breaker_for("openai/a", failures=1, cooldown_s=5, clock=clock)
    first.record_failure()

    again = breaker_for("openai/a", failures=2, cooldown_s=9)

    assert again is first and again.state is BreakerState.OPEN  # new thresholds, same state
    assert (again.threshold, again.cooldown_s) == (2, 9)
    assert breaker_for("openai/b") is not first
    reset_breakers()
    assert breaker_for("openai/a") is not first


@pytest.mark.parametrize(("failures", "cooldown_s"), [(0, 60), (3, 0), (3, float("inf")), (3, float("nan"))])
def test_GR02_breaker_settings_must_be_in_range(failures: int, cooldown_s: float) -> None:
    with pytest.raises(ValueError, match="breaker"):
        CircuitBreaker("m", failures=failures, cooldown_s=cooldown_s)


# -- the chain ----------------------------------------------------------------------------------


async def test_GR01_a_failing_model_falls_back_and_the_switch_comes_first(clock: FakeClock) -> None:
    primary = ScriptedModel([failure()], name="primary")
    fallback = ScriptedModel([answer()], name="fallback")

    items = await collect(chain(primary, fallback, clock=clock))

    assert items[0] == ModelSwitch(failed="primary", reason="HTTP 500: upstream exploded", next="fallback")
    assert "".join(item.text for item in items if isinstance(item, TextDelta)) == "from the fallback"
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.model == "fallback"  # priced as the fallback
    assert [request.messages for request in fallback.requests] == [request().messages]  # the same request
    primary.assert_complete()
    fallback.assert_complete()


@pytest.mark.parametrize("kind", ["rate_limit", "unavailable", "timeout", "auth", "bad_request"])
async def test_GR01_these_failures_fall_through_to_the_next_model(kind: str) -> None:
    primary = ScriptedModel([failure(kind, f"{kind} happened")], name="primary")

    items = await collect(chain(primary, ScriptedModel([answer()], name="fallback")))

    assert items[0] == ModelSwitch(failed="primary", reason=f"{kind} happened", next="fallback")
    assert isinstance(items[-1], ModelResponse) and items[-1].model == "fallback"


async def test_GR01_a_context_window_error_is_left_to_compaction_not_the_fallback() -> None:
    fallback = ScriptedModel([answer()], name="fallback")

    with pytest.raises(ContextWindowError):
        await collect(chain(ScriptedModel([failure("context_window", "too long")], name="primary"), fallback))

    assert fallback.requests == []


async def test_GR01_streamed_text_is_never_replaced_by_another_model() -> None:
    fallback = ScriptedModel([answer()], name="fallback")
    shown: list[StreamItem] = []

    with pytest.raises(ModelUnavailableError, match="after part of the answer was shown"):
        async for item in chain(BreaksMidAnswer("primary"), fallback).stream(request()):
            shown.append(item)

    assert shown == [TextDelta(text="The answer is")]
    assert fallback.requests == []


async def test_GR01_the_chain_goes_on_until_a_model_answers() -> None:
    models = [
        ScriptedModel([failure("timeout", "slow")], name="a"),
        ScriptedModel([failure("rate_limit", "HTTP 429: busy")], name="b"),
        ScriptedModel([answer("from c")], name="c"),
    ]

    items = await collect(chain(*models))

    switches = [item for item in items if isinstance(item, ModelSwitch)]
    assert switches == [
        ModelSwitch(failed="a", reason="slow", next="b"),
        ModelSwitch(failed="b", reason="HTTP 429: busy", next="c"),
    ]
    assert isinstance(items[-1], ModelResponse) and items[-1].model == "c"


async def test_GR01_when_no_model_answers_the_error_lists_every_cause() -> None:
    models = [
        ScriptedModel([failure("unavailable", "HTTP 502: bad gateway")], name="a"),
        ScriptedModel([failure("auth", "HTTP 401: bad key")], name="b"),
    ]

    with pytest.raises(FallbackExhaustedError) as raised:
        await collect(chain(*models))

    assert str(raised.value) == (
        "model 'a' failed: no model of the fallback chain answered (a: HTTP 502: bad gateway; b: HTTP 401: bad key)"
    )
    assert [type(error).__name__ for error in raised.value.errors] == ["ModelUnavailableError", "ModelAuthError"]


async def test_GR01_a_bug_in_a_model_is_raised_not_hidden_by_the_fallback() -> None:
    fallback = ScriptedModel([answer()], name="fallback")

    with pytest.raises(Exception, match="asked for step 1 but the script has 0"):
        await collect(chain(ScriptedModel([], name="primary"), fallback))  # ScriptExhaustedError

    assert fallback.requests == []


def test_GR01_window_price_and_vision_are_the_primarys() -> None:
    primary = ScriptedModel([], name="primary", context_window=8000, price=Price(input=1, output=2), vision=False)
    model = chain(primary, ScriptedModel([], name="fallback", context_window=4000, vision=True))

    assert model.name == "primary"
    assert model.context_window() == 8000 and model.price("anything") == Price(input=1, output=2)
    assert model.supports_vision() is False
    assert isinstance(model, Model)


# -- the breaker in the chain -------------------------------------------------------------


async def test_GR02_an_open_breaker_skips_the_model_without_calling_it(clock: FakeClock) -> None:
    primary = ScriptedModel([failure()] * 3, name="primary")
    fallback = ScriptedModel([answer()] * 4, name="fallback")
    model = chain(primary, fallback, clock=clock, failures=3, cooldown_s=60)
    for _ in range(3):
        await collect(model)

    items = await collect(model)

    assert len(primary.requests) == 3  # not called the fourth time
    assert items[0] == ModelSwitch(
        failed="primary",
        next="fallback",
        reason="circuit open after 3 consecutive failure(s); next try in 60 s (breaker.cooldown_s)",
    )
    assert isinstance(items[-1], ModelResponse) and items[-1].model == "fallback"


async def test_GR02_after_the_cooldown_the_primary_gets_a_trial_and_its_success_closes_the_breaker(
    clock: FakeClock,
) -> None:
    primary = ScriptedModel([failure(), answer("primary is back"), answer("still back")], name="primary")
    fallback = ScriptedModel([answer(), answer()], name="fallback")
    model = chain(primary, fallback, clock=clock, failures=1, cooldown_s=30)
    await collect(model)  # fails over; the breaker opens
    await collect(model)  # skipped
    assert len(primary.requests) == 1

    clock.advance(30)
    trial = await collect(model)
    after = await collect(model)

    assert [item.model for item in (trial[-1], after[-1]) if isinstance(item, ModelResponse)] == ["primary"] * 2
    assert breaker_for("primary").state is BreakerState.CLOSED
    primary.assert_complete()
    fallback.assert_complete()


async def test_GR02_bad_requests_do_not_count_toward_opening_the_breaker(clock: FakeClock) -> None:
    primary = ScriptedModel([failure("bad_request", "HTTP 400: no")] * 2, name="primary")
    model = chain(primary, ScriptedModel([answer()] * 2, name="fallback"), clock=clock, failures=1)

    await collect(model)
    await collect(model)

    assert len(primary.requests) == 2 and breaker_for("primary").state is BreakerState.CLOSED


async def test_GR02_a_stopped_trial_gives_no_verdict(clock: FakeClock) -> None:
    started = asyncio.Event()

    def hang(request: ModelRequest) -> dict[str, Any]:
        started.set()
        return answer("slow primary")

    primary = ScriptedModel([failure(), hang], name="primary", delay_s=30)
    model = chain(primary, ScriptedModel([answer()], name="fallback"), clock=clock, failures=1, cooldown_s=5)
    await collect(model)
    clock.advance(5)

    task = asyncio.ensure_future(collect(model))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    breaker = breaker_for("primary")
    assert breaker.state is BreakerState.HALF_OPEN and breaker.allow()  # the slot is free again


# -- the engine: the switch event and pricing ----------------------------------


async def test_GR01_the_engine_emits_the_switch_and_prices_usage_by_the_model_that_answered(tmp_path: Path) -> None:
    primary = ScriptedModel([failure(message="HTTP 503: overloaded")], name="primary")
    fallback = ScriptedModel([answer("fallback text")], name="fallback")
    workspace = Workspace.open(
        tmp_path,
        model=chain(primary, fallback),
        environ={},
        home=tmp_path / "home",
        overrides={"prices": {"fallback": {"input": 1000.0, "output": 2000.0}}},
    )

    result = await workspace.run("hello")

    assert result.text == "fallback text" and result.stop_reason == "end_turn"
    switch = [event for event in result.events if isinstance(event, ModelSwitchEvent)]
    assert switch == [ModelSwitchEvent(failed="primary", reason="HTTP 503: overloaded", answered_by="fallback")]
    kinds = [type(event).__name__ for event in result.events]
    assert kinds.index("ModelSwitchEvent") < kinds.index("TextEvent")  # before the fallback's output
    (usage,) = [event for event in result.events if isinstance(event, UsageEvent)]
    assert usage.model == "fallback" and usage.cost_usd == pytest.approx((10 * 1000 + 4 * 2000) / 1e6)
    assert any(isinstance(event, TextEvent) and event.text == "fallback text" for event in result.events)
    assert ModelSwitchEvent.model_validate_json(switch[0].model_dump_json()).type == "model_switch"


# -- building the chain from configuration ------------------------------------------------------


def test_GR01_the_factory_builds_a_chain_only_when_fallbacks_are_configured(tmp_path: Path) -> None:
    plain = build_model("openai/a", workspace=tmp_path)
    chained = build_model(
        "openai/a",
        workspace=tmp_path,
        fallback_models=["openai/b", "openai/a", "openai/b", "openai/c"],
        api_base="http://127.0.0.1:9/v1",
        retries=1,
        stall_first_byte_s=7,
        stall_between_chunks_s=3,
        breaker_failures=2,
        breaker_cooldown_s=9,
    )

    assert isinstance(plain, LiteLLMModel)
    assert isinstance(chained, FallbackModel)
    assert [model.name for model in chained.models] == ["openai/a", "openai/b", "openai/c"]  # no repeats
    for model in chained.models:  # each built like the primary
        assert isinstance(model, LiteLLMModel)
        assert (model.api_base, model.retries, model.stall_first_byte_s, model.stall_between_chunks_s) == (
            "http://127.0.0.1:9/v1",
            1,
            7,
            3,
        )
    assert (breaker_for("openai/b").threshold, breaker_for("openai/b").cooldown_s) == (2, 9)


async def test_GR01_a_fallback_that_cannot_be_built_stays_in_the_chain_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "down.json").write_text(json.dumps([failure(message="HTTP 500: down")]))
    (tmp_path / "up.json").write_text(json.dumps([answer("from up")]))
    model = build_model(
        "scripted:down.json", workspace=tmp_path, fallback_models=["scripted:missing.json", "scripted:up.json"]
    )

    items = await collect(model)

    assert isinstance(model, FallbackModel) and isinstance(model.models[1], PlaceholderModel)
    switches = [item for item in items if isinstance(item, ModelSwitch)]
    assert [(switch.failed, switch.next) for switch in switches] == [
        ("scripted:down.json", "scripted:missing.json"),
        ("scripted:missing.json", "scripted:up.json"),
    ]
    assert switches[1].reason.startswith("cannot load the scripted model 'scripted:missing.json'")
    assert isinstance(items[-1], ModelResponse) and items[-1].text == "from up"


def test_GR01_GR02_GR03_the_workspace_passes_its_settings_to_the_models(tmp_path: Path) -> None:
    workspace = Workspace.open(
        tmp_path,
        model="openai/a",
        environ={},
        home=tmp_path / "home",
        overrides={
            "fallback_models": ["openai/b"],
            "stall.first_byte_s": 5,
            "stall.between_chunks_s": 2.5,
            "breaker.failures": 4,
            "breaker.cooldown_s": 30,
        },
    )

    model = workspace.model
    assert isinstance(model, FallbackModel) and [m.name for m in model.models] == ["openai/a", "openai/b"]
    assert all(
        isinstance(m, LiteLLMModel) and (m.stall_first_byte_s, m.stall_between_chunks_s) == (5, 2.5)
        for m in model.models
    )
    assert (breaker_for("openai/a").threshold, breaker_for("openai/a").cooldown_s) == (4, 30)

    workspace.configure(fallback_models=[])  # a changed chain rebuilds the model
    assert isinstance(workspace.model, LiteLLMModel)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("stall.first_byte_s", 0),
        ("stall.first_byte_s", float("inf")),
        ("stall.between_chunks_s", float("nan")),
        ("stall.between_chunks_s", -1),
        ("breaker.failures", 0),
        ("breaker.cooldown_s", float("inf")),
    ],
)
def test_GR07_stall_and_breaker_settings_are_finite_and_in_range(tmp_path: Path, key: str, value: float) -> None:
    with pytest.raises(ConfigError) as raised:
        Workspace.open(tmp_path, model="openai/a", environ={}, home=tmp_path / "home", overrides={key: value})

    assert raised.value.key == key


def test_GR03_default_stall_budgets_and_breaker_settings(tmp_path: Path) -> None:
    workspace = Workspace.open(tmp_path, model="openai/a", environ={}, home=tmp_path / "home")

    config = workspace.config
    assert (config.stall.first_byte_s, config.stall.between_chunks_s) == (120, 60)
    assert (config.breaker.failures, config.breaker.cooldown_s) == (3, 60)
    assert isinstance(workspace.model, LiteLLMModel) and workspace.model.stall_first_byte_s == 120
