"""run_python: run the model's Python code in the user's namespace, like a notebook cell.

`run_python` executes on the calling thread, which in a notebook is the kernel's main thread
(the turn runs as an async cell on the kernel's event loop). The code runs synchronously: no
await, so nothing else on the loop runs meanwhile, which is what makes swapping `sys.stdout`
and the signal handlers for the duration safe.

Interrupts (■) and timeouts: see signals.py.

Nothing here imports IPython: the namespace arrives through `ToolContext.kernel.user_ns`.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import io
import itertools
import linecache
import math
import time
import traceback
import types
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from ..core.tools import ToolPresentation
from . import signals
from .images import FigureCapture, display_of, keep_figures, png_part
from .registry import Tool, ToolContext, ToolError, ToolKind, ToolOutput, change_recorder, tool
from .signals import MAX_TIMEOUT_S, RunState, UserCodeTimeout, interruptible

__all__ = [
    "RUN_PYTHON_TOOLS",
    "cap_text",
    "compile_source",
    "deliver_pending_interrupts",
    "effective_timeout",
    "format_error",
    "one_at_a_time",
    "run_python",
    "user_namespace",
]

MAX_SECTION_CHARS = 20_000


def user_namespace(ctx: ToolContext, tool_name: str) -> dict[str, Any]:
    if ctx.kernel is None:
        raise ToolError(f"{tool_name} needs a running kernel (use it from a notebook or IPython, not a plain script)")
    return ctx.kernel.user_ns


def cap_text(text: str, limit: int = MAX_SECTION_CHARS) -> str:
    """Keep the start and the end of a long text (the end of a log is often what matters)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} more characters cut]\n{text[-half:]}"


class TextSink(io.TextIOBase):
    """A stand-in for sys.stdout / sys.stderr while user code runs: a text stream that is not
    a terminal and hands each written text to `take` (run_python keeps a head and tail, a run
    cell keeps its outputs in order)."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.take(text)
        return len(text)

    def take(self, text: str) -> None:
        raise NotImplementedError


class _CappedStream(TextSink):
    """A stdout/stderr stand-in that keeps only the head and tail of what is written.

    `while True: print(...)` under a timeout must not fill the kernel's memory before it stops.
    """

    def __init__(self, limit: int = MAX_SECTION_CHARS) -> None:
        super().__init__()
        self._half = limit // 2
        self._head = ""
        self._tail = ""
        self._total = 0

    def take(self, text: str) -> None:
        self._total += len(text)
        room = self._half - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        self._tail += text
        if len(self._tail) > 4 * self._half:
            self._tail = self._tail[-self._half :]

    def getvalue(self) -> str:
        tail = self._tail[-self._half :] if self._half else ""
        cut = self._total - len(self._head) - len(tail)
        if cut <= 0:
            return self._head + self._tail
        return f"{self._head}\n[... {cut} more characters cut]\n{tail}"


# -- run_python: compiling ---------------------------------------------------------------

run_numbers = itertools.count(1)


@dataclasses.dataclass
class _Compiled:
    """The code split like a notebook cell: statements, then the last expression if any."""

    body: types.CodeType
    last_expression: types.CodeType | None


def compile_source(source: str, filename: str) -> _Compiled:
    """Compile `source`; raise SyntaxError. The source goes into linecache under `filename`
    so tracebacks (ours, and IPython's later, for functions defined here) show the lines."""
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    tree = ast.parse(source, filename=filename, mode="exec")
    final = tree.body[-1] if tree.body else None
    expression = None
    if isinstance(final, ast.Expr):
        tree.body.pop()
        expression = compile(ast.Expression(body=final.value), filename, "eval", dont_inherit=True)
    # dont_inherit: this module's `from __future__ import annotations` must not leak into user code.
    body = compile(tree, filename, "exec", dont_inherit=True)
    return _Compiled(body=body, last_expression=expression)


# -- run_python: executing ---------------------------------------------------------------

_NO_VALUE = object()


@dataclasses.dataclass
class _Outcome:
    """What one run produced; rendered into the text the model reads."""

    stdout: str = ""
    stderr: str = ""
    value: Any = _NO_VALUE
    error: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    namespace: str = ""
    """What the code did to the user namespace, by name; first, so the tool card's
    short preview shows it however long the output."""

    def render(self) -> str:
        sections = [
            ("stdout", self.stdout),
            ("stderr", self.stderr),
            ("result", _result_text(self.value)),
            ("error", self.error or ""),
        ]
        parts = [f"namespace: {self.namespace}"] if self.namespace else []
        parts += [f"{title}:\n{text.rstrip()}" for title, text in sections if text.strip()]
        parts.extend(self.notes)
        return "\n".join(parts) if parts else "(no output)"


def _result_text(value: Any) -> str:
    if value is _NO_VALUE or value is None:
        return ""
    try:
        return cap_text(repr(value))
    except Exception as error:
        return f"<repr of {type(value).__name__} failed: {type(error).__name__}: {error}>"


def _user_traceback(error: BaseException, filename: str) -> types.TracebackType | None:
    """Drop our executor's frames: the model should see its own code's lines first."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return tb or error.__traceback__


def format_error(error: BaseException, filename: str, timeout_s: float | None) -> str:
    tb = _user_traceback(error, filename)
    if isinstance(error, UserCodeTimeout):
        frames = traceback.extract_tb(tb) if tb else traceback.StackSummary()
        while frames and frames[-1].filename == signals.__file__:  # our SIGALRM handler's frames
            frames.pop()
        listed = "".join(traceback.format_list(frames))
        stack = f"Traceback (most recent call last):\n{listed}" if listed else ""
        return (
            f"{stack}TimeoutError: stopped after timeout_s={timeout_s:g} s; "
            "variables assigned before the stop keep their values"
        )
    lines = traceback.format_exception(type(error), error, tb)
    return cap_text("".join(lines))


def execute_compiled(compiled: _Compiled, ns: dict[str, Any], state: RunState, outcome: _Outcome) -> None:
    """Run the statements, then evaluate the last expression; raises what the code raised.

    The nested try makes sure `in_user_code` is cleared before anything of ours runs.
    """
    try:
        state.in_user_code = True
        if state.interrupted:  # the interrupt came while the handlers were being installed
            raise KeyboardInterrupt
        exec(compiled.body, ns)
        if compiled.last_expression is not None:
            outcome.value = eval(compiled.last_expression, ns)
    finally:
        state.in_user_code = False


async def _run(
    source: str, ns: dict[str, Any], timeout_s: float | None, before_exec: Callable[[], None] | None = None
) -> tuple[_Outcome, RunState]:
    filename = f"<run_python-{next(run_numbers)}>"
    outcome = _Outcome()
    state = RunState()
    try:
        compiled = compile_source(source, filename)
    except SyntaxError as error:
        outcome.error = "".join(traceback.format_exception_only(type(error), error))
        return outcome, state
    stdout, stderr = _CappedStream(), _CappedStream()
    with interruptible(state, timeout_s) as has_signals:
        await deliver_pending_interrupts()
        if before_exec is not None:  # after the last await: another call's code cannot run between
            before_exec()
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                execute_compiled(compiled, ns, state, outcome)
        except BaseException as error:  # user code may raise anything, SystemExit included
            if not (isinstance(error, KeyboardInterrupt) and state.interrupted):
                outcome.error = format_error(error, filename, timeout_s)
    outcome.stdout, outcome.stderr = stdout.getvalue(), stderr.getvalue()
    if timeout_s and not has_signals:
        outcome.notes.append("[timeout_s was not enforced: not running on the main thread]")
    return outcome, state


async def deliver_pending_interrupts() -> None:
    """An interrupt that came just before our handler was installed went to ipykernel's
    handler, which only *schedules* the cell's cancellation (two loop callbacks deep). Two
    loop turns let it land here, as CancelledError, instead of being lost behind a busy loop
    that never awaits. Interrupts from now on set `state.interrupted` (checked before exec)."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


class RunPythonArgs(BaseModel):
    code: str = Field(
        description=(
            "Python source to run in the notebook's namespace. If the last statement is an "
            "expression, its repr is returned as the result (like a cell's Out)."
        )
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description=(f"Stop the code after this many seconds (default: no limit; at most {MAX_TIMEOUT_S:g})."),
    )


def effective_timeout(timeout_s: float | None, ctx: ToolContext) -> float | None:
    """The call's own timeout_s, or less when the turn's --timeout comes sooner: the code runs
    on the event loop, so the turn's asyncio timeout cannot stop it."""
    if ctx.deadline is None or not math.isfinite(ctx.deadline):
        return timeout_s
    remaining = min(max(ctx.deadline - time.monotonic(), 0.01), MAX_TIMEOUT_S)
    return remaining if timeout_s is None else min(timeout_s, remaining)


_RUNNING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def one_at_a_time() -> asyncio.Lock:
    """Calls of one batch run concurrently, but code runs one piece at a time anyway (exec
    blocks the loop); without this, two calls interleave at their few awaits, and one's
    figure capture restores the other's stand-in `plt.show` for good, its figures go to the
    other, and its namespace diff names the other's variables. One lock per event loop."""
    loop = asyncio.get_running_loop()
    if loop not in _RUNNING:
        _RUNNING[loop] = asyncio.Lock()
    return _RUNNING[loop]


@tool("run_python", ToolKind.MUTATING, RunPythonArgs, ToolPresentation(code_arg="code"))
async def run_python(args: RunPythonArgs, ctx: ToolContext) -> str | ToolOutput:
    """Run Python code in the notebook kernel's namespace: variables you create stay there for
    the user and for later calls, and the user's variables are available. Returns sections
    "stdout:", "stderr:", "result:" (repr of the last expression). An exception comes back as
    an error with its traceback. Use timeout_s for code that might run long. Matplotlib
    figures the code draws (no plt.show() needed) are shown to the user in the cell and
    listed under "figures:" as fig-1, fig-2…; look at one with view_image(output="fig-1")."""
    ns = user_namespace(ctx, "run_python")
    capture = FigureCapture(display_of(ctx))
    recorder = change_recorder(ctx)
    taken: list[object] = []

    def snapshot() -> None:
        if recorder is not None:
            taken.append(recorder.namespace_before(ns))

    try:
        async with one_at_a_time():
            with capture.running():
                outcome, state = await _run(args.code, ns, effective_timeout(args.timeout_s, ctx), snapshot)
    finally:
        # by name only; an object changed in place keeps its name and identity
        changes = recorder.namespace_after(taken[0], ctx.call_id, args.code) if recorder and taken else ""
    outcome.namespace = changes
    if state.interrupted:
        # The user pressed interrupt: end the turn as cancelled, even if the code caught the
        # KeyboardInterrupt and finished normally.
        raise asyncio.CancelledError("run_python was interrupted by the user")
    figures = keep_figures(ctx, capture.images)
    if figures:
        outcome.notes.append("figures:\n" + "\n".join(figures))
    # The figures go to the user (the tool's card), not to the model: it reads the
    # "figures:" lines and looks at one with view_image when it needs to.
    shown = [png_part(png) for png, _label in capture.images]
    if outcome.error is not None:
        raise ToolError(outcome.render(), display_images=shown)
    return ToolOutput(outcome.render(), display_images=shown) if shown else outcome.render()


RUN_PYTHON_TOOLS: list[Tool] = [run_python]
"""run_python needs `ToolContext.kernel` and says so when it is missing."""
