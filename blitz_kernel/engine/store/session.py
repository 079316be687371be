"""A session: one conversation's history, usage and per-session approvals.

The history is a typed list (`HISTORY_ADAPTER` saves and loads it). A session that came from
the workspace's store writes through to it: every unit the turn loop commits is appended at the
event loop's second pause after it reaches the in-memory history (`commit`, SessionLog.held), so
the history on disk is always a valid one and the write overlaps the turn's next wait; the
turn's outcome is written when it ends (`end_turn`), with the answer. The audit records of a
unit's tool calls and the turn's span link wait for the next of those two writes and go in
its transaction (one commit per unit, not one per record): what a kernel killed mid-unit loses
is that unit and its records together.

The session also keeps the running size of its history (`prompt_chars`), updated by the
three changes a history ever sees (a commit, a compaction, a rewind), so the check before
every step costs the same at the thousandth turn as at the first.
"""

from __future__ import annotations

import json
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import SpanContext, TraceFlags

from ...core.history import (
    Message,
    SummaryMessage,
    TextPart,
    UserMessage,
    for_model,
    keep_signed_thinking,
    message_chars,
)
from ...core.redact import Redactor
from ...core.todos import TodoItem
from ...core.usage import TokenUsage, UsageLedger
from ..safety.audit import AuditRecord
from ..steering import TurnControl
from .checkpoints import CellChange, CheckpointBook, CodeRun, FileChange
from .log import HeldUnit, SessionLog
from .records import BetweenTurns, SpanLink, StoredSession, TurnOutcome, WatchWindow
from .resume import resume_note, variable_names


@dataclass
class Session:
    name: str
    history: list[Message] = field(default_factory=list)
    ledger: UsageLedger = field(default_factory=UsageLedger)
    turns: int = 0
    """Completed turns; the next turn's index."""
    always_allowed: set[str] = field(default_factory=set)
    """Tools the user answered "Always allow" for. Never stored: a new kernel asks again."""
    archive: list[Message] = field(default_factory=list)
    """Messages compaction replaced by a summary: the full transcript stays searchable."""
    todos: list[TodoItem] = field(default_factory=list)
    """The agent's todo list (the `todo` tool)."""
    running: TurnControl | None = None
    """The control of the turn that is running now, if any."""
    compacting: bool = False
    """A manual compaction is summarising; turns wait for it (SessionBusyError)."""
    audit: list[AuditRecord] = field(default_factory=list)
    """Every tool call of the session: decision, who made it, outcome."""
    budget_added_usd: float = 0.0
    """Budget added with `%blitz_usage --add-budget` on top of `limits.max_cost_usd_session`."""
    budget_tripped: bool = False
    """The session budget was spent: turns are refused until budget is added."""
    log: SessionLog | None = None
    """The store this session writes through to; None: memory only."""
    resumed_variables: list[str] | None = None
    """Set when the session was loaded from the store into a new kernel after earlier turns:
    the user variables those turns relied on (the first prompt gets a note about them)."""
    interrupted: TurnOutcome | None = None
    """The turn found still open when the session was loaded: its process died during it."""
    unsaved_reason: str | None = None
    """Why this session lives in memory only, when the workspace's store could not be used."""
    checkpoints: CheckpointBook = field(default_factory=CheckpointBook)
    """What each turn changed (files, cells, variables), for undo."""
    rewound: list[Message] = field(default_factory=list)
    """Messages an undo took out of the history; search still finds them."""
    committed: int = 0
    """Messages committed to the history and not rewound (a summary does not count)."""
    turn_starts: dict[int, int] = field(default_factory=dict)
    """Turn → `committed` before its first message: where a rewind cuts. By turn, not by
    prompt, since a continued turn (`continue_turn`) has no prompt of its own."""
    inbox: list[str] = field(default_factory=list)
    """Steer messages sent while no turn ran: they go, framed, with the next prompt. Kept in
    the store (`queue_inbox`, `take_inbox`), so a new kernel sends them."""
    watch: Any = field(default=None, repr=False)
    """The watchdog's window of recent tool calls, carried from turn to turn (the turn room
    owns what it holds). Loaded from the store, it is the stored `WatchWindow` until the next
    turn's watch takes it up; `keep_window` stores it again."""
    redactor: Redactor | None = None
    """The workspace's secrets: what enters the history, the audit and the store is redacted
    here, whoever built it (a prompt with its attachments, the model's text, a tool result)."""
    _span: Any = field(default=None, repr=False)
    _note: str | None = field(default=None, repr=False)
    _pending_audit: list[AuditRecord] = field(default_factory=list, repr=False)
    """Audit records the next unit (or the turn's end) writes with it."""
    _pending_span: SpanLink | None = field(default=None, repr=False)
    """The running turn's span link, written with the turn's outcome."""
    _window: WatchWindow | None = field(default=None, repr=False)
    """The watchdog's window as last stored."""
    _chars: int = field(default=0, repr=False)
    _chars_of: int = field(default=-1, repr=False)
    """How many history messages `_chars` counts; anything else: count afresh."""
    _view: list[Message] = field(default_factory=list, repr=False)
    _view_of: tuple[list[Message] | None, int, Message | None] = field(default=(None, 0, None), repr=False)
    """The history list `_view` was made from, the reshapes then, its last message converted."""
    _reshapes: int = field(default=0, repr=False)
    """Rewinds and compactions so far: the changes that are not an append."""

    def model_history(self) -> list[Message]:
        """`for_model(self.history)`, kept up as units commit: a step converts only the
        messages committed since the last step, so building a request costs the same at the
        thousandth turn as at the first. A rewind, a compaction or a history replaced from
        outside starts it afresh. A copy: the request must not grow with the session."""
        history, view = self.history, self._view
        done = len(view)
        source, reshapes, last = self._view_of
        if (
            source is not history
            or reshapes != self._reshapes
            or done > len(history)
            or (done and history[done - 1] is not last)
        ):
            view, done = [], 0
            self._view = view
        if done < len(history):
            view.extend(for_model(history[done:]))
            self._view_of = (history, self._reshapes, history[-1])
        return list(view)

    def prompt_chars(self) -> int:
        """The characters the history puts into a prompt (`core.history.message_chars`), kept
        as it changes rather than walked before every step."""
        if self._chars_of != len(self.history):
            self._chars, self._chars_of = sum(map(message_chars, self.history)), len(self.history)
        return self._chars

    def _count(self, before: int, delta: int) -> None:
        """The history went from `before` messages to its length now, `delta` characters."""
        if self._chars_of == before:
            self._chars, self._chars_of = self._chars + delta, len(self.history)

    @classmethod
    def from_store(cls, stored: StoredSession, log: SessionLog, *, resumed: bool) -> Session:
        """The session as its rows describe it; `resumed`: loaded by a new kernel, so the
        first prompt says the kernel's variables are gone."""
        session = cls(
            name=stored.name,
            history=stored.history,
            archive=stored.archive,
            turns=stored.turns,
            ledger=stored.ledger,
            todos=stored.todos,
            log=log,
            interrupted=stored.interrupted,
            audit=stored.audit,
            budget_added_usd=stored.budget_added_usd,
            budget_tripped=stored.budget_tripped,
        )
        session.committed, session.turn_starts = stored.committed, dict(stored.turn_starts)
        session.inbox, session.watch = list(stored.between.inbox), stored.between.watch
        session._window = stored.between.watch
        for turn, record in stored.checkpoints:
            session.checkpoints.load(turn, record)
        if stored.last_span is not None:
            session._span = SpanContext(
                trace_id=int(stored.last_span.trace_id, 16),
                span_id=int(stored.last_span.span_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(stored.last_span.trace_flags),
            )
        if resumed and stored.turns:
            session.resumed_variables = stored.variables
        return session

    @property
    def saved(self) -> bool:
        """True while the session writes through to a working store."""
        return self.log is not None and self.log.link.store is not None

    @property
    def not_saved(self) -> str | None:
        """One line saying why the session is not being saved; None while it is (or when it
        was never meant to be, as in an aside or a workspace opened without a store)."""
        if self.log is not None:
            return self.log.link.problem if self.log.link.store is None else None
        return self.unsaved_reason

    @property
    def last_turn_span(self) -> Any:
        """The previous turn's span context: the next turn's span links to it. Kept
        in the store, so the link survives a restart."""
        return self._span

    @last_turn_span.setter
    def last_turn_span(self, context: Any) -> None:
        """While a turn runs, the link waits for the turn's outcome (one transaction)."""
        self._span = context
        if self.log is not None and isinstance(context, SpanContext) and context.is_valid:
            link = SpanLink(
                trace_id=f"{context.trace_id:032x}",
                span_id=f"{context.span_id:016x}",
                trace_flags=int(context.trace_flags),
            )
            if self.running is not None:
                self._pending_span = link
            else:
                self.log.write(lambda store, session_id: store.save_span(session_id, link))

    def prepare_resume_note(self, namespace: Container[str] | None) -> None:
        """After a restart, arm the note the next prompt carries: which variables earlier turns
        used are missing from `namespace` now (None: no kernel, so all of them)."""
        if self.resumed_variables is not None:
            self._note = resume_note(self.resumed_variables, namespace)
            self.resumed_variables = None

    def commit(self, messages: Sequence[Message], turn_index: int) -> None:
        """Append one valid unit (a prompt, an answer, a response with all its results) to
        the history and, in one transaction, to the store: at the loop's second pause, or with
        the turn's outcome when that comes first (SessionLog.held)."""
        redactor = self.redactor
        unit = (
            list(messages)
            if redactor is None
            else [keep_signed_thinking(m, redactor.redact_value(m)) for m in messages]
        )
        if self._note is not None and isinstance(unit[0], UserMessage):
            prompt = unit[0]
            unit[0] = UserMessage(parts=[*prompt.parts[:-1], TextPart(text=self._note), *prompt.parts[-1:]])
            self._note = None
        before = len(self.history)
        self.history.extend(unit)
        self._count(before, sum(map(message_chars, unit)))
        self.turn_starts.setdefault(turn_index, self.committed)
        self.committed += len(unit)
        if self.log is not None:
            names = variable_names(unit)
            audit, self._pending_audit = self._pending_audit, []
            self.log.hold(HeldUnit(messages=unit, turn=turn_index, variables=names, audit=audit, ledger=self.ledger))

    def end_turn(self, turn_index: int, stop_reason: str, error: str | None) -> None:
        """The turn is over: count it, and record how it ended."""
        self.turns += 1
        if self.redactor is not None:
            error = self.redactor.redact_optional(error)
        if self.log is not None:
            audit, self._pending_audit = self._pending_audit, []
            span, self._pending_span = self._pending_span, None
            answer = self.log.take_held(turn_index)
            self.log.write(
                lambda store, session_id: store.end_turn(
                    session_id,
                    turn_index,
                    stop_reason,
                    error,
                    ledger=self.ledger,
                    todos=self.todos,
                    audit=audit if answer is None else [*answer.audit, *audit],
                    span=span,
                    answer=answer.messages if answer is not None else (),
                    answer_variables=answer.variables if answer is not None else (),
                )
            )

    def queue_inbox(self, text: str) -> None:
        """A steer message for the next prompt (no turn runs); stored at once."""
        self.inbox.append(text)
        self._save_between_turns()

    def take_inbox(self) -> list[str]:
        """The inbox's messages, emptying it (the next prompt carries them)."""
        messages, self.inbox = self.inbox, []
        if messages:
            self._save_between_turns()
        return messages

    def restore_inbox(self, messages: list[str]) -> None:
        """Put taken messages back in front (their turn was refused before it started)."""
        if messages:
            self.inbox[:0] = messages
            self._save_between_turns()

    def keep_window(self, window: WatchWindow | None) -> None:
        """The turn is over: store the watchdog's window it leaves (None: none to carry);
        nothing is written when it is what the store holds already."""
        if window == self._window or (window is not None and not window.calls and self._window is None):
            return
        self._window = window
        self._save_between_turns()

    def _save_between_turns(self) -> None:
        """The inbox and the watchdog's window, redacted like everything stored."""
        if self.log is None:
            return
        state = BetweenTurns(inbox=list(self.inbox), watch=self._window)
        if self.redactor is not None:
            state = self.redactor.redact_value(state)
        self.log.write(lambda store, session_id: store.save_between_turns(session_id, state))

    def record_change(self, turn: int, change: FileChange | CellChange | CodeRun) -> None:
        """Keep a checkpoint record in the store as it happens (memory has it already)."""
        if self.log is not None:
            kind, record = change.kind, change.model_dump_json()
            self.log.write(lambda store, session_id: store.append_checkpoint(session_id, turn, kind, record))

    def mark_undone(self, turn: int, part: str) -> None:
        """`part` ("files_undone" or "conversation_undone") of `turn` was undone."""
        checkpoint = self.checkpoints.get(turn)
        setattr(checkpoint, part, True)
        if self.log is not None:
            self.log.write(lambda store, session_id: store.append_checkpoint(session_id, turn, "undone", f'"{part}"'))

    def mark_item_undone(self, turn: int, key: str) -> None:
        """One item of `turn` ("file:PATH", "cell:N", "variable:NAME") was put back."""
        self.checkpoints.get(turn).done_items.add(key)
        if self.log is not None:
            record = json.dumps(f"item:{key}")
            self.log.write(lambda store, session_id: store.append_checkpoint(session_id, turn, "undone", record))

    def mark_item_kept(self, turn: int, key: str) -> None:
        """One item of `turn` was kept in a review: decided, left as the agent made it."""
        self.checkpoints.get(turn).kept_items.add(key)
        if self.log is not None:
            record = json.dumps(f"kept:{key}")
            self.log.write(lambda store, session_id: store.append_checkpoint(session_id, turn, "kept", record))

    def rewind_history(self, turns: list[int]) -> int | None:
        """Take `turns` (the newest ones still in the history) out of it (an undo):
        everything from the first message of the oldest of them on. Returns how many messages
        went; None when compaction already summarised part of them (nothing is removed). The
        store gets a `rewind` row; its log keeps every row."""
        starts = [self.turn_starts[t] for t in turns if t in self.turn_starts]
        if not starts:
            return 0
        count = self.committed - min(starts)
        summarised = 1 if self.history and isinstance(self.history[0], SummaryMessage) else 0
        if count > len(self.history) - summarised:
            return None
        removed = self.history[len(self.history) - count :]
        before = len(self.history)
        del self.history[len(self.history) - count :]
        self._reshapes += 1
        self._count(before, -sum(map(message_chars, removed)))
        self.rewound.extend(removed)
        self.committed -= count
        if self.log is not None and removed:
            turn = self.turns
            self.log.write(lambda store, session_id: store.append_rewind(session_id, count, turn))
        return count

    def add_budget(self, usd: float) -> None:
        """Lift a tripped session budget by `usd`."""
        self.budget_added_usd += usd
        self.budget_tripped = False
        self._save_budget()

    def trip_budget(self) -> None:
        """The session budget is spent; it stays so (across restarts) until added to."""
        if not self.budget_tripped:
            self.budget_tripped = True
            self._save_budget()

    def _save_budget(self) -> None:
        if self.log is not None:
            added, tripped = self.budget_added_usd, self.budget_tripped
            self.log.write(lambda store, session_id: store.save_budget(session_id, added, tripped))

    def record_usage(self, model: str, usage: TokenUsage, cost: float | None) -> None:
        """Usage outside a turn (a manual compaction): counted and saved at once, since no
        turn end will save it."""
        self.ledger.record(model, usage, cost)
        if self.log is not None:
            ledger = self.ledger
            self.log.write(lambda store, session_id: store.save_usage(session_id, ledger))

    def record_audit(self, record: AuditRecord) -> None:
        """Keep the record with the session; in the store with the next unit or the turn's
        end during a turn, at once outside one."""
        if self.redactor is not None:
            record = self.redactor.redact_value(record)
        self.audit.append(record)
        if self.log is None:
            return
        if self.running is not None:
            self._pending_audit.append(record)
        else:
            self.log.write(lambda store, session_id: store.append_audit(session_id, [record]))

    def replace_window(self, split: int, summary: Message) -> None:
        """Put `summary` in place of the first `split` messages, archiving them. A
        splice, so messages appended after the window was chosen are kept. The store gets a
        summary row naming the rows it covers; they stay."""
        if self.redactor is not None:
            summary = self.redactor.redact_value(summary)
        self.archive.extend(self.history[:split])
        before = len(self.history)
        removed = sum(map(message_chars, self.history[:split]))
        self.history[:split] = [summary]
        self._reshapes += 1
        self._count(before, message_chars(summary) - removed)
        if self.log is not None and isinstance(summary, SummaryMessage):
            turn = self.turns
            self.log.write(lambda store, session_id: store.append_summary(session_id, summary, split, turn))
