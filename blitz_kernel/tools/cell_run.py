"""Running one notebook cell's source for `notebook_run`, the way a user's run would.

The code runs exactly as `run_python`'s does (run_python.py: on the kernel's main thread,
inside the turn, with ■ and the time limit of signals.py), but what it produces is kept as
nbformat outputs, in order, instead of being published to the running `%%blitz` cell: stdout
and stderr become `stream` outputs, `display()` and matplotlib figures `display_data`, the last
expression an `execute_result` with the cell's execution count, an exception an `error` with
its traceback. The caller puts those outputs into the cell (notebook_run.py).

What needs IPython (its input transformers for `%magics` and `!commands`, rich reprs,
coloured tracebacks, the execution counter and the history of inputs) comes from the kernel
context's optional `CellHost` methods; without them (unit tests, a plain interpreter) the
source runs as plain Python and values show as their repr.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol, runtime_checkable

from . import signals
from .images import FigureCapture
from .run_python import TextSink, compile_source, deliver_pending_interrupts, format_error, run_numbers
from .signals import RunState, UserCodeTimeout, interruptible

__all__ = ["CellHost", "CellRun", "DisplaySink", "OutputCollector", "cell_host", "run_cell_source"]

MAX_STREAM_CHARS = 100_000
"""What one cell keeps of its stdout and stderr together (a runaway loop must not fill the notebook)."""


class DisplaySink(Protocol):
    """Where a cell's displays go: the bundle, its metadata, its display id and whether it
    updates the earlier displays of that id."""

    def __call__(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        display_id: str | None = None,
        update: bool = False,
    ) -> None: ...


@runtime_checkable
class CellHost(Protocol):
    """Optional methods of a KernelContext that can run code as a notebook cell."""

    def transform_source(self, source: str) -> str:
        """The cell's source as the shell would run it (`%magic`, `!command` made Python)."""
        ...

    def cell_displays(self, sink: DisplaySink, clear: Callable[[], None]) -> AbstractContextManager[None]:
        """While open, every displayed MIME bundle goes to `sink` (and `clear_output()` to
        `clear`) instead of the running cell's output."""
        ...

    def rich_result(self, value: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """A value's MIME bundle and metadata, as the shell would show it as Out[n]."""
        ...

    def error_lines(self, error: BaseException) -> list[str]:
        """The traceback as the shell shows it (its lines, with terminal colours)."""
        ...

    def take_execution_count(self, source: str, cell_id: str | None = None) -> int:
        """The next execution count, taken (the source goes into the input history as In[n],
        run by cell `cell_id`)."""
        ...

    def executed_cell(self, count: int) -> tuple[str | None, str] | None:
        """(the id of the notebook cell that ran it, when known; the source) of In[count] in
        this kernel; None when this kernel did not run it."""
        ...


def cell_host(kernel: object) -> CellHost | None:
    return kernel if isinstance(kernel, CellHost) else None


class OutputCollector:
    """The cell's outputs in the order they were made, as nbformat 4 dictionaries."""

    def __init__(self) -> None:
        self.outputs: list[dict[str, Any]] = []
        self.bundles: list[dict[str, Any]] = []
        """Every displayed bundle (FigureCapture reads the images among them)."""
        self._stream_chars = 0
        self._cut = 0
        self._by_id: dict[str, list[dict[str, Any]]] = {}

    def write(self, name: str, text: str) -> None:
        room = MAX_STREAM_CHARS - self._stream_chars
        if room <= 0:
            self._cut += len(text)
            return
        if len(text) > room:
            self._cut += len(text) - room
            text = text[:room]
        self._stream_chars += len(text)
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": text})

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        display_id: str | None = None,
        update: bool = False,
    ) -> None:
        """A displayed bundle; with `update`, it replaces what earlier displays of that
        `display_id` show (progress bars, `display_handle.update`)."""
        self.bundles.append(dict(data))
        if update:
            for shown in self._by_id.get(display_id or "", []):
                shown.update(data=dict(data), metadata=dict(metadata or {}))
            return
        output = {"output_type": "display_data", "data": dict(data), "metadata": dict(metadata or {})}
        self.outputs.append(output)
        if display_id:
            self._by_id.setdefault(display_id, []).append(output)

    def clear(self) -> None:
        """`clear_output()` in the cell."""
        self.outputs.clear()

    def finish(self) -> None:
        if self._cut:
            self.outputs.append(
                {"output_type": "stream", "name": "stderr", "text": f"\n[... {self._cut} more characters cut]\n"}
            )
            self._cut = 0


class _Stream(TextSink):
    """sys.stdout / sys.stderr while the cell runs: text goes into the collector, in order."""

    def __init__(self, collector: OutputCollector, name: str) -> None:
        super().__init__()
        self._collector, self._name = collector, name

    def take(self, text: str) -> None:
        self._collector.write(self._name, text)


class _FigureSink:
    """FigureCapture's display: figures the code left open become display_data outputs."""

    def __init__(self, collector: OutputCollector) -> None:
        self._collector = collector

    def show_image(self, data: bytes, media_type: str, label: str) -> None:
        self._collector.display({media_type: base64.b64encode(data).decode("ascii"), "text/plain": label})

    @contextlib.contextmanager
    def capture_displays(self) -> Iterator[list[dict[str, Any]]]:
        start = len(self._collector.bundles)
        shown: list[dict[str, Any]] = []
        try:
            yield shown
        finally:
            shown.extend(self._collector.bundles[start:])


@dataclasses.dataclass
class CellRun:
    """What one run of a cell produced."""

    outputs: list[dict[str, Any]]
    execution_count: int | None
    error: str | None = None
    """'NameError: name 'x' is not defined' (None: the cell ran through)."""
    failing_line: str | None = None
    """'line 3: print(x)', the cell's own line where the error was raised."""
    traceback_text: str = ""
    interrupted: bool = False
    timed_out: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)
    images: list[tuple[bytes, str]] = dataclasses.field(default_factory=list)
    """The PNGs the cell displayed or drew (for the model's eyes, when it has them)."""


async def run_cell_source(
    source: str,
    ns: dict[str, Any],
    host: CellHost | None,
    timeout_s: float | None,
    before_exec: Callable[[], None] | None = None,
    cell_id: str | None = None,
) -> CellRun:
    """Run `source` in `ns` as notebook cell `cell_id`; never raises for what the code did."""
    count = host.take_execution_count(source, cell_id) if host is not None else None
    collector = OutputCollector()
    filename = f"<cell-{next(run_numbers)}>"
    state = RunState()
    run = CellRun(outputs=collector.outputs, execution_count=count)
    try:
        code = host.transform_source(source) if host is not None else source
        compiled = compile_source(code, filename)
    except SyntaxError as error:
        _record_error(run, collector, host, error, filename, timeout_s, code_lines=source)
        return run
    capture = FigureCapture(_FigureSink(collector))
    displays = host.cell_displays(collector.display, collector.clear) if host is not None else contextlib.nullcontext()
    value: Any = None
    with capture.running(), displays, interruptible(state, timeout_s) as has_signals:
        await deliver_pending_interrupts()
        if before_exec is not None:  # after the last await: no other call's code runs between
            before_exec()
        try:
            with (
                contextlib.redirect_stdout(_Stream(collector, "stdout")),
                contextlib.redirect_stderr(_Stream(collector, "stderr")),
            ):
                try:
                    state.in_user_code = True
                    if state.interrupted:
                        raise KeyboardInterrupt
                    exec(compiled.body, ns)
                    if compiled.last_expression is not None:
                        value = eval(compiled.last_expression, ns)
                    if value is not None:  # its reprs are the user's code too: time-limited
                        data, metadata = (
                            host.rich_result(value) if host is not None else ({"text/plain": repr(value)}, {})
                        )
                        result = {"output_type": "execute_result", "execution_count": count}
                        collector.outputs.append({**result, "data": data, "metadata": metadata})
                finally:
                    state.in_user_code = False
        except BaseException as error:  # user code may raise anything, SystemExit included
            _record_error(run, collector, host, error, filename, timeout_s, code_lines=code)
    collector.finish()
    run.interrupted, run.timed_out = state.interrupted, state.timed_out
    run.images = capture.images
    if timeout_s and not has_signals:
        run.notes.append("[the time limit was not enforced: not running on the main thread]")
    return run


def _record_error(
    run: CellRun,
    collector: OutputCollector,
    host: CellHost | None,
    error: BaseException,
    filename: str,
    timeout_s: float | None,
    code_lines: str,
) -> None:
    if isinstance(error, UserCodeTimeout):
        ename = "TimeoutError"
        evalue = (
            f"the cell ran past its time limit ({timeout_s:g} s: the call's timeout_s or what was "
            "left of the turn's --timeout) and was stopped; variables assigned before keep their values"
        )
        lines = [f"{ename}: {evalue}"]
    else:
        ename, evalue = type(error).__name__, str(error)
        lines = host.error_lines(error) if host is not None else []
        if not lines:
            lines = format_error(error, filename, timeout_s).splitlines()
    collector.outputs.append({"output_type": "error", "ename": ename, "evalue": evalue, "traceback": lines})
    run.error = f"{ename}: {evalue}" if evalue else ename
    run.traceback_text = (
        f"{ename}: {evalue}" if isinstance(error, UserCodeTimeout) else format_error(error, filename, timeout_s)
    )
    run.failing_line = _failing_line(error, filename, code_lines)


def _failing_line(error: BaseException, filename: str, source: str) -> str | None:
    """The cell's own line where `error` was raised (its deepest frame in the cell)."""
    number = None
    if isinstance(error, SyntaxError) and error.lineno is not None:
        number = error.lineno
    else:
        for frame in traceback.extract_tb(error.__traceback__):
            if frame.filename == filename:
                number = frame.lineno
            elif frame.filename == signals.__file__:
                break
    lines = source.splitlines()
    if number is None or not 1 <= number <= len(lines):
        return None
    return f"line {number}: {lines[number - 1].strip()}"
