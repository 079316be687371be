"""Plain rendering of turn events into a cell (no widget front end: nbclient, papermill,
terminal IPython, or `--plain`).

Text streams into one Markdown display per step, updated in place at most ~10 times a
second (not thousands of outputs); each tool call and result is one concise line; a usage
line closes the turn. The Markdown displays are the persistent output a saved notebook shows.
Model text goes through `escape_html` first: JupyterLab renders raw HTML inside a kernel's
Markdown output (scripts and event handlers included), and model text may repeat whatever a
file or web page the agent read told it to write.
"""

from __future__ import annotations

import json
import time
from typing import Any

from IPython.display import DisplayHandle, Markdown, display

from ..engine.events import (
    CompactionEvent,
    ErrorEvent,
    PlanEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
)
from .markdown import escape_html

UPDATE_INTERVAL_S = 0.1
ARGS_CHARS = 100
RESULT_CHARS = 120


class PlainRenderer:
    """Turns a turn's events into plain outputs; call `handle(event)` for each."""

    def __init__(self, header: str | None = None, started: float | None = None) -> None:
        self._header = header
        self._text = ""
        self._handle: DisplayHandle | None = None
        self._last_update = 0.0
        self._started = time.monotonic() if started is None else started
        """When the turn started (time.monotonic), for the elapsed time in the usage line."""
        self._model = ""
        self._last_shown: tuple[DisplayHandle, str] | None = None
        """The last text display and its text: where `attach_record` puts the turn record."""

    def handle(self, event: Any) -> None:
        if isinstance(event, TurnStarted):
            self._model = event.model
            if self._header:
                print(self._header, flush=True)
            for chip in event.attachments:
                print(f"📎 {chip.kind} @{chip.name} ({chip.size:,} {'bytes' if chip.kind == 'figure' else 'chars'})", flush=True)
        elif isinstance(event, PlanEvent):
            self._end_text()
            self._show_plan(event)
        elif isinstance(event, CompactionEvent):
            print(
                f"⟲ compacted {event.covered_events} earlier event(s) into a summary: "
                f"prompt ≈{event.tokens_before:,} → ≈{event.tokens_after:,} tokens",
                flush=True,
            )
        elif isinstance(event, TextEvent):
            self._on_text(event)
        elif isinstance(event, ToolCallEvent):
            self._end_text()
            print(f"⚙ {event.name}({_short_args(event.args)})", flush=True)
        elif isinstance(event, ToolResultEvent):
            print(f"  ↳ {event.name}: {_result_line(event)}", flush=True)
        elif isinstance(event, ErrorEvent) and event.kind == "unpriced":
            print(f"⚠ {event.message}", flush=True)
        elif isinstance(event, TurnDone):
            self._end_text()
            print(self.usage_line(event), flush=True)

    def usage_line(self, done: TurnDone) -> str:
        elapsed = time.monotonic() - self._started
        return f"— {self._model} · {done.usage.describe()} · {elapsed:.1f} s · {done.stop_reason}"

    def _show_plan(self, event: PlanEvent) -> None:
        """ENG-32 in plain mode: the plan as Markdown (it is the turn's answer, so the record
        goes on it), and how to go ahead."""
        go_ahead = "*To carry it out, run a `%%blitz` cell such as “Carry out the plan.”*"
        if event.status == "approved":
            note = "*Approved — carrying it out next.*"
        elif event.status == "rejected":
            note = f"*Not approved: {escape_html(event.reason or 'no reason given')}.* {go_ahead}"
        else:
            note = go_ahead
        text = f"### Proposed plan\n\n{escape_html(event.plan)}\n\n{note}"
        handle = display(Markdown(text), display_id=True)
        if handle is not None:
            self._last_shown = (handle, text)

    def _on_text(self, event: TextEvent) -> None:
        if event.thought:
            return  # reasoning stays out of the plain output; the widget shows it collapsed
        if event.repeat:
            self._text = event.text  # ENG-13: the exact final text of the step
            self._show(force=True)
            self._text, self._handle = "", None
            return
        self._text += event.text
        self._show(force=False)

    def _show(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._last_update < UPDATE_INTERVAL_S:
            return
        self._last_update = now
        shown = escape_html(self._text)
        if self._handle is None:
            self._handle = display(Markdown(shown), display_id=True)
        else:
            self._handle.update(Markdown(shown))
        if self._handle is not None:
            self._last_shown = (self._handle, shown)

    def _end_text(self) -> None:
        if self._handle is not None and self._text:
            shown = escape_html(self._text)
            self._handle.update(Markdown(shown))
            self._last_shown = (self._handle, shown)
        self._text, self._handle = "", None

    def attach_record(self, record: dict[str, Any], stop_reason: str) -> None:
        """Put the turn record in the output metadata under `blitz`, on the last text display
        (the answer; the Markdown it shows, already escaped), so a saved notebook keeps it;
        with no text, on a one-line summary."""
        metadata = {"blitz": record}
        if self._last_shown is not None:
            handle, text = self._last_shown
            handle.update(Markdown(text), metadata=metadata)
        else:
            display(Markdown(f"*(no answer: {stop_reason})*"), metadata=metadata)


def _short_args(args: dict[str, Any]) -> str:
    text = ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in args.items())
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 1] + "…"


def _result_line(event: ToolResultEvent) -> str:
    body = f"error: {event.error}" if not event.ok else (event.preview or "(no output)")
    first = " ".join(body.split())
    return first if len(first) <= RESULT_CHARS else first[: RESULT_CHARS - 1] + "…"
