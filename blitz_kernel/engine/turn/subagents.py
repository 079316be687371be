"""Sub-agents (ENG-70): `invoke_agent(agent, prompt)` runs another agent in a fresh, isolated
session and hands its final answer back as the tool's result.

What the caller's turn imposes travels with the call, so a sub-agent is never a way around it:
- the mode the caller is in now (a plan-mode turn's sub-agent is read-only too, ENG-30);
- the allowed tools (ENG-17), the `--approve` override, the policies and the approver (its
  permission requests reach the same widget, saying which agent asks);
- the spend: its usage is the caller's usage (the turn's `--max-cost`, the session's budget
  and `%blitz_usage` all see it);
- Stop and interrupt: its control follows the caller's, and it is awaited inside the call;
- the wall clock: it runs inside the caller's timeout.

Its events reach the caller's front end wrapped in `SubagentEvent` (with the id of the call
that started it), so a widget can nest them under that call's card. Steer messages stay with
the caller's turn (ENG-40: "not a sub-agent's").
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable

from ...errors import SubagentDepthError, UnknownAgentError
from ..store.session import Session
from .modes import TurnMode
from .options import EventHandler, FrontEnd, RunOptions
from .setup import TurnResult, TurnSetup

MAX_DEPTH = 3
"""How deep sub-agents may nest: the root is depth 0, its sub-agents 1, and so on."""

SetupBuilder = Callable[[Session, RunOptions, FrontEnd, int], Awaitable[TurnSetup]]


class Subagents:
    """Sets up sub-agents' turns for the turns of one workspace (the loop runs them); numbers
    their sessions per kernel."""

    def __init__(self, build_setup: SetupBuilder, agents: Callable[[], list[tuple[str, str]]]) -> None:
        self._build_setup = build_setup
        self._agents = agents
        self._sequence = itertools.count(1)

    def available(self, caller: str) -> list[tuple[str, str]]:
        """(name, description) of every agent but the caller."""
        return [(name, description) for name, description in self._agents() if name != caller]

    async def setup_for(self, caller: TurnSetup, mode: TurnMode, agent: str, on_event: EventHandler) -> TurnSetup:
        """The setup of `agent`'s turn for a call of `caller`'s, which runs in `mode` now."""
        depth = caller.depth + 1
        if depth > MAX_DEPTH:
            raise SubagentDepthError(MAX_DEPTH)
        if agent not in dict(self._agents()):
            raise UnknownAgentError(agent, [name for name, _ in self.available(caller.choice.agent)])
        session = Session(name=f"subagent-{agent}-{next(self._sequence)}")
        session.always_allowed = caller.session.always_allowed  # "Always" answers hold in both
        runtime = caller.runtime
        options = RunOptions(
            agent=agent,
            mode=mode if mode.read_only else TurnMode.NORMAL,
            tools=runtime.allowed_tools,
            approve=runtime.approve_override,
        )
        front_end = FrontEnd(
            approver=runtime.gate.approver, on_event=on_event, kernel=runtime.context.kernel, caller=runtime.caller
        )
        return await self._build_setup(session, options, front_end, depth)


def subagent_answer(agent: str, result: TurnResult) -> str:
    """The sub-agent's final non-thought text, or SubagentStopped saying why there is none."""
    if result.stop_reason != "end_turn":
        reason = result.error or result.stop_reason
        raise SubagentStopped(f"sub-agent {agent!r} stopped ({result.stop_reason}): {reason}")
    return result.text or f"(sub-agent {agent!r} gave no answer)"


class SubagentStopped(Exception):
    """A sub-agent's turn ended other than normally; the caller's model reads why."""
