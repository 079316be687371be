"""What the session store's rows mean: the records it hands out, and the replay that
turns an event log back into a history and archive. Pure: no database here, so the rules that
make a stored history equal to the in-memory one can be read (and tested) on their own."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from ...core.history import AssistantMessage, Message, SummaryMessage, ToolResultMessage, UserMessage
from ...core.todos import TodoItem
from ...core.usage import UsageLedger, UsageTotals
from ..safety.audit import AuditRecord


class SpanLink(BaseModel):
    """The previous turn's span context, as hex ids (OpenTelemetry's own form)."""

    trace_id: str
    span_id: str
    trace_flags: int = 1


class TurnOutcome(BaseModel):
    """How one turn ended; `interrupted` when its process died during it."""

    turn: int
    started: float
    ended: float | None
    stop_reason: str | None
    error: str | None


class TurnUsage(BaseModel):
    """A turn's end and the session's usage ledger then; `ledger` is None for a turn that
    ended before the store kept it (or was interrupted). Consecutive ledgers differ by what
    that turn spent, which is how usage is told per day (docs/panel.md)."""

    turn: int
    ended: float | None
    ledger: UsageLedger | None


class WatchWindow(BaseModel):
    """The watchdog's window of recent tool calls, as the store keeps it between turns: the
    thresholds it counted with and each call's (tool, arguments as canonical JSON)."""

    warn: int
    stop: int
    calls: list[tuple[str, str]] = Field(default_factory=list)


class BetweenTurns(BaseModel):
    """What a session carries from one turn to the next besides its history: the inbox (steer
    messages sent while no turn ran) and the watchdog's window, so a new kernel picks both up."""

    inbox: list[str] = Field(default_factory=list)
    watch: WatchWindow | None = None


class StoredSession(BaseModel):
    """A session as loaded from the store."""

    id: int
    name: str
    history: list[Message]
    archive: list[Message]
    turns: int
    ledger: UsageLedger
    todos: list[TodoItem]
    last_span: SpanLink | None
    variables: list[str]
    """User variables earlier turns' kernel tools created or read (for the resume note)."""
    interrupted: TurnOutcome | None = None
    """The turn this open found still running: its process died during it."""
    audit: list[AuditRecord] = Field(default_factory=list)
    budget_added_usd: float = 0.0
    budget_tripped: bool = False
    checkpoints: list[tuple[int, str]] = Field(default_factory=list)
    """(turn, record JSON) of every checkpoint row, oldest first."""
    committed: int = 0
    """Messages the units hold, less those rewound (Session.committed)."""
    turn_starts: dict[int, int] = Field(default_factory=dict)
    """Turn → `committed` before its first unit (Session.turn_starts)."""
    between: BetweenTurns = Field(default_factory=BetweenTurns)
    """The inbox and the watchdog's window, as the last turn (or steer) left them."""


class SessionInfo(BaseModel):
    """One row of `%blitz_session list`."""

    name: str
    created: float
    last_used: float
    turns: int
    usage: UsageTotals


class StoredHit(BaseModel):
    """One transcript passage that matched a search, best first."""

    session: str
    message: int
    """The message's number in its session (search results show it as `[message N, role, time]`)."""
    turn: int
    role: str
    time: float
    excerpt: str
    """The passage with the matches between « and »."""
    compacted: bool
    """Compaction replaced it with a summary: the model no longer sees it."""
    rewound: bool = False
    """An undo removed its turn from the history: the model no longer sees it."""


def role_and_text(message: Message) -> tuple[str, str]:
    """What search reads of a message, and its role as a passage shows it."""
    if isinstance(message, UserMessage):
        return "user", message.text
    if isinstance(message, AssistantMessage):
        calls = " ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        return "assistant", " ".join(part for part in (message.text, calls) if part)
    if isinstance(message, ToolResultMessage):
        return f"result of {message.name}", message.output or message.error or ""
    assert isinstance(message, SummaryMessage)
    return "summary", message.text


def fts_query(text: str) -> str | None:
    """The user's words as an FTS5 query: each word quoted (so no FTS syntax leaks in) and a
    prefix, all required. None when there is no word at all."""
    words = re.findall(r"\w+", text)
    if not words:
        return None
    return " ".join(f'"{word}"*' for word in words)


def replay(rows: list[Any], messages: list[Message]) -> tuple[list[Message], list[Message], list[list[int]]]:
    """The history and archive the rows describe: units append, a summary replaces the first
    `covered` live messages (exactly as `Session.replace_window` did in memory)."""
    history: list[Message] = []
    archive: list[Message] = []
    live: list[list[int]] = []
    position = 0
    for event_id, kind, count, first, covered, _variables, _body in rows:
        chunk = messages[position : position + count]
        position += count
        if kind == "summary":
            archive.extend(history[:covered])
            history[:covered] = chunk
            remaining, _ = cut(live, covered)
            live = [[event_id, first, 1], *remaining]
        elif kind == "rewind":  # an undo took the last `covered` messages out of the history
            del history[len(history) - covered :]
            live, _ = cut_tail(live, covered)
        else:
            history.extend(chunk)
            live.append([event_id, first, count])
    return history, archive, live


def cut(rows: list[list[int]], covered: int) -> tuple[list[list[int]], list[int]]:
    """The live rows left after the first `covered` messages go, and the ids of the rows
    touched (a row split by the cut keeps its tail live)."""
    touched: list[int] = []
    index = 0
    tail: list[list[int]] = []
    while covered > 0 and index < len(rows):
        event_id, first, count = rows[index]
        touched.append(event_id)
        index += 1
        if count <= covered:
            covered -= count
        else:
            tail = [[event_id, first + covered, count - covered]]
            covered = 0
    return [*tail, *rows[index:]], touched


def cut_tail(rows: list[list[int]], covered: int) -> tuple[list[list[int]], list[int]]:
    """The live rows left after the last `covered` messages go (a rewind), and the ids of the
    rows removed. Turns start at a unit, so a rewind never splits a row; if one would, the
    row keeps its head."""
    kept = [list(row) for row in rows]
    removed: list[int] = []
    while covered > 0 and kept:
        event_id, first, count = kept[-1]
        removed.append(event_id)
        if count <= covered:
            covered -= count
            kept.pop()
        else:
            kept[-1] = [event_id, first, count - covered]
            covered = 0
    return kept, removed


def turn_starts(rows: list[Any]) -> tuple[int, dict[int, int]]:
    """From (turn, kind, messages, covered) rows in log order: the messages committed and not
    rewound, and where each turn's messages start among them (a rewind cuts there)."""
    committed = 0
    starts: dict[int, int] = {}
    for turn, kind, count, covered in rows:
        if kind == "unit":
            starts.setdefault(turn, committed)
            committed += count
        elif kind == "rewind":
            committed -= covered
    return committed, starts
