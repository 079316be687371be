"""Events redacted on their way out: what a front end shows, the notebook stores in a cell's
output and metadata, and a turn result carries never holds a secret (docs/safety.md).

Streamed text comes in pieces, and a secret can be cut across two of them, so each stream
(the answer, the thinking) goes through its own StreamRedactor; any other event first lets
go of what the streams hold, so the order of what is shown stays the order of what came.
"""

from __future__ import annotations

from ...core.redact import Redactor, StreamRedactor
from ..events import Event, TextEvent


class OutgoingEvents:
    """One turn's events, redacted in order."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._streams: dict[bool, StreamRedactor] = {}

    def redacted(self, event: Event) -> list[Event]:
        """What to send for `event`: nothing while a streamed piece is held back, the held
        text before any other event."""
        if isinstance(event, TextEvent) and event.delta:
            stream = self._streams.get(event.thought)
            if stream is None:
                stream = self._streams[event.thought] = self._redactor.stream()
            text = stream.feed(event.text)
            if not text:
                return []
            if text == event.text:
                return [event]
            return [TextEvent(text=text, delta=True, thought=event.thought, repeat=event.repeat)]
        return [*self.flush(), self._redactor.redact_value(event)]

    def flush(self) -> list[Event]:
        """The text the streams hold, as deltas (the stream ended or was cut)."""
        held: list[Event] = []
        for thought, stream in self._streams.items():
            text = stream.flush()
            if text:
                held.append(TextEvent(text=text, delta=True, thought=thought))
        return held
