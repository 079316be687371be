"""Where a durable session writes, and when (docs/store.md).

A committed unit is not written the moment it is committed: it is held until the event loop's
second pause — by then the turn's next request has gone out and the turn waits for its model,
a tool or anything else — and written then, so the write overlaps that wait instead of holding
up the request that follows. Every other write of the session writes the held unit first (the
order on disk is the order of events), and the turn's outcome carries its answer in its own
transaction. Outside a running event loop a unit is written at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from ...core.history import Message
from ...core.usage import UsageLedger
from ..safety.audit import AuditRecord
from .link import StoreLink
from .protocol import SessionStore

PAUSES_BEFORE_WRITE = 2
"""A held unit is written at the loop's second pause after its commit. The turn's next model
request goes out over the first one: an HTTP client sends the headers, pauses, then sends the
body, and a write in that pause held the body back by the write's whole length (measured: 0.3 ms
a step of a 3-step turn). From the second pause on the turn is waiting for its answer."""


@dataclass
class SessionLog:
    """Where a durable session writes: its row in the workspace's store."""

    link: StoreLink
    session_id: int
    held: HeldUnit | None = None
    """A committed unit not yet written. It is written at the event loop's second pause (the turn
    waiting for its model, a tool or anything else), so the write overlaps that wait instead of
    holding up the request that follows it; before any other write, so the order on disk stays
    the order of events; or in the transaction of the turn's outcome when the turn ends first
    (its answer: nothing is awaited between the two)."""

    def write(self, action: Callable[[SessionStore, int], object]) -> bool:
        """Run one write; a failing store is dropped (the session goes on in memory)."""
        self.write_held()
        return self.link.write(lambda store: action(store, self.session_id))

    def hold(self, unit: HeldUnit) -> None:
        self.write_held()
        self.held = unit
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop that could pause: written now
            self.write_held()
            return
        loop.call_soon(self._write_after_pauses, unit, loop, PAUSES_BEFORE_WRITE)

    def _write_after_pauses(self, unit: HeldUnit, loop: asyncio.AbstractEventLoop, pauses: int) -> None:
        """One pause of the loop has come: write `unit` if this was the last one to wait for
        (and it is still held: any other write takes it with it)."""
        if self.held is not unit:
            return
        if pauses > 1:
            loop.call_soon(self._write_after_pauses, unit, loop, pauses - 1)
            return
        self.write_held()

    def take_held(self, turn: int) -> HeldUnit | None:
        """The held unit, for the outcome of `turn` to carry; one of another turn is written
        on its own first (None)."""
        held = self.held
        if held is not None and held.turn != turn:
            self.write_held()
            return None
        self.held = None
        return held

    def write_held(self) -> None:
        held, self.held = self.held, None
        if held is not None:
            self.link.write(
                lambda store: store.append(
                    self.session_id,
                    held.messages,
                    held.turn,
                    variables=held.variables,
                    ledger=held.ledger,
                    audit=held.audit,
                )
            )


@dataclass(frozen=True)
class HeldUnit:
    """A committed unit whose write waits for the loop's second pause (SessionLog.held)."""

    messages: list[Message]
    turn: int
    variables: list[str]
    audit: list[AuditRecord]
    ledger: UsageLedger
    """The session's ledger: the usage as it stands when the unit is written."""
