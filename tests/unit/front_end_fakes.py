"""Fakes for the notebook front end's environment boundary: time, the probe comm, and the
cell's outputs. The code under test takes them as arguments (no patching)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Timer:
    delay: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when told, and timers that fire only when told."""

    def __init__(self) -> None:
        self.time = 1000.0
        self.timers: list[Timer] = []

    def now(self) -> float:
        return self.time

    def advance(self, seconds: float) -> None:
        self.time += seconds

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(delay, callback)
        self.timers.append(timer)
        return timer

    @property
    def armed(self) -> list[tuple[float, Callable[[], None]]]:
        """Timers neither fired nor cancelled: (delay, callback)."""
        return [(t.delay, t.callback) for t in self.timers if not t.cancelled]

    def fire(self) -> None:
        """Run every armed timer (once)."""
        for timer in [t for t in self.timers if not t.cancelled]:
            timer.cancelled = True
            timer.callback()


@dataclass
class FakeProbeComm:
    """The probe comm as a front end would treat it: `front_end_closes` is JupyterLab's answer."""

    data: dict[str, Any]
    on_closed: Callable[[], None]
    closed: bool = False

    def close(self) -> None:
        self.closed = True

    def front_end_closes(self) -> None:
        self.closed = True
        self.on_closed()


@dataclass
class CommOpener:
    """Opens FakeProbeComms (or fails, like a shell without comm machinery); `answer` makes
    the front end close each one at once, as JupyterLab does within milliseconds."""

    fail: bool = False
    answer: bool = False
    opened: list[FakeProbeComm] = field(default_factory=list)

    def __call__(self, data: dict[str, Any], on_closed: Callable[[], None]) -> FakeProbeComm:
        if self.fail:
            raise RuntimeError("no comm machinery")
        comm = FakeProbeComm(data, on_closed)
        self.opened.append(comm)
        if self.answer:
            comm.front_end_closes()
        return comm


@dataclass
class Shown:
    """One Markdown display: what it shows now, and its metadata."""

    text: str
    metadata: dict[str, Any] | None
    updates: int = 0


class RecordingOutput:
    """A cell's outputs, in order: ("line", text) and ("markdown", Shown) entries."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, Any]] = []

    def line(self, text: str) -> None:
        self.entries.append(("line", text))

    def markdown(self, text: str, metadata: dict[str, Any] | None = None, *, updatable: bool = True) -> Any:
        shown = Shown(text, metadata)
        self.entries.append(("markdown", shown))
        return shown if updatable else None

    def update(self, handle: Any, text: str, metadata: dict[str, Any] | None = None) -> None:
        handle.text, handle.metadata = text, metadata
        handle.updates += 1

    def rendered(self) -> list[str]:
        """What the cell shows, one string per output (Markdown as it ended)."""
        return [value if kind == "line" else value.text for kind, value in self.entries]
