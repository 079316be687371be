"""Sub-agents: `invoke_agent(agent, prompt)` runs another agent in a fresh, isolated
session and hands its final answer back as the tool's result.

What the caller's turn imposes travels with the call, so a sub-agent is never a way around it:
- the mode the caller is in now (a plan-mode turn's sub-agent is read-only too);
- the allowed tools, the `--approve` override, the policies and the approver (its
  permission requests reach the same widget, saying which agent asks);
- the steps: every model call it makes counts toward its own `max_turns` and each caller's
  (one counter up the tree: a sub-agent may have a lower limit, never a higher one);
- the spend: its usage is the caller's usage (the turn's `--max-cost`, the session's budget
  and `%blitz_usage` all see it), and the pre-call estimate checks every caller's ceiling;
- the model: an agent without a pin runs on the caller's `-m`;
- the audit: its tool calls are recorded in the calling session's trail (and store), with
  the sub-agent's name;
- Stop and interrupt: its control follows the caller's, and it is awaited inside the call;
- the wall clock: it runs inside the caller's timeout.

Its events reach the caller's front end wrapped in `SubagentEvent` (with the id of the call
that started it), so a widget can nest them under that call's card. Its whole turn is kept in
the caller's session too, nested in the result of that call (`ToolResultMessage.subagent`,
`SubagentRecords`), so a reloaded session still holds what the sub-agent saw and did, while
the caller's model reads only the result. Steer messages stay with the caller's turn (not the
sub-agent's).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Sequence

from ...core.history import AssistantMessage, Message, SubagentTurn, ToolResultMessage
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
            inherited_model=caller.choice.override,
        )
        front_end = FrontEnd(
            approver=runtime.gate.approver, on_event=on_event, kernel=runtime.context.kernel, caller=runtime.caller
        )
        return await self._build_setup(session, options, front_end, depth)


def subagent_answer(agent: str, result: TurnResult, history: Sequence[Message]) -> str:
    """The sub-agent's final non-thought text; when a limit or Stop ended it, SubagentStopped
    with the reason and what it had written so far (its `history`), so the work is not lost."""
    summary = calls_summary(agent, history)
    if result.stop_reason != "end_turn":
        reason = result.error or result.stop_reason
        partial = partial_answer(history)
        told = f"\nits partial answer so far:\n{partial}" if partial else "\nit wrote no answer before it stopped"
        raise SubagentStopped(f"sub-agent {agent!r} stopped ({result.stop_reason}): {reason}{told}{summary}")
    return (result.text or f"(sub-agent {agent!r} gave no answer)") + summary


def calls_summary(agent: str, history: Sequence[Message]) -> str:
    """'[reviewer made 3 tool calls: read_file ×2, grep]' (nothing when it made none): the
    sub-agent's work, kept in the caller's history with its answer."""
    names = [call.name for m in history if isinstance(m, AssistantMessage) for call in m.tool_calls]
    if not names:
        return ""
    counted = ", ".join(
        f"{name} ×{names.count(name)}" if names.count(name) > 1 else name for name in dict.fromkeys(names)
    )
    return f"\n\n[{agent} made {len(names)} tool call{'s' if len(names) > 1 else ''}: {counted}]"


def partial_answer(history: Sequence[Message]) -> str:
    """The text the sub-agent's responses carried so far (thoughts aside), in order."""
    texts = [m.text.strip() for m in history if isinstance(m, AssistantMessage) and m.text and m.text.strip()]
    return "\n\n".join(texts)


class SubagentStopped(Exception):
    """A sub-agent's turn ended other than normally; the caller's model reads why."""


class SubagentRecords:
    """The sub-agents' turns of one caller's turn, by the id of the call that ran each, until
    that call's result is committed: then each goes into its result, nested."""

    def __init__(self) -> None:
        self._turns: dict[str, SubagentTurn] = {}

    def keep(self, call_id: str, agent: str, session: Session, stop_reason: str) -> None:
        self._turns[call_id] = SubagentTurn(
            agent=agent, session=session.name, stop_reason=stop_reason, messages=list(session.history)
        )

    def attach(self, messages: Sequence[Message]) -> list[Message]:
        """`messages` with each sub-agent's turn nested in the result of its call."""
        if not self._turns:
            return list(messages)
        return [
            m.model_copy(update={"subagent": self._turns.pop(m.call_id)})
            if isinstance(m, ToolResultMessage) and m.call_id in self._turns
            else m
            for m in messages
        ]
