"""`%%blitz --think` in a real kernel, against the fake Anthropic server through litellm's
Anthropic path: the request carries the thinking budget of the chosen effort, the thinking is
one line in the plain output (never its text), and `--think` on a model without a thinking
setting fails the cell with one line before any request (docs/providers.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.fake_anthropic import FakeAnthropicServer

from .driver import KernelDriver, kernel_environment

CLAUDE = "anthropic/claude-sonnet-4-5"


@pytest.fixture(scope="module")
def anthropic() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def claude_kernel(anthropic: FakeAnthropicServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelDriver]:
    env = kernel_environment(
        tmp_path_factory.mktemp("home"),
        BLITZ_MODEL=CLAUDE,
        BLITZ_API_BASE=anthropic.base_url,
        ANTHROPIC_API_KEY="sk-ant-kernel-not-a-real-key",
    )
    driver = KernelDriver(tmp_path_factory.mktemp("workspace"), env)
    loaded = driver.run("%load_ext blitz_kernel\n%blitz_config model_retries=0")
    assert loaded.status == "ok", loaded.reply
    yield driver
    driver.shutdown()


def test_think_high_sends_claude_its_thinking_budget_and_shows_one_line(
    claude_kernel: KernelDriver, anthropic: FakeAnthropicServer
):
    anthropic.enqueue({"thinking": "The user greets me; a short greeting back.", "text": "Hello there."})
    cell = claude_kernel.run("%%blitz --think high\nSay hello.", timeout=120)
    assert cell.status == "ok", cell.reply
    [request] = anthropic.requests
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 4096}  # litellm's "high"
    assert request.body["max_tokens"] > 4096  # Claude refuses a cap at or below the budget
    assert list(cell.displays.values()) == ["Hello there."]
    assert "💭 thought (8 words; the widget shows it)" in cell.stdout
    assert "a short greeting back" not in cell.stdout  # the thinking itself is never in the plain output

    anthropic.enqueue({"text": "Plain."})
    plain = claude_kernel.run("%%blitz\nAgain, without thinking.", timeout=120)
    assert plain.status == "ok" and "thinking" not in anthropic.requests[-1].body


def test_think_on_a_model_without_a_thinking_setting_is_one_line_and_sends_nothing(
    claude_kernel: KernelDriver, anthropic: FakeAnthropicServer
):
    before = len(anthropic.requests)
    cell = claude_kernel.run("%%blitz --think high -m anthropic/claude-3-haiku-20240307\nHello.", timeout=120)
    assert cell.status == "error"
    assert len(cell.reply["traceback"]) == 1
    assert "no thinking setting that --think or reasoning could choose; use --think off" in cell.evalue
    assert "\n" not in cell.evalue and "Traceback" not in json.dumps(cell.outputs)
    assert len(anthropic.requests) == before  # refused before any request
