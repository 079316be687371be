"""Reading the SQLite store: a session's rows back into a StoredSession, search, outcomes.

Every row that is parsed is checked where it is read: one that is not valid JSON or not of
the shape its table promises raises StoreDamagedError naming the table, the row and the
session (edge.py), never a raw ValidationError.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, TypeAdapter, ValidationError

from ....core.history import HISTORY_ADAPTER, Message
from ....core.todos import TodoItem
from ....core.usage import UsageLedger, UsageTotals
from ...safety.audit import AuditRecord
from ..protocol import HIGHLIGHT
from ..records import (
    BetweenTurns,
    SessionInfo,
    SpanLink,
    StoredHit,
    StoredSession,
    TurnOutcome,
    TurnUsage,
    fts_query,
    replay,
    turn_starts,
)
from .edge import damaged_row

SNIPPET_TOKENS = 24
CANDIDATES = 300
"""Search ranks the newest this many matching messages (docs/store.md): a word in nearly every
message would otherwise have bm25 computed for every one of them; a rarer word has fewer
matches than this, so all of them are ranked. Ties go to the newer message."""
_TODOS = TypeAdapter(list[TodoItem])


class Query(Protocol):
    """What the readers below need of a connection: `execute(sql, parameters)` with `?`
    placeholders, returning rows by `fetchone` / `fetchall` (sqlite3's, or the Postgres
    backend's adapter, which shares the replay and its row checks)."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...


@dataclass
class Live:
    """Per-session bookkeeping for appends: the next message number and the event rows whose
    messages are in the live history now ([event id, first message number, count])."""

    next_message: int
    rows: list[list[int]] = field(default_factory=list)
    usage_json: str = ""
    open_turn: int | None = None
    """The turn this process marked open (its `turns` row written): later units skip both."""


def load_session(db: Query, location: str, session_id: int, name: str) -> tuple[StoredSession, Live]:
    """The session as its rows describe it, and the bookkeeping its next appends need."""
    bad = _Namer(location, name)
    logged = db.execute(
        "SELECT id, kind, messages, first_message, covered, variables, body, turn FROM events "
        "WHERE session_id = ? ORDER BY id",
        (session_id,),
    ).fetchall()
    rows = [row[:7] for row in logged]
    turns, todos, next_message, last_prompt, budget, between = db.execute(
        "SELECT turns, todos, messages, last_prompt_tokens, budget, between_turns FROM sessions WHERE id = ?",
        (session_id,),
    ).fetchone()
    usage = db.execute("SELECT model, totals FROM usage WHERE session_id = ?", (session_id,)).fetchall()
    span = db.execute(
        "SELECT trace_id, span_id, trace_flags FROM trace_links WHERE session_id = ?", (session_id,)
    ).fetchone()
    audit = db.execute("SELECT id, record FROM audit WHERE session_id = ? ORDER BY id", (session_id,)).fetchall()
    checkpoints = db.execute(
        "SELECT id, turn, record FROM checkpoints WHERE session_id = ? ORDER BY id", (session_id,)
    ).fetchall()
    committed, starts = turn_starts([(row[7], row[1], row[2], row[4]) for row in logged])
    messages = _messages(rows, bad)
    if len(messages) != sum(count for _, _, count, *_ in rows):
        raise bad("events", rows[-1][0] if rows else 0, "its message counts do not match its bodies")
    history, archive, live = replay(rows, messages)
    ledger = UsageLedger(last_prompt_tokens=last_prompt)
    for model, totals in usage:
        parsed = bad.parse("usage", session_id, UsageTotals, totals)
        if model:
            ledger.by_model[model] = parsed
        else:
            ledger.total = parsed
    for row_id, _turn, record in checkpoints:
        bad.json("checkpoints", row_id, record)
    stored = StoredSession(
        id=session_id,
        name=name,
        history=history,
        archive=archive,
        turns=turns,
        ledger=ledger,
        todos=bad.parse_adapter("sessions", session_id, _TODOS, todos or "[]"),
        last_span=SpanLink(trace_id=span[0], span_id=span[1], trace_flags=span[2]) if span else None,
        variables=sorted({name for *_, names, _body in rows if names for name in names.split()}),
        audit=[bad.parse("audit", row_id, AuditRecord, record) for row_id, record in audit],
        checkpoints=[(turn, record) for _, turn, record in checkpoints],
        committed=committed,
        turn_starts=starts,
        between=bad.parse("sessions", session_id, BetweenTurns, between or "{}"),
        **_budget_fields(bad, session_id, budget),
    )
    return stored, Live(next_message=next_message, rows=live, usage_json=ledger.model_dump_json())


def _messages(rows: list[Any], bad: _Namer) -> list[Message]:
    """One parse for the whole log (each body is a JSON array, so their insides join into
    one); only when that fails, row by row to name the bad one."""
    joined = "[" + ",".join(body[1:-1] for *_, body in rows if len(body) > 2) + "]"
    try:
        return HISTORY_ADAPTER.validate_json(joined)
    except ValueError:
        pass
    for row in rows:
        try:
            HISTORY_ADAPTER.validate_json(row[-1])
        except ValueError as exc:
            raise bad("events", row[0], _short(exc)) from None
    raise bad("events", rows[-1][0] if rows else 0, "the bodies do not join into one history")


class _Namer:
    """Raises StoreDamagedError for a bad row of one session."""

    def __init__(self, location: str, session: str) -> None:
        self.location = location
        self.session = session

    def __call__(self, table: str, row: int, detail: str) -> Exception:
        return damaged_row(self.location, table, row, self.session, detail)

    def parse(self, table: str, row: int, model: type[Any], text: str) -> Any:
        try:
            return model.model_validate_json(text) if issubclass(model, BaseModel) else None
        except (ValidationError, ValueError, TypeError) as exc:
            raise self(table, row, _short(exc)) from None

    def parse_adapter(self, table: str, row: int, adapter: TypeAdapter[Any], text: str) -> Any:
        try:
            return adapter.validate_json(text)
        except (ValidationError, ValueError, TypeError) as exc:
            raise self(table, row, _short(exc)) from None

    def json(self, table: str, row: int, text: str) -> Any:
        try:
            return json.loads(text)
        except (ValueError, TypeError) as exc:
            raise self(table, row, _short(exc)) from None


def _budget_fields(bad: _Namer, session_id: int, text: str) -> dict[str, Any]:
    stored = bad.json("sessions", session_id, text or "{}")
    if not isinstance(stored, dict):
        raise bad("sessions", session_id, "its budget is not a JSON object")
    try:
        return {
            "budget_added_usd": float(stored.get("budget_added_usd", 0.0)),
            "budget_tripped": bool(stored.get("budget_tripped", False)),
        }
    except (TypeError, ValueError):
        raise bad("sessions", session_id, "its budget is not a number") from None


def _short(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return f"{first.get('msg', 'invalid')}" + (f" at {where}" if where else "")
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def outcome(db: Query, session_id: int, turn: int) -> TurnOutcome:
    started, ended, stop, error = db.execute(
        "SELECT started, ended, stop_reason, error FROM turns WHERE session_id = ? AND turn = ?", (session_id, turn)
    ).fetchone()
    return TurnOutcome(turn=turn, started=started, ended=ended, stop_reason=stop, error=error)


def turn_usage(db: Query, location: str, session_id: int, name: str) -> list[TurnUsage]:
    """Each turn's end and the ledger then, oldest first (a bad ledger is named as damage)."""
    bad = _Namer(location, name)
    rows = db.execute(
        "SELECT turn, ended, usage FROM turns WHERE session_id = ? ORDER BY turn", (session_id,)
    ).fetchall()
    return [
        TurnUsage(turn=turn, ended=ended, ledger=bad.parse("turns", turn, UsageLedger, usage) if usage else None)
        for turn, ended, usage in rows
    ]


def search(db: sqlite3.Connection, text: str, session: str | None, limit: int) -> list[StoredHit]:
    """Ranked passages (FTS5 bm25) among the newest CANDIDATES matches, in two steps so that
    the work per match stays small: the best `limit` row ids first (rank only), then the
    passages, snippets and rewind ranges of those rows alone (the rewind rows read once per
    session, by the (session_id, kind) index). Snapshots are never indexed, so every indexed
    row is a session's."""
    query = fts_query(text)
    if query is None:
        return []
    if session is None:
        best = db.execute(
            "SELECT rowid FROM (SELECT rowid, rank FROM transcript_fts WHERE transcript_fts MATCH ? "
            "ORDER BY rowid DESC LIMIT ?) ORDER BY rank, rowid DESC LIMIT ?",
            (query, CANDIDATES, limit),
        ).fetchall()
    else:
        best = db.execute(
            "SELECT rowid FROM (SELECT f.rowid AS rowid, f.rank AS rank FROM transcript_fts f "
            "JOIN transcript t ON t.id = f.rowid WHERE transcript_fts MATCH ? AND t.session_id = "
            "(SELECT id FROM sessions WHERE kind = 'session' AND name = ?) ORDER BY f.rowid DESC LIMIT ?) "
            "ORDER BY rank, rowid DESC LIMIT ?",
            (query, session, CANDIDATES, limit),
        ).fetchall()
    order = [rowid for (rowid,) in best]
    if not order:
        return []
    # The chosen rows by their range of row ids, which FTS5 seeks to (a list of ids would be
    # tested against every match); a snippet only for the chosen ones (CASE is lazy).
    marks = ",".join("?" * len(order))
    found = {
        row[0]: row[1:]
        for row in db.execute(
            f"SELECT t.id, s.name, t.message, t.turn, t.role, t.time, CASE WHEN t.id IN ({marks}) THEN "  # noqa: S608
            f"snippet(transcript_fts, 0, '{HIGHLIGHT[0]}', '{HIGHLIGHT[1]}', '…', {SNIPPET_TOKENS}) END, "
            "s.first_live, s.live_summary, t.session_id, t.event_id "
            "FROM transcript_fts JOIN transcript t ON t.id = transcript_fts.rowid "
            "JOIN sessions s ON s.id = t.session_id "
            "WHERE transcript_fts MATCH ? AND transcript_fts.rowid >= ? AND transcript_fts.rowid <= ?",
            (*order, query, min(order), max(order)),
        ).fetchall()
        if row[6] is not None
    }
    rows = [found[rowid] for rowid in order if rowid in found]
    rewinds = _rewinds(db, {row[8] for row in rows})
    return [
        StoredHit(
            session=name,
            message=message,
            turn=turn,
            role=role,
            time=when,
            excerpt=excerpt,
            compacted=message != live_summary if role == "summary" else message < first_live,
            rewound=any(low <= event_id <= high for low, high in rewinds.get(session_id, ())),
        )
        for name, message, turn, role, when, excerpt, first_live, live_summary, session_id, event_id in rows
    ]


def _rewinds(db: sqlite3.Connection, sessions: set[int]) -> dict[int, list[tuple[int, int]]]:
    """Session → the event ranges its rewind rows took out of the history."""
    found: dict[int, list[tuple[int, int]]] = {}
    for session_id in sessions:
        found[session_id] = [
            (low, high)
            for low, high in db.execute(
                "SELECT covers_from, covers_to FROM events WHERE session_id = ? AND kind = 'rewind'", (session_id,)
            ).fetchall()
            if low is not None and high is not None
        ]
    return found


def empty_session(session_id: int, name: str) -> StoredSession:
    """A session just created, every field given. Validated: pydantic's checks of these
    values cost less than `model_construct`'s walk over the fields in Python (a third)."""
    return StoredSession(
        id=session_id,
        name=name,
        history=[],
        archive=[],
        turns=0,
        ledger=UsageLedger(),
        todos=[],
        last_span=None,
        variables=[],
        interrupted=None,
        audit=[],
        budget_added_usd=0.0,
        budget_tripped=False,
        checkpoints=[],
        committed=0,
        turn_starts={},
        between=BetweenTurns(),
    )


def list_sessions(db: sqlite3.Connection) -> list[SessionInfo]:
    rows = db.execute(
        "SELECT s.name, s.created, s.last_used, s.turns, u.totals FROM sessions s "
        "LEFT JOIN usage u ON u.session_id = s.id AND u.model = '' WHERE s.kind = 'session' ORDER BY s.name"
    ).fetchall()
    return [
        SessionInfo(
            name=name,
            created=created,
            last_used=last_used,
            turns=turns,
            usage=UsageTotals.model_validate_json(totals) if totals else UsageTotals(),
        )
        for name, created, last_used, turns, totals in rows
    ]
