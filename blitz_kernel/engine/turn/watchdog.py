"""The behavioural watchdog: a looping agent is stopped after a handful of calls.

A model that calls the same tool with the same arguments again and again is stuck; `max_turns`
would stop it only after 50 expensive steps. The watch counts identical consecutive calls
across the turn (arguments compared as parsed JSON, so key order and spacing do not matter).
At `warn` the result tells the model it is repeating itself; at `stop` the call is refused
and the turn ends with stop reason `watchdog`.
"""

from __future__ import annotations

import json
from typing import Literal

from ...core.history import ToolCall

Verdict = Literal["ok", "warn", "stop"]


def repeat_note(tool: str, times: int) -> str:
    """What the model reads with a result once it starts repeating itself."""
    return (
        f"[watchdog] you called {tool} {times} times in a row with the same arguments and got the "
        "same kind of answer; change your approach instead of repeating the call"
    )


class RepeatWatch:
    """Counts identical consecutive tool calls over one turn."""

    def __init__(self, warn: int, stop: int) -> None:
        self.warn = warn
        self.stop = stop
        self._last: tuple[str, str] | None = None
        self.count = 0

    def observe(self, call: ToolCall) -> Verdict:
        key = (call.name, _canonical(call.arguments))
        self.count = self.count + 1 if key == self._last else 1
        self._last = key
        if self.count >= self.stop:
            return "stop"
        return "warn" if self.count >= self.warn else "ok"


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except json.JSONDecodeError:
        return arguments
