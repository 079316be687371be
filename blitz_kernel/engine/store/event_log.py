"""The event log's marker rows — a compaction's summary, an undo's rewind — as both SQL backends
write them (`?` placeholders; the Postgres backend translates). One place, so that what a
summary or a rewind covers means the same on every backend the conformance suite runs.

Each writer returns the session's new bookkeeping instead of changing it: the backend applies
it once its transaction has committed, so a failed write leaves the live rows as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ...core.history import HISTORY_ADAPTER, Message, SummaryMessage
from .records import cut, cut_tail

if TYPE_CHECKING:
    from .sqlite.reads import Live


class Executes(Protocol):
    def execute(self, sql: str, parameters: Any = (), /) -> Any: ...


Insert = Callable[[str, Sequence[Any]], int]
"""Inserts one row and returns its id."""
Transcribe = Callable[[int, int, int, float, Sequence[Message]], None]
"""(event id, first message number, turn, time, messages): their transcript rows."""


@dataclass(frozen=True)
class WrittenUnit:
    """A committed unit's event row: `apply` moves the session's bookkeeping on once its
    transaction has committed."""

    event_id: int
    first: int
    count: int

    @property
    def next_message(self) -> int:
        return self.first + self.count

    def apply(self, live: Live, turn: int) -> None:
        live.next_message = self.next_message
        live.open_turn = turn
        live.rows.append([self.event_id, self.first, self.count])


def unit_event(
    db: Executes,
    insert: Insert,
    transcribe: Transcribe,
    live: Live,
    at: tuple[int, int, float],
    messages: Sequence[Message],
    variables: Sequence[str],
) -> WrittenUnit:
    """A committed unit's event row and transcript rows, and its turn's row when it is the
    turn's first here (inside the caller's transaction; `live` moves on once it commits). `at`:
    (session id, turn, time)."""
    session_id, turn, now = at
    first = live.next_message
    event_id = insert(
        "INSERT INTO events (session_id, turn, time, kind, messages, first_message, body, variables) "
        "VALUES (?, ?, ?, 'unit', ?, ?, ?, ?)",
        (
            session_id,
            turn,
            now,
            len(messages),
            first,
            HISTORY_ADAPTER.dump_json(list(messages)).decode(),
            " ".join(variables) or None,
        ),
    )
    transcribe(event_id, first, turn, now, messages)
    if live.open_turn != turn:  # the turn's first unit: its row, which marks it open
        db.execute(
            "INSERT INTO turns (session_id, turn, started) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (session_id, turn, now),
        )
    return WrittenUnit(event_id=event_id, first=first, count=len(messages))


@dataclass(frozen=True)
class Written:
    """An event row written, and the live rows the session has once it commits."""

    event_id: int
    next_message: int
    rows: list[list[int]]


def summary_event(
    db: Executes,
    insert: Insert,
    transcribe: Transcribe,
    live_rows: list[list[int]],
    next_message: int,
    at: tuple[int, int, float],
    summary: SummaryMessage,
    covered: int,
) -> Written:
    """Compaction replaced the first `covered` live messages with `summary`: a row naming the
    rows it stands for. Nothing is deleted; the transcript keeps every message. `at`: (session
    id, turn, time)."""
    session_id, turn, now = at
    rows, covered_ids = cut(live_rows, covered)
    first_live = rows[0][1] if rows else next_message + 1
    event_id = insert(
        "INSERT INTO events (session_id, turn, time, kind, messages, first_message, body, covers_from, "
        "covers_to, covered) VALUES (?, ?, ?, 'summary', 1, ?, ?, ?, ?, ?)",
        (
            session_id,
            turn,
            now,
            next_message,
            HISTORY_ADAPTER.dump_json([summary]).decode(),
            covered_ids[0] if covered_ids else None,
            covered_ids[-1] if covered_ids else None,
            covered,
        ),
    )
    transcribe(event_id, next_message, turn, now, [summary])
    db.execute(
        "UPDATE sessions SET last_used = ?, messages = ?, first_live = ?, live_summary = ? WHERE id = ?",
        (now, next_message + 1, first_live, next_message, session_id),
    )
    return Written(event_id, next_message + 1, [[event_id, next_message, 1], *rows])


def rewind_event(
    db: Executes,
    insert: Insert,
    live_rows: list[list[int]],
    next_message: int,
    at: tuple[int, int, float],
    covered: int,
) -> Written:
    """An undo took the last `covered` live messages out of the history: a row saying so
    (replay honours it). Nothing is deleted; the transcript keeps them, marked rewound by the
    range of rows this one names."""
    session_id, turn, now = at
    rows, removed = cut_tail(live_rows, covered)
    event_id = insert(
        "INSERT INTO events (session_id, turn, time, kind, messages, first_message, body, covers_from, "
        "covers_to, covered) VALUES (?, ?, ?, 'rewind', 0, ?, '[]', ?, ?, ?)",
        (session_id, turn, now, next_message, min(removed, default=None), max(removed, default=None), covered),
    )
    db.execute("UPDATE sessions SET last_used = ? WHERE id = ?", (now, session_id))
    return Written(event_id, next_message, rows)
