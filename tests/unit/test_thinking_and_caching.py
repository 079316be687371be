"""Thinking parts and prompt caching, below the wire: how streamed thinking blocks are joined,
when they are sent back, where cache breakpoints go, what caching saved, and the `reasoning`
settings. The wire tier (tests/wire/test_anthropic_wire.py) runs them against the fake API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blitz_kernel.core.history import (
    AssistantMessage,
    Message,
    RedactedThinkingPart,
    ThinkingPart,
    ToolCall,
    ToolResultMessage,
    user_prompt,
)
from blitz_kernel.core.usage import Price, TokenUsage, UsageLedger
from blitz_kernel.engine.turn.agents import AgentDefinition
from blitz_kernel.errors import ConfigError
from blitz_kernel.models import cache_marks
from blitz_kernel.models.openai_wire import ThinkingAssembler, to_openai_messages
from tests.helpers.workspaces import open_workspace

CLAUDE = "anthropic/claude-sonnet-4-5"


def test_streamed_thinking_pieces_and_their_signature_become_one_signed_part() -> None:
    assembler = ThinkingAssembler()
    assembler.add([{"type": "thinking", "thinking": "Let me ", "index": 1}])
    assembler.add([{"type": "thinking", "thinking": "see.", "index": 1}])
    assembler.add([{"type": "thinking", "thinking": "", "signature": "sig-1", "index": 1}])
    assembler.add([{"type": "redacted_thinking", "data": "OPAQUE", "index": 2}])
    assert assembler.blocks() == [
        ThinkingPart(text="Let me see.", signature="sig-1"),
        RedactedThinkingPart(data="OPAQUE"),
    ]


def test_thinking_that_never_got_its_signature_is_dropped() -> None:
    """Sent back unsigned, it would be refused; the text is still shown as the thought."""
    assembler = ThinkingAssembler()
    assembler.add([{"type": "thinking", "thinking": "cut off", "index": 1}])
    assert assembler.blocks() == []


def _step(model: str) -> AssistantMessage:
    return AssistantMessage(
        text="Looking.",
        thought="hmm",
        thinking=[ThinkingPart(text="hmm", signature="sig-hmm")],
        tool_calls=[ToolCall(id="toolu_1", name="list_files", arguments="{}")],
        model=model,
    )


def test_thinking_blocks_go_back_only_to_the_model_that_wrote_them() -> None:
    history: list[Message] = [
        user_prompt("go"),
        _step(CLAUDE),
        ToolResultMessage(call_id="toolu_1", name="list_files", output="a"),
    ]
    same = to_openai_messages("sys", history, thinking_model=CLAUDE)
    assert same[2]["thinking_blocks"] == [{"type": "thinking", "thinking": "hmm", "signature": "sig-hmm"}]
    for other in (
        to_openai_messages("sys", history, thinking_model="openai/gpt-4.1"),
        to_openai_messages("sys", history),
    ):
        assert "thinking_blocks" not in other[2]  # a fallback model or the direct OpenAI path


def test_thinking_parts_survive_the_store_round_trip() -> None:
    from blitz_kernel.core.history import HISTORY_ADAPTER

    history: list[Message] = [user_prompt("go"), _step(CLAUDE)]
    loaded = HISTORY_ADAPTER.validate_json(HISTORY_ADAPTER.dump_json(history))
    assert loaded == history
    assert AssistantMessage.model_validate({"kind": "assistant", "text": "old"}).thinking == []  # older stores


def test_breakpoints_sit_on_the_system_prompt_the_previous_step_and_the_end() -> None:
    history: list[Message] = [
        user_prompt("go"),
        _step(CLAUDE),
        ToolResultMessage(call_id="toolu_1", name="list_files", output="a"),
        AssistantMessage(tool_calls=[ToolCall(id="toolu_2", name="list_files", arguments="{}")], model=CLAUDE),
        ToolResultMessage(call_id="toolu_2", name="list_files", output="b"),
    ]
    messages = to_openai_messages("sys", history)
    before = json.dumps(messages)
    marked = cache_marks.mark_breakpoints(messages)
    assert json.dumps(messages) == before  # the caller's dicts are never changed
    assert [i for i, m in enumerate(marked) if "cache_control" in json.dumps(m)] == [0, 3, 5]
    assert marked[0]["content"] == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert marked[5]["cache_control"] == {"type": "ephemeral"}  # a tool result: marked whole
    assert cache_marks.count_marks(marked) == 3 <= cache_marks.MAX_BREAKPOINTS


def test_a_first_step_marks_the_system_prompt_and_the_prompt_only() -> None:
    marked = cache_marks.mark_breakpoints(to_openai_messages("sys", [user_prompt("hi")]))
    assert cache_marks.count_marks(marked) == 2
    assert marked[1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


def test_cache_saving_prices_reads_and_writes_at_their_own_rates() -> None:
    price = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    read = TokenUsage(input_tokens=1_000_000, cached_tokens=900_000, cache_write_tokens=100_000)
    assert price.cache_saving(read) == pytest.approx((900_000 * 2.7 - 100_000 * 0.75) / 1e6)
    written = TokenUsage(input_tokens=1_000_000, cache_write_tokens=1_000_000)
    assert price.cache_saving(written) == pytest.approx(-0.75)  # the first step pays for the write
    ledger = UsageLedger()
    ledger.record(CLAUDE, read, price.cost(read), price.cache_saving(read))
    assert ledger.total.describe().endswith("cache saved $2.3550")
    assert "cache saved" not in UsageLedger().total.describe()


def test_reasoning_in_config_is_checked_and_per_model_beats_global(tmp_path: Path) -> None:
    (tmp_path / "given").mkdir()
    workspace = open_workspace(tmp_path / "given", "scripted:none.json", overrides={"reasoning": "low"})
    assert workspace.config.model_settings(CLAUDE).reasoning == "low"
    for name, text in (
        ("per-model", 'reasoning = "low"\n[models."anthropic/"]\nreasoning = "high"\n'),
        ("bad", 'reasoning = "hard"\n'),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "blitz.toml").write_text(text)
    per_model = open_workspace(tmp_path / "per-model", "scripted:none.json").config
    assert (
        per_model.model_settings(CLAUDE).reasoning == "high"
        and per_model.model_settings("openai/o3").reasoning == "low"
    )
    with pytest.raises(ConfigError, match=r"reasoning.*blitz\.toml|blitz\.toml.*reasoning"):
        open_workspace(tmp_path / "bad", "scripted:none.json")


def test_an_agent_file_may_choose_its_reasoning() -> None:
    agent = AgentDefinition.model_validate({"name": "deep", "instructions": "think", "reasoning": "high"})
    assert agent.reasoning == "high"
    with pytest.raises(ValueError, match="reasoning"):
        AgentDefinition.model_validate({"name": "deep", "instructions": "think", "reasoning": "max"})


def test_the_widget_footer_says_what_the_cache_saved() -> None:
    from blitz_kernel.engine.events import UsageEvent
    from blitz_kernel.notebook.widgets.state import TurnState

    state = TurnState(turn_id="", prompt="p", session="s")
    usage = TokenUsage(input_tokens=1000, cached_tokens=900, output_tokens=10)
    state.apply(UsageEvent(model=CLAUDE, usage=usage, cost_usd=0.001, saved_usd=0.0024))
    assert state.footer()["saving"] == "cache saved $0.0024"
