"""Gemini's explicit context cache on a `gemini/...` model, through litellm's real path, against
the fake Gemini API (tests/fake_gemini.py, its cachedContents in tests/fake_gemini_cache.py),
which refuses a cache the way Google does: the system prompt and the tool declarations go in a
cachedContents resource made once and read by every later step and turn while they stay the
same (docs/providers.md#prompt-caching)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import ConfigError
from blitz_kernel.models.litellm_model import LiteLLMModel
from tests.fake_gemini import FakeGeminiServer
from tests.helpers.workspaces import open_workspace

MODEL = "gemini/gemini-2.5-flash"
KEY = "AIza-cache-wire-not-a-real-key"
CACHES = "/v1beta/cachedContents"


class Clock:
    """The fake's time: a test moves it to expire a cache instead of waiting."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fake(clock: Clock) -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(api_key=KEY, models={"gemini-2.5-flash"}, clock=clock) as server:
        yield server


@pytest.fixture(autouse=True)
def gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)


def workspace_for(root: Path, server: FakeGeminiServer, **dotted: Any) -> Workspace:
    return open_workspace(root, MODEL, overrides={"api_base": server.base_url, "model_retries": 0, **dotted})


def reads(count: int, answer: str = "Done.") -> list[dict[str, Any]]:
    """A turn of `count` steps that read a.txt, then one that answers."""
    steps: list[dict[str, Any]] = [
        {"text": f"Reading, step {i}.", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}
        for i in range(count)
    ]
    return [*steps, {"text": answer}]


def agent_file(root: Path, name: str, tools: str, instructions: str) -> None:
    folder = root / ".blitz" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {name}\ntools: {tools}\n---\n{instructions}\n")


def assert_uncached(body: dict[str, Any]) -> None:
    """A generation request that carries its own system prompt and tools, and no cache."""
    assert "cachedContent" not in body
    assert body["system_instruction"]["parts"][0]["text"]
    assert body["tools"][0]["function_declarations"]


async def test_a_multi_step_turn_makes_the_cache_once_and_every_step_and_turn_reads_it(
    fake: FakeGeminiServer, tmp_path: Path
):
    (tmp_path / "a.txt").write_text("alpha\n")
    fake.enqueue(*reads(2), {"text": "Still alpha."})
    workspace = workspace_for(tmp_path, fake)
    result = await workspace.run("read a.txt twice", session="s")
    assert result.stop_reason == "end_turn", result.error
    again = await workspace.run("and now?", session="s")
    assert again.text == "Still alpha." and fake.refusals == []
    # one look for an existing cache, one creation, for 4 requests over 2 turns
    assert fake.cache_requests() == [("GET", CACHES), ("POST", CACHES)]
    (cache,) = fake.cache.created
    create = next(r.body for r in fake.requests if r.method == "POST" and r.path == CACHES)
    assert create["model"] == "models/gemini-2.5-flash" and create["ttl"] == "300s"
    assert "read_file" in str(create["tools"]) and create["system_instruction"]["parts"][0]["text"]
    bodies = fake.generation_bodies()
    assert len(bodies) == 4
    for body in bodies:  # the instructions and tools are the cache's, never sent again
        assert body["cachedContent"] == cache.name
        assert "system_instruction" not in body and "tools" not in body
    assert bodies[0]["contents"][0]["parts"][0]["text"] == "read a.txt twice"
    # read from the cache at every step, and priced at the cached rate
    assert result.usage.cached_tokens == 3 * cache.tokens
    assert again.usage.cached_tokens == cache.tokens and again.usage.cache_write_tokens == 0
    price = LiteLLMModel(MODEL).price(MODEL)
    assert price is not None and price.cached_input is not None and price.cached_input < price.input
    plain = again.usage.input_tokens - cache.tokens
    expected = (
        plain * price.input + cache.tokens * price.cached_input + again.usage.output_tokens * price.output
    ) / 1e6
    assert again.usage.cost_usd == pytest.approx(expected)
    assert again.usage.describe_saving().startswith("cache saved $")


async def test_the_ttl_setting_is_the_ttl_google_gets_and_a_bad_one_is_a_config_error(
    fake: FakeGeminiServer, tmp_path: Path
):
    fake.enqueue({"text": "Hello."})
    workspace = workspace_for(tmp_path, fake, **{"prompt_cache.gemini_ttl_s": 900})
    assert (await workspace.run("hi")).text == "Hello."
    (cache,) = fake.cache.created
    assert cache.expire_time - cache.create_time == pytest.approx(900)
    with pytest.raises(ConfigError, match="prompt_cache.gemini_ttl_s"):
        workspace.configure(**{"prompt_cache.gemini_ttl_s": 5})


async def test_new_instructions_make_a_new_cache(fake: FakeGeminiServer, tmp_path: Path):
    fake.enqueue({"text": "One."}, {"text": "Deux."})
    workspace = workspace_for(tmp_path, fake)
    assert (await workspace.run("one", session="s")).text == "One."
    workspace.configure(language="French")  # goes into the system prompt
    assert (await workspace.run("two", session="s")).text == "Deux."
    first, second = fake.cache.created
    assert first.display_name != second.display_name
    assert "French" in str(second.system_instruction) and "French" not in str(first.system_instruction)
    assert [body["cachedContent"] for body in fake.generation_bodies()] == [first.name, second.name]
    assert fake.refusals == []


async def test_other_tools_make_a_new_cache(fake: FakeGeminiServer, tmp_path: Path):
    instructions = "Follow the house style for every answer. " * 150  # over the minimum by itself
    agent_file(tmp_path, "narrow", "read_file", instructions)
    agent_file(tmp_path, "wide", "read_file, list_files", instructions)
    fake.enqueue({"text": "Narrow."}, {"text": "Wide."})
    workspace = workspace_for(tmp_path, fake)
    assert (await workspace.run("hi", session="s", agent="narrow")).text == "Narrow."
    assert (await workspace.run("hi", session="s", agent="wide")).text == "Wide."
    narrow, wide = fake.cache.created
    assert "list_files" in str(wide.tools) and "list_files" not in str(narrow.tools)
    assert [body["cachedContent"] for body in fake.generation_bodies()] == [narrow.name, wide.name]


async def test_caching_turned_off_sends_no_cache(fake: FakeGeminiServer, tmp_path: Path):
    (tmp_path / "a.txt").write_text("alpha\n")
    fake.enqueue(*reads(1))
    workspace = workspace_for(tmp_path, fake, **{"prompt_cache.enabled": False})
    result = await workspace.run("read a.txt")
    assert result.text == "Done." and fake.refusals == []
    assert fake.cache_requests() == []
    for body in fake.generation_bodies():
        assert_uncached(body)


async def test_a_prefix_under_the_minimum_sends_no_cache(fake: FakeGeminiServer, tmp_path: Path):
    agent_file(tmp_path, "terse", "read_file", "Answer in one word.")  # far under 1,024 tokens
    fake.enqueue({"text": "Yes."})
    result = await workspace_for(tmp_path, fake).run("hi", agent="terse")
    assert result.text == "Yes." and fake.refusals == []
    assert fake.cache_requests() == []
    assert_uncached(fake.generation_bodies()[0])


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (None, "Cached content is too small. total_token_count="),  # Google counts otherwise than litellm
        (
            {"status": 429, "message": "You exceeded your current quota, please check your plan and billing details."},
            "You exceeded your current quota",
        ),
        ({"status": 500, "message": "An internal error has occurred."}, "An internal error has occurred."),
    ],
)
async def test_a_cache_that_cannot_be_made_falls_back_to_the_uncached_request(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, fault: dict[str, Any] | None, words: str
):
    (tmp_path / "a.txt").write_text("alpha\n")
    with FakeGeminiServer(api_key=KEY, min_cache_tokens=10**7 if fault is None else 1) as fake:
        if fault is not None:
            fake.cache_faults.append(fault)
        fake.enqueue(*reads(1), {"text": "Again."})
        workspace = workspace_for(tmp_path, fake)
        with caplog.at_level(logging.WARNING, logger="blitz_kernel.models.gemini_cache"):
            result = await workspace.run("read a.txt", session="s")
        assert result.stop_reason == "end_turn" and result.text == "Done.", result.error
        assert (await workspace.run("again", session="s")).text == "Again."
        # one try at the cache; every request went uncached, in full
        assert fake.cache_requests() == [("GET", CACHES), ("POST", CACHES)]
        assert fake.cache.created == []
        bodies = fake.generation_bodies()
        assert len(bodies) == 3
        for body in bodies:
            assert_uncached(body)
        lines = [r.getMessage() for r in caplog.records if r.name == "blitz_kernel.models.gemini_cache"]
        assert len(lines) == 1 and MODEL in lines[0] and "prompts go uncached" in lines[0]
        assert words in lines[0]


async def test_an_expired_cache_is_made_again(fake: FakeGeminiServer, tmp_path: Path, clock: Clock):
    fake.enqueue({"text": "One."}, {"text": "Two."})
    workspace = workspace_for(tmp_path, fake)
    assert (await workspace.run("one", session="s")).text == "One."
    clock.now += 301  # past the 300 s TTL: Google has deleted it
    second = await workspace.run("two", session="s")
    assert second.text == "Two.", second.error
    first, fresh = fake.cache.created
    assert fake.refusals == ["CachedContent not found (or permission denied)"]
    sent = [body["cachedContent"] for body in fake.generation_bodies()]
    assert sent == [first.name, first.name, fresh.name]  # refused once, then the new one
    assert second.usage.cached_tokens == fresh.tokens


async def test_a_rate_limit_on_the_generation_is_retried_with_the_cache_not_taken_for_a_cache_failure(
    fake: FakeGeminiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    fake.enqueue({"fault": "status", "status": 429, "retry_delay": "0s"}, {"text": "Served."})
    workspace = workspace_for(tmp_path, fake, model_retries=1)
    with caplog.at_level(logging.WARNING, logger="blitz_kernel.models.gemini_cache"):
        result = await workspace.run("hello")
    assert result.text == "Served.", result.error
    (cache,) = fake.cache.created
    assert [body.get("cachedContent") for body in fake.generation_bodies()] == [cache.name, cache.name]
    assert not [r for r in caplog.records if r.name == "blitz_kernel.models.gemini_cache"]
