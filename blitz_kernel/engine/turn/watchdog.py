"""The behavioural watchdog: a looping agent is stopped after a handful of calls.

A model that calls the same tool with the same arguments again and again is stuck; `max_turns`
would stop it only after 50 expensive steps. Loops have more shapes than one call repeated, so
the watch keeps a window of recent calls (arguments compared as parsed JSON, so key order and
spacing do not matter) and finds three:

- the same call in a row (A A A …);
- a cycle of two to four calls (A B A B …, A B C A B C …), counted in whole rounds;
- the same call with one argument moving (`read_file` of one path with `offset` 1, 2, 3 …):
  paging is sometimes real work, so this shape counts at twice the thresholds.

At `warn` the result tells the model it is repeating itself; at `stop` the call is refused and
the turn ends with stop reason `watchdog`. The window outlives the turn: a session's watch
carries into its next turn (a Run All over cells that each loop up to `max_turns` is stopped),
is kept in the store with the session (a new kernel goes on counting), and starts afresh after
a turn that ended with a normal answer or was itself stopped by it.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from ...core.history import ToolCall
from ..store.records import WatchWindow
from ..store.session import Session

Verdict = Literal["ok", "warn", "stop"]

MAX_CYCLE = 4
"""The longest cycle (in calls) the watch looks for."""
MOVING_FACTOR = 2
"""A moving-argument run counts at this many times the thresholds."""


@dataclass(frozen=True)
class Loop:
    """What the watch found: how many times, and in what shape."""

    times: int
    kind: Literal["same", "cycle", "moving"]
    detail: str = ""
    """The cycle's tools, or the moving argument's name."""

    @property
    def factor(self) -> int:
        return MOVING_FACTOR if self.kind == "moving" else 1

    def describe(self, tool: str, subject: str) -> str:
        """'<subject> called read_file 5 times in a row with the same arguments' and the like."""
        if self.kind == "cycle":
            return f"{subject} repeated a cycle of {self.detail} — {self.times} times"
        shape = "with the same arguments" if self.kind == "same" else f"with only {self.detail!r} changing"
        return f"{subject} called {tool} {self.times} times in a row {shape}"


def repeat_note(tool: str, loop: Loop) -> str:
    """What the model reads with a result once it starts repeating itself."""
    return (
        f"[watchdog] {loop.describe(tool, 'you')} and got the same kind of answer; "
        "change your approach instead of repeating the call"
    )


class RepeatWatch:
    """Finds loops in a session's recent tool calls; `observe` each call as it comes."""

    def __init__(self, warn: int, stop: int) -> None:
        self.warn = warn
        self.stop = stop
        self._recent: deque[tuple[str, str, dict[str, Any] | None]] = deque(
            maxlen=max(stop * MAX_CYCLE, stop * MOVING_FACTOR) + 1
        )
        self.count = 0
        """How many times the latest call repeats a loop (0: none)."""
        self.found: Loop | None = None
        """The loop the latest call belongs to, if any."""

    def fits(self, warn: int, stop: int) -> bool:
        """Whether this watch counts with these thresholds (a changed setting starts afresh)."""
        return (self.warn, self.stop) == (warn, stop)

    def window(self) -> WatchWindow:
        """The recent calls as the store keeps them between turns."""
        return WatchWindow(
            warn=self.warn, stop=self.stop, calls=[(name, canonical) for name, canonical, _ in self._recent]
        )

    @classmethod
    def from_window(cls, window: WatchWindow) -> RepeatWatch:
        """The watch a stored window describes (the arguments are parsed again)."""
        watch = cls(window.warn, window.stop)
        watch._recent.extend((name, canonical, _parsed(canonical)) for name, canonical in window.calls)
        return watch

    def reset(self) -> None:
        self._recent.clear()
        self.count, self.found = 0, None

    def observe(self, call: ToolCall) -> Verdict:
        parsed = _parsed(call.arguments)
        canonical = json.dumps(parsed, sort_keys=True) if parsed is not None else call.arguments
        self._recent.append((call.name, canonical, parsed))
        found = self._strongest()
        self.found = found
        self.count = found.times if found is not None else 0
        if found is None:
            return "ok"
        if found.times >= self.stop * found.factor:
            return "stop"
        return "warn" if found.times >= self.warn * found.factor else "ok"

    def _strongest(self) -> Loop | None:
        """The loop the latest call continues, measured against its own thresholds."""
        keys = [(name, canonical) for name, canonical, _ in self._recent]
        loops = [loop for loop in (_same(keys), _cycle(keys), self._moving()) if loop is not None]
        if not loops:
            return None
        return max(loops, key=lambda loop: loop.times / loop.factor)

    def _moving(self) -> Loop | None:
        """Consecutive calls of one tool whose arguments differ in one key, the same each time."""
        recent = list(self._recent)
        moving: str | None = None
        run = 1
        for newer, older in zip(reversed(recent), list(reversed(recent))[1:], strict=False):
            key = _one_changed(older, newer)
            if key is None or (moving is not None and key != moving):
                break
            moving, run = key, run + 1
        return Loop(run, "moving", moving) if moving is not None else None


def _same(keys: list[tuple[str, str]]) -> Loop | None:
    run = 1
    while run < len(keys) and keys[-run - 1] == keys[-1]:
        run += 1
    return Loop(run, "same") if run > 1 else None


def _cycle(keys: list[tuple[str, str]]) -> Loop | None:
    best: Loop | None = None
    for period in range(2, MAX_CYCLE + 1):
        if len(set(keys[-period:])) < 2:
            continue  # one call repeated: `_same` counts it
        follows = 0  # calls that repeat the call `period` before them
        while follows + period < len(keys) and keys[-1 - follows] == keys[-1 - follows - period]:
            follows += 1
        rounds = (follows + period) // period
        if rounds > 1 and (best is None or rounds > best.times):
            names = ", ".join(dict.fromkeys(name for name, _ in keys[-period:]))
            best = Loop(rounds, "cycle", f"{period} calls: {names}")
    return best


def session_watch(session: Session, warn: int, stop: int) -> RepeatWatch:
    """The session's watch, carried over from its previous turn (or from the window the store
    kept, in a new kernel); a new one when the thresholds changed or there is none yet."""
    watch = session.watch
    if isinstance(watch, WatchWindow):
        watch = session.watch = RepeatWatch.from_window(watch)
    if not isinstance(watch, RepeatWatch) or not watch.fits(warn, stop):
        watch = session.watch = RepeatWatch(warn, stop)
    return watch


def _one_changed(
    older: tuple[str, str, dict[str, Any] | None], newer: tuple[str, str, dict[str, Any] | None]
) -> str | None:
    """The one argument two calls of the same tool differ in, or None."""
    if older[0] != newer[0] or older[2] is None or newer[2] is None or older[2].keys() != newer[2].keys():
        return None
    changed = [key for key in newer[2] if newer[2][key] != older[2][key]]
    return changed[0] if len(changed) == 1 else None


def _parsed(arguments: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
