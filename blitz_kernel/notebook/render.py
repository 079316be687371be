"""Plain rendering of a turn into a cell (no widget front end: nbclient, papermill, terminal
IPython, or `--plain`).

Text streams into one Markdown display per step, updated in place at most ~10 times a
second (not thousands of outputs); each tool call and result is one concise line; a usage
line closes the turn. The Markdown displays are the persistent output a saved notebook shows.

The presenter reads the same TurnState the widget shows (the cell folds each event into it
first) and words its lines with `lines.py`, like the static rendering: one set of wordings.
Model text goes through `escape_html` first: JupyterLab renders raw HTML inside a kernel's
Markdown output (scripts and event handlers included), and model text may repeat whatever a
file or web page the agent read told it to write.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, assert_never

from ..core.text import one_line
from ..engine.events import (
    CompactionEvent,
    ErrorEvent,
    Event,
    ModelSwitchEvent,
    NoticeEvent,
    PermissionDecision,
    PermissionRequest,
    PlanEvent,
    ProgressEvent,
    SteerEvent,
    SubagentEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
    UsageEvent,
)
from .lines import (
    RESULT_CHARS,
    args_line,
    call_line,
    chip_line,
    compaction_detail,
    plan_heading_with_reason,
    result_text,
    switch_line,
    thought_line,
    usage_line,
)
from .markdown import escape_html

if TYPE_CHECKING:
    from ..engine.turn.options import EventHandler
    from ..engine.turn.setup import TurnResult
    from .widgets.state import Item, PlanItem, TurnState

UPDATE_INTERVAL_S = 0.1
_STORE_PROBLEMS_SHOWN: set[str] = set()
"""Why sessions are not being saved, said once per kernel; each usage line then says it short."""
GO_AHEAD = "*To carry it out, run a `%%blitz` cell such as “Carry out the plan.”*"


class CellOutput(Protocol):
    """Where plain outputs go: the cell (IPython's display and stdout), or a test's record."""

    def line(self, text: str) -> None:
        """One line of plain text (stdout)."""

    def markdown(self, text: str, metadata: dict[str, Any] | None = None, *, updatable: bool = True) -> Any:
        """Show Markdown; returns a handle for `update` (None when it cannot be updated)."""

    def update(self, handle: Any, text: str, metadata: dict[str, Any] | None = None) -> None:
        """Replace what `handle` shows."""


class IPythonOutput:
    """The cell's own outputs."""

    def line(self, text: str) -> None:
        print(text, flush=True)

    def markdown(self, text: str, metadata: dict[str, Any] | None = None, *, updatable: bool = True) -> Any:
        from IPython.display import Markdown, display

        return display(Markdown(text), metadata=metadata, display_id=True if updatable else None)

    def update(self, handle: Any, text: str, metadata: dict[str, Any] | None = None) -> None:
        from IPython.display import Markdown

        handle.update(Markdown(text), metadata=metadata)


class PlainPresenter:
    """Shows a turn as plain outputs. The cell folds each event into `state`, then calls
    `on_event`; `catch_up` shows what the state already holds (a turn that ran unseen while
    the front end was being asked)."""

    def __init__(
        self,
        state: TurnState,
        *,
        header: str | None = None,
        output: CellOutput | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = state
        self._header = header
        self._output: CellOutput = output or IPythonOutput()
        self._clock = clock
        self._rendered = 0
        """How many of the state's items are shown."""
        self._live: Any = None
        """The display of the step's text while it streams (None before its first piece)."""
        self._last_update = float("-inf")
        self._last_shown: tuple[Any, str] | None = None
        """The last text display and its Markdown: where the turn record goes."""

    # -- the Presenter interface -------------------------------------------------------------

    def catch_up(self) -> None:
        """Show everything the state holds so far, as the events would have."""
        state = self.state
        if state.model:
            self._head()
        self._new_items(with_results=True)
        for notice in state.notices:
            self._output.line(f"⚠ {notice}")
        self._show_live(force=True)
        if state.done_seen:
            self._output.line(usage_line(state))

    def on_event(self, event: Event) -> None:
        """Show what `event` (already folded into the state) changed."""
        match event:
            case TurnStarted():
                self._head()
            case ToolResultEvent():
                self._new_items()
                self._show_result(event.id)
            case NoticeEvent():
                self._output.line(f"⚠ {event.message}")
            case ProgressEvent():
                self._output.line(event.message)
            case ErrorEvent():
                pass  # the turn's failure is said with turn_done
            case ModelSwitchEvent():
                self._output.line(switch_line(event))
            case SubagentEvent():
                self._show_subagent(event)
            case TurnDone():
                self._new_items()
                if event.not_saved and event.not_saved not in _STORE_PROBLEMS_SHOWN:  # the reason once
                    _STORE_PROBLEMS_SHOWN.add(event.not_saved)
                    self._output.line(f"⚠ {event.not_saved}")
                self._output.line(usage_line(self.state))
            case (
                TextEvent()
                | ToolCallEvent()
                | PlanEvent()
                | CompactionEvent()
                | PermissionRequest()
                | PermissionDecision()
                | SteerEvent()
                | UsageEvent()
            ):
                self._new_items()
                self._show_live(force=False)
            case _:
                assert_never(event)

    def hold(self, event: Event) -> None:
        """Nothing to wait for: nobody can click plain output."""
        return None

    @property
    def continue_requested(self) -> bool:
        """Nobody can press Continue in plain output: a step limit fails the cell, as always."""
        return False

    async def finish(self, result: TurnResult) -> list[str]:
        from .widgets.static import turn_record

        self._attach_record(turn_record(self.state, result.text), result.stop_reason)
        return self.state.follow_up(result)

    def abandon(self) -> None:
        """What was shown stays (plain outputs are already what a saved notebook keeps)."""

    # -- rendering ---------------------------------------------------------------------------

    def _head(self) -> None:
        if self._header:
            self._output.line(self._header)
        for chip in self.state.attachments:
            self._output.line(chip_line(chip))

    def _new_items(self, *, with_results: bool = False) -> None:
        """Show the items the state gained since the last call, in order."""
        items = self.state.items
        while self._rendered < len(items):
            item = items[self._rendered]
            self._rendered += 1
            self._show_item(item)
            # a call the turn's end cut short has no result to show (no result event came)
            if with_results and item["kind"] == "tool" and (item["status"] == "done" or item["error"] is not None):
                self._show_result(item["id"])

    def _show_item(self, item: Item) -> None:
        if item["kind"] == "text":
            self._end_text(item["text"])
        elif item["kind"] == "tool":
            self._live = None
            self._output.line(call_line(item))
        elif item["kind"] == "plan":
            self._live = None
            self._show_plan(item)
        elif item["kind"] == "compaction":
            detail = compaction_detail(item["tokens_before"], item["tokens_after"])
            self._output.line(f"{item['line']}: {detail}")
        elif item["kind"] == "thought":  # one line, never the text (the widget shows it collapsed)
            self._output.line(thought_line(item["text"]))
        # an error ends the cell as a one-line message instead (magics.TurnFailedError)

    def _show_subagent(self, event: SubagentEvent) -> None:
        """Sub-agents in plain mode: a sub-agent's calls, results and answer, indented under the
        call that started it (two spaces a level)."""
        wrapper = event
        while isinstance(wrapper.event, SubagentEvent):
            wrapper = wrapper.event
        inner, indent = wrapper.event, "  " * wrapper.depth
        if isinstance(inner, ToolCallEvent):
            self._output.line(f"{indent}⚙ {inner.name}({args_line(inner.args)})")
        elif isinstance(inner, ToolResultEvent):
            body = inner.preview if inner.status == "ok" else f"{inner.status}: {inner.error}"
            self._output.line(f"{indent}  ↳ {inner.name}: {one_line(body or '(no output)', RESULT_CHARS)}")
        elif isinstance(inner, TextEvent) and inner.repeat and not inner.thought:
            self._output.line(f"{indent}» {wrapper.agent}: {one_line(inner.text, RESULT_CHARS)}")

    def _show_result(self, call_id: str) -> None:
        tool = self.state.tool(call_id)
        if tool is not None:
            self._output.line(f"  ↳ {tool['name']}: {result_text(tool)}")

    def _show_plan(self, item: PlanItem) -> None:
        """A proposed plan in plain mode: the plan as Markdown (it is the turn's answer, so the
        record goes on it), and how to go ahead. Nobody reviews a plan here, so it is unreviewed;
        a reviewed one says what became of it in the static rendering's words."""
        if item["status"] == "unreviewed":
            note = GO_AHEAD
        else:
            heading = escape_html(plan_heading_with_reason(item["status"], item["reason"]))
            note = f"*{heading}.*" + (f" {GO_AHEAD}" if item["status"] == "rejected" else "")
        text = f"### Proposed plan\n\n{escape_html(item['plan'])}\n\n{note}"
        handle = self._output.markdown(text)
        if handle is not None:
            self._last_shown = (handle, text)

    def _show_live(self, *, force: bool) -> None:
        """The step's text so far, at most every UPDATE_INTERVAL_S unless forced."""
        text = self.state.live_text
        if not text:
            return
        now = self._clock()
        if not force and now - self._last_update < UPDATE_INTERVAL_S:
            return
        self._last_update = now
        self._put(escape_html(text))

    def _end_text(self, text: str) -> None:
        """A step's text is complete (the engine repeats the exact text): its display shows all."""
        self._put(escape_html(text))
        self._live = None

    def _put(self, shown: str) -> None:
        if self._live is None:
            self._live = self._output.markdown(shown)
        else:
            self._output.update(self._live, shown)
        if self._live is not None:
            self._last_shown = (self._live, shown)

    def _attach_record(self, record: dict[str, Any], stop_reason: str) -> None:
        """Put the turn record in the output metadata under `blitz`, on the last text display
        (the answer; the Markdown it shows, already escaped), so a saved notebook keeps it;
        with no text, on a one-line summary."""
        metadata = {"blitz": record}
        if self._last_shown is not None:
            handle, text = self._last_shown
            self._output.update(handle, text, metadata)
        else:
            self._output.markdown(f"*(no answer: {stop_reason})*", metadata, updatable=False)


def plain_event_handler(state: TurnState, header: str | None = None) -> EventHandler:
    """An engine event handler that shows a turn as plain outputs (`%blitz_btw`)."""
    presenter = PlainPresenter(state, header=header)

    def handle(event: Event) -> None:
        state.apply(event)
        presenter.on_event(event)

    return handle
