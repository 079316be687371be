"""What a turn's span records: its choices when it starts and its outcome when it ends. The
span is the root of its own trace, linked to the session's previous turn (docs/telemetry in
docs/interface.md lists the attributes)."""

from __future__ import annotations

from typing import Any

from ...core.attachments import Attachment
from ..tracing import Telemetry
from .modes import TurnMode
from .setup import TurnResult, TurnSetup


def turn_attributes(
    setup: TurnSetup, telemetry: Telemetry, prompt: str | None, attachments: list[Attachment] | None
) -> dict[str, Any]:
    """The attributes a turn's span starts with; the prompt only where content is recorded."""
    return {
        "blitz.agent": setup.choice.agent,
        "blitz.model": setup.choice.model.name,
        "blitz.session": setup.session.name,
        "blitz.turn_index": setup.session.turns,
        "blitz.prompt_length": len(prompt or ""),
        "blitz.attachments": len(attachments or []),
        "blitz.max_turns": setup.limits.max_turns,
        "blitz.max_cost_usd": setup.limits.max_cost_usd,
        "blitz.timeout_s": setup.limits.timeout_s,
        "blitz.plan": setup.mode is TurnMode.PLAN,
        "blitz.mode": setup.mode.value,
        "blitz.prompt": telemetry.content(prompt or ""),
    }


def outcome_attributes(result: TurnResult, model_calls: int) -> dict[str, Any]:
    """The attributes a turn's span ends with."""
    return {
        "blitz.model_calls": model_calls,
        "blitz.input_tokens": result.usage.input_tokens,
        "blitz.output_tokens": result.usage.output_tokens,
        "blitz.cost_usd": result.usage.cost_usd,
        "blitz.priced": result.usage.priced,
        "blitz.stop_reason": result.stop_reason,
    }
