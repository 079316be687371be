"""Why a turn ends before or without an answer, in the words the user reads: a prompt_submit hook
that blocked the prompt (nothing is recorded), or a timeout (the turn's own, or one inside it)."""

from __future__ import annotations

import asyncio

from ...core.terms import StopReason
from .setup import TurnLimits, TurnSetup


async def prompt_refusal(setup: TurnSetup, prompt: str, turn_index: int) -> str | None:
    """The prompt_submit hooks' verdict on a user's prompt (never a sub-agent's); None: go on."""
    hooks = setup.runtime.hooks
    if not hooks or setup.depth > 0:
        return None
    reason = await hooks.prompt_submit({"session": setup.session.name, "turn": turn_index, "prompt": prompt})
    return None if reason is None else f"blocked by prompt_submit hook: {reason}"


def timeout_reason(limits: TurnLimits, deadline: asyncio.Timeout, error: TimeoutError) -> tuple[StopReason, str]:
    """The turn's own deadline passed (`timeout`), or something inside it timed out (`error`)."""
    if deadline.expired():
        return "timeout", f"turn timed out after {limits.timeout_s:g} s"
    return "error", f"timed out: {error}"
