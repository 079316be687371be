"""Replay: run a recorded turn's tool calls again, against today's files and variables, with no
model call, and say per call whether its result is the same, changed or failed now
(docs/replay.md).

The recorded turn is the session's own transcript (its history, and what compaction archived).
Its calls run through the same `ToolBatch` as a turn's: the same screening and the same approval
gate, so a mutating call asks (or, with nobody to ask, follows the headless policy: denied by
default, and the report says so). Nothing is added to the conversation: the batch runs on a
throwaway session. Calls that would need a model or the running turn (sub-agents, plan mode,
the todo list) are not replayed and are reported as skipped.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from ...core.history import AssistantMessage, Message, SummaryMessage, ToolCall, ToolResultMessage
from ...core.text import shorten
from ...core.todos import TodoItem
from ...errors import BlitzError
from ...tools.registry import ToolError, ToolKind
from ..events import Event
from ..steering import TurnControl
from ..store.session import Session
from ..undo.recorder import TurnRecorder
from .batch import Emit, ToolBatch
from .modes import TurnMode
from .setup import TurnSetup
from .watchdog import RepeatWatch

ReplayStatus = Literal["same", "changed", "failed", "skipped"]
NOT_REPLAYED = {
    "invoke_agent": "it runs a sub-agent, which calls a model",
    "list_agents": "it needs the running turn",
}
"""Read-only tools replay does not run, and why (workflow tools are skipped too)."""
DIFF_LINES = 12
LINE_CHARS = 160
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])")


class ReplayedCall(BaseModel):
    """One recorded call, run again."""

    call_id: str
    tool: str
    arguments: str
    status: ReplayStatus
    detail: str = ""
    """For `changed`: a short diff (recorded → now); `failed`: why; `skipped`: why not run."""
    recorded: str = ""
    """The recorded result (its output, or its error)."""
    now: str = ""
    """Today's result (its output, or its error); empty when skipped."""


class ReplayReport(BaseModel):
    """What `%blitz_replay -o NAME` stores: the turn replayed and the verdict per call."""

    session: str
    turn: int
    """The turn, counted from 1 as the session's views show it."""
    calls: list[ReplayedCall]
    source: str = "transcript"
    """Where the recorded calls came from: the session's `transcript`, or the `notebook`'s
    turn record (a saved cell's metadata)."""

    def count(self, status: ReplayStatus) -> int:
        return sum(1 for call in self.calls if call.status == status)

    @property
    def all_same(self) -> bool:
        """True when every replayed call gave the recorded result (skipped ones aside)."""
        return all(call.status in ("same", "skipped") for call in self.calls)

    def summary(self) -> str:
        if not self.calls:
            return f"turn {self.turn} of session {self.session!r} made no tool calls: nothing to replay"
        counts = ", ".join(
            f"{self.count(status)} {status}"
            for status in ("same", "changed", "failed", "skipped")
            if self.count(status)
        )
        plural = "s" if len(self.calls) != 1 else ""
        where = " (from the notebook's record)" if self.source == "notebook" else ""
        return f"replayed turn {self.turn} of session {self.session!r}{where}: {len(self.calls)} call{plural}, {counts}"

    def text(self) -> str:
        """The report as the cell shows it: one line per call, its diff or reason indented."""
        lines = []
        for number, call in enumerate(self.calls, 1):
            lines.append(f"{number}. {call.tool}({shorten(call.arguments, 80)}): {call.status}")
            lines.extend(f"     {line}" for line in call.detail.splitlines())
        lines.append(self.summary())
        return "\n".join(lines)


@dataclass
class RecordedStep:
    """One model response of the recorded turn: its calls and their recorded results."""

    calls: list[ToolCall]
    results: dict[str, ToolResultMessage] = field(default_factory=dict)


def recorded_turn(
    session_name: str, transcript: list[Message], starts: dict[int, int], turn: int | None
) -> tuple[int, list[RecordedStep]]:
    """The steps of turn `turn` (0-based; None: the newest) from the session's transcript
    (`archive` then `history`, summaries left out) and where each turn starts in it."""
    messages = [m for m in transcript if not isinstance(m, SummaryMessage)]
    if not starts:
        raise BlitzError(f"session {session_name!r} has no recorded turns to replay")
    index = max(starts) if turn is None else turn
    if index not in starts:
        known = f"1 to {max(starts) + 1}" if len(starts) > 1 else "1"
        raise BlitzError(f"session {session_name!r} has no turn {index + 1} on record (turns: {known})")
    begin = starts[index]
    later = [start for t, start in starts.items() if t > index]
    end = min(later) if later else len(messages)
    if begin > len(messages):
        raise BlitzError(f"turn {index + 1} of session {session_name!r} is no longer in its transcript")
    steps: list[RecordedStep] = []
    for message in messages[begin:end]:
        if isinstance(message, AssistantMessage) and message.tool_calls:
            steps.append(RecordedStep(list(message.tool_calls)))
        elif isinstance(message, ToolResultMessage) and steps:
            steps[-1].results[message.call_id] = message
    return index, steps


Judge = Callable[[ToolCall, ToolResultMessage | None, ToolResultMessage], "ReplayedCall"]
"""How a result is compared with the recorded one (`compare`; from a notebook's record, the
part the record kept)."""


async def replay_steps(
    setup: TurnSetup,
    steps: list[RecordedStep],
    session: str,
    turn: int,
    *,
    judge: Judge | None = None,
    missing: Mapping[str, str] | None = None,
    source: str = "transcript",
) -> ReplayReport:
    """Run each step's calls as a batch, in order, and compare each result with the recorded
    one. `setup` is a turn's setup on a throwaway session (nothing reaches the history).
    `missing`: calls the record cannot replay, and why (they are skipped)."""
    judge = judge or compare
    missing = missing or {}
    emit = _emitter(setup)
    replayed: list[ReplayedCall] = []
    watch = RepeatWatch(10**9, 10**9)  # the recorded turn already passed the watchdog
    context = dataclasses.replace(
        setup.runtime.context, turn=ReplayAccess(setup.session, setup.runtime.context.workspace)
    )
    for step in steps:
        runnable = [call for call in step.calls if _not_replayed(setup, call) is None and call.id not in missing]
        batch = ToolBatch(setup, context, TurnControl(), emit, runnable, watch)
        results = {result.call_id: result for result in await batch.run(TurnMode.NORMAL)} if runnable else {}
        for call in step.calls:
            recorded = step.results.get(call.id)
            reason = _not_replayed(setup, call) or missing.get(call.id)
            if reason is not None:
                replayed.append(_call(call, "skipped", f"not replayed: {reason}", recorded, None))
            else:
                replayed.append(judge(call, recorded, results[call.id]))
    return ReplayReport(session=session, turn=turn + 1, calls=replayed, source=source)


class ReplayRecorder:
    """What changing tools report to during a replay: `run_python`'s namespace note is made as
    a turn makes it (so its result compares like for like); file and cell changes are not
    kept, since a replay is not an undoable turn."""

    def __init__(self, session: Session, root: Path) -> None:
        self._namespace = TurnRecorder(session, session.turns, root, keep_turns=1)

    def before_file_change(self, path: Path, fd: int | None, folder: int | None = None) -> None:
        return None

    def after_file_change(self, path: Path, content: bytes, written: os.stat_result | None = None) -> None:
        return None

    def cell_changed(self, change: Mapping[str, Any]) -> None:
        return None

    def namespace_before(self, namespace: dict[str, Any]) -> object:
        return self._namespace.namespace_before(namespace)

    def namespace_after(self, before: object, call_id: str | None, code: str) -> str:
        return self._namespace.namespace_after(before, call_id, code)


class ReplayAccess:
    """The tools' view of "the running turn" during a replay: the recorder above, and nothing
    that acts on a turn (those calls are skipped before they run)."""

    def __init__(self, session: Session, root: Path) -> None:
        self._recorder = ReplayRecorder(session, root)

    def checkpoint(self) -> ReplayRecorder:
        return self._recorder

    def enter_plan_mode(self) -> None:
        raise ToolError("not during a replay")

    async def submit_plan(self, plan: str) -> str:
        raise ToolError("not during a replay")

    def submit_output(self, arguments: dict[str, Any]) -> str:
        raise ToolError("not during a replay")

    def set_todos(self, items: list[TodoItem]) -> None:
        raise ToolError("not during a replay")

    def list_agents(self) -> list[tuple[str, str]]:
        raise ToolError("not during a replay")

    async def invoke_agent(self, agent: str, prompt: str, call_id: str) -> str:
        raise ToolError("not during a replay")


def _not_replayed(setup: TurnSetup, call: ToolCall) -> str | None:
    tool = setup.runtime.tools.get(call.name)
    if tool is not None and tool.kind is ToolKind.WORKFLOW:
        return "a workflow tool acts on the running turn"
    return NOT_REPLAYED.get(call.name)


def _emitter(setup: TurnSetup) -> Emit:
    handler = setup.observers.on_event

    async def emit(event: Event) -> None:
        if handler is not None:
            outcome = handler(event)
            if inspect.isawaitable(outcome):
                await outcome

    return emit


def compare(call: ToolCall, recorded: ToolResultMessage | None, now: ToolResultMessage) -> ReplayedCall:
    """same / changed (with a short diff) / failed now, for one call."""
    if recorded is None:
        return _call(call, "failed", "the recorded result is missing from the transcript", None, now)
    if not now.ok:
        if not recorded.ok and normalise(recorded.error or "") == normalise(now.error or ""):
            return _call(call, "same", "", recorded, now)
        return _call(call, "failed", shorten(now.error or "", 300), recorded, now)
    if not recorded.ok:
        return _call(
            call, "changed", f"it failed then ({shorten(recorded.error or '', 120)}); it works now", recorded, now
        )
    notes = []
    if len(recorded.images) != len(now.images):
        notes.append(f"images: {len(recorded.images)} then, {len(now.images)} now")
    before, after = normalise(recorded.output or ""), normalise(now.output or "")
    if before == after and not notes:
        return _call(call, "same", "", recorded, now)
    if before != after:
        notes.append(short_diff(before, after))
    return _call(call, "changed", "\n".join(notes), recorded, now)


def normalise(text: str) -> str:
    """What is compared: trailing spaces and blank edges dropped, object addresses masked, and
    decimal numbers to six significant digits (a value that moved in its tenth digit is the
    same result)."""
    text = _ADDRESS.sub("0x…", text)
    text = _FLOAT.sub(lambda match: f"{float(match.group()):.6g}", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def short_diff(before: str, after: str) -> str:
    """The changed lines, `-` recorded and `+` now, at most DIFF_LINES of them."""
    lines = [
        shorten(line, LINE_CHARS)
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if not line.startswith(("---", "+++", "@@"))
    ]
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… {len(lines) - DIFF_LINES} more changed lines"]
    return "\n".join(lines)


def _call(
    call: ToolCall,
    status: ReplayStatus,
    detail: str,
    recorded: ToolResultMessage | None,
    now: ToolResultMessage | None,
) -> ReplayedCall:
    return ReplayedCall(
        call_id=call.id,
        tool=call.name,
        arguments=call.arguments,
        status=status,
        detail=detail,
        recorded=_result_text(recorded),
        now=_result_text(now),
    )


def _result_text(result: ToolResultMessage | None) -> str:
    if result is None:
        return ""
    return result.output or "" if result.ok else f"error: {result.error}"
