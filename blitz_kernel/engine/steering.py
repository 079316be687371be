"""Steering and stopping a running turn.

The front end talks to a running turn only through its TurnControl: queue a steer message,
ask for a graceful stop. The loop takes the queue when it builds the next tool result.
"""

from __future__ import annotations

import asyncio

from ..errors import SteerTooLateError


class TurnControl:
    """Shared between a running turn and whoever may steer or stop it."""

    def __init__(self, parent: TurnControl | None = None) -> None:
        self._parent = parent
        self._queue: list[str] = []
        self._closed = False
        self._stop_requested = False
        self.charged_usd = 0.0
        """Cost of side questions answered while this turn runs (they count toward its
        `--max-cost`)."""
        self._stopped: asyncio.Event | None = None
        self._children: list[TurnControl] = []
        if parent is not None and parent.stop_requested:
            self._stop_requested = True

    def steer(self, text: str) -> None:
        """Queue `text`; once the turn has collected its leftovers nothing would carry it, so
        it is refused (SteerTooLateError) and the front end sends it as a prompt."""
        if self._closed:
            raise SteerTooLateError("the turn is ending; send it as the next prompt")
        self._queue.append(text)

    def take_messages(self) -> list[str]:
        """Everything queued so far, emptying the queue."""
        messages, self._queue = self._queue, []
        return messages

    def take_leftovers(self) -> list[str]:
        """Messages no tool result carried: the front end sends them as the next
        prompt. Closes the queue, so a steer that arrives later is refused, not lost."""
        self._closed = True
        return self.take_messages()

    def child(self) -> TurnControl:
        """The control of a sub-agent's turn: it stops when this one does, and it has
        its own steer queue (steer messages belong to the caller's turn)."""
        child = TurnControl(parent=self)
        self._children.append(child)
        return child

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def request_stop(self) -> None:
        """Graceful stop: the turn ends after the current step; a pending permission request
        is answered as denied at once (nobody will click it now). Sub-agents stop too."""
        self._stop_requested = True
        if self._stopped is not None:
            self._stopped.set()
        for child in self._children:
            child.request_stop()

    async def wait_for_stop(self) -> None:
        """Returns when a stop is requested (the approval gate races it)."""
        if self._stopped is None:
            self._stopped = asyncio.Event()
        if self.stop_requested:
            self._stopped.set()
        await self._stopped.wait()
