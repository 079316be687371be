"""Kernel tools: run Python in the user's namespace and look at the variables there.

`run_python` executes on the calling thread, which in a notebook is the kernel's main thread
(the turn runs as an async cell on the kernel's event loop). The code runs synchronously: no
await, so nothing else on the loop runs meanwhile, which is what makes swapping `sys.stdout`
and the signal handlers for the duration safe.

Interrupts. ipykernel 7.4 runs an async cell inside `IPythonKernel._cancel_on_sigint`: its
SIGINT handler only schedules, via `io_loop.add_callback`, a callback that cancels the cell's
future, so the cancellation lands at the cell's next `await`. A busy synchronous loop
(`while True: pass`) never reaches one; the ■ button would do nothing until the loop ends by
itself. So while user code runs, `run_python` installs its own SIGINT handler that raises
`KeyboardInterrupt` inside the user code, and then ends the tool with `asyncio.CancelledError`,
which the engine turns into a `cancelled` turn. The kernel's handler is restored afterwards.

Timeouts use `signal.setitimer(ITIMER_REAL)` and a SIGALRM handler that raises a private
`BaseException` (so the user's `except Exception:` does not swallow it). Signals can only be
handled on the main thread; elsewhere (ipykernel subshells, worker threads) the code runs
without interrupt or timeout support, and the answer says so when a timeout was asked for.

Nothing here imports IPython: the namespace arrives through `ToolContext.kernel.user_ns`, and
pandas/numpy are only looked up in `sys.modules` (an object of theirs implies they are loaded).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import difflib
import inspect
import io
import itertools
import linecache
import reprlib
import signal
import sys
import threading
import time
import traceback
import types
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, Field

from .images import FigureCapture, display_of, keep_figures, png_part
from .registry import Tool, ToolContext, ToolError, ToolKind, ToolOutput, tool

__all__ = [
    "KERNEL_TOOLS",
    "describe_variable",
    "list_variables",
    "run_python",
]

MAX_SECTION_CHARS = 20_000
MAX_DESCRIPTION_CHARS = 20_000
MAX_LISTED_VARIABLES = 300
SHORT_REPR_CHARS = 80
HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
"""IPython's own names in the user namespace: not the user's variables."""


def _user_namespace(ctx: ToolContext, tool_name: str) -> dict[str, Any]:
    if ctx.kernel is None:
        raise ToolError(
            f"{tool_name} needs a running kernel (use it from a notebook or IPython, "
            "not a plain script)"
        )
    return ctx.kernel.user_ns


def cap_text(text: str, limit: int = MAX_SECTION_CHARS) -> str:
    """Keep the start and the end of a long text (the end of a log is often what matters)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} more characters cut]\n{text[-half:]}"


class _CappedStream(io.TextIOBase):
    """A stdout/stderr stand-in that keeps only the head and tail of what is written.

    `while True: print(...)` under a timeout must not fill the kernel's memory before it stops.
    """

    def __init__(self, limit: int = MAX_SECTION_CHARS) -> None:
        super().__init__()
        self._half = limit // 2
        self._head = ""
        self._tail = ""
        self._total = 0

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
        written = len(text)
        self._total += written
        room = self._half - len(self._head)
        if room > 0:
            self._head += text[:room]
            text = text[room:]
        self._tail += text
        if len(self._tail) > 4 * self._half:
            self._tail = self._tail[-self._half :]
        return written

    def getvalue(self) -> str:
        tail = self._tail[-self._half :] if self._half else ""
        cut = self._total - len(self._head) - len(tail)
        if cut <= 0:
            return self._head + self._tail
        return f"{self._head}\n[... {cut} more characters cut]\n{tail}"


# -- run_python: compiling ---------------------------------------------------------------

_run_numbers = itertools.count(1)


@dataclasses.dataclass
class _Compiled:
    """The code split like a notebook cell: statements, then the last expression if any."""

    body: types.CodeType
    last_expression: types.CodeType | None


def _compile(source: str, filename: str) -> _Compiled:
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


# -- run_python: interrupts and timeouts -------------------------------------------------


class _Timeout(BaseException):
    """Raised inside user code by the SIGALRM handler; a BaseException so that the user's
    `except Exception:` does not swallow it."""


@dataclasses.dataclass
class _RunState:
    """Shared between the signal handlers and the executor.

    Handlers raise only while `in_user_code` is set: a signal that arrives while our own
    bookkeeping runs is recorded instead, so it can never escape from the tool as a stray
    KeyboardInterrupt.
    """

    in_user_code: bool = False
    interrupted: bool = False
    timed_out: bool = False


def _on_sigint(state: _RunState, signum: int, frame: types.FrameType | None) -> None:
    state.interrupted = True
    if state.in_user_code:
        raise KeyboardInterrupt


def _on_alarm(state: _RunState, signum: int, frame: types.FrameType | None) -> None:
    if state.in_user_code:
        state.timed_out = True
        raise _Timeout


SignalHandler = Callable[[int, types.FrameType | None], Any] | int | None


def _restore_handler(signum: int, previous: SignalHandler) -> None:
    # getsignal() says None for a handler not installed from Python; the default is the best
    # we can put back then.
    signal.signal(signum, previous if previous is not None else signal.SIG_DFL)


@contextlib.contextmanager
def _alarm(state: _RunState, timeout_s: float) -> Iterator[None]:
    """Arm ITIMER_REAL for `timeout_s`, then put back the previous handler and timer.

    The timer repeats every 0.5 s so that code which swallows one _Timeout (a bare `except:`
    in a loop) is stopped again.
    """
    started = time.monotonic()
    previous_handler = signal.signal(signal.SIGALRM, lambda s, f: _on_alarm(state, s, f))
    previous_delay, previous_interval = signal.setitimer(signal.ITIMER_REAL, timeout_s, 0.5)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _restore_handler(signal.SIGALRM, previous_handler)
        if previous_delay > 0:
            remaining = max(previous_delay - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, remaining, previous_interval)


@contextlib.contextmanager
def _interruptible(state: _RunState, timeout_s: float | None) -> Iterator[bool]:
    """Install the SIGINT handler (and the timeout) for the duration; yield whether signals
    could be installed, which is only possible on the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = signal.signal(signal.SIGINT, lambda s, f: _on_sigint(state, s, f))
    try:
        with _alarm(state, timeout_s) if timeout_s else contextlib.nullcontext():
            yield True
    finally:
        _restore_handler(signal.SIGINT, previous)


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

    def render(self) -> str:
        sections = [
            ("stdout", self.stdout),
            ("stderr", self.stderr),
            ("result", _result_text(self.value)),
            ("error", self.error or ""),
        ]
        parts = [f"{title}:\n{text.rstrip()}" for title, text in sections if text.strip()]
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


def _format_error(error: BaseException, filename: str, timeout_s: float | None) -> str:
    tb = _user_traceback(error, filename)
    if isinstance(error, _Timeout):
        frames = traceback.extract_tb(tb) if tb else traceback.StackSummary()
        while frames and frames[-1].filename == __file__:  # our SIGALRM handler's frames
            frames.pop()
        listed = "".join(traceback.format_list(frames))
        stack = f"Traceback (most recent call last):\n{listed}" if listed else ""
        return (
            f"{stack}TimeoutError: stopped after timeout_s={timeout_s:g} s; "
            "variables assigned before the stop keep their values"
        )
    lines = traceback.format_exception(type(error), error, tb)
    return cap_text("".join(lines))


def _execute(compiled: _Compiled, ns: dict[str, Any], state: _RunState, outcome: _Outcome) -> None:
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


async def _run(source: str, ns: dict[str, Any], timeout_s: float | None) -> tuple[_Outcome, _RunState]:
    filename = f"<run_python-{next(_run_numbers)}>"
    outcome = _Outcome()
    state = _RunState()
    try:
        compiled = _compile(source, filename)
    except SyntaxError as error:
        outcome.error = "".join(traceback.format_exception_only(type(error), error))
        return outcome, state
    stdout, stderr = _CappedStream(), _CappedStream()
    with _interruptible(state, timeout_s) as has_signals:
        await _deliver_pending_interrupts()
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                _execute(compiled, ns, state, outcome)
        except BaseException as error:  # user code may raise anything, SystemExit included
            if not (isinstance(error, KeyboardInterrupt) and state.interrupted):
                outcome.error = _format_error(error, filename, timeout_s)
    outcome.stdout, outcome.stderr = stdout.getvalue(), stderr.getvalue()
    if timeout_s and not has_signals:
        outcome.notes.append("[timeout_s was not enforced: not running on the main thread]")
    return outcome, state


async def _deliver_pending_interrupts() -> None:
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
        description="Stop the code after this many seconds (default: no limit).",
    )


def _effective_timeout(timeout_s: float | None, ctx: ToolContext) -> float | None:
    """The call's own timeout_s, or less when the turn's --timeout comes sooner: the code runs
    on the event loop, so the turn's asyncio timeout cannot stop it (ENG-14)."""
    if ctx.deadline is None:
        return timeout_s
    remaining = max(ctx.deadline - time.monotonic(), 0.01)
    return remaining if timeout_s is None else min(timeout_s, remaining)


@tool("run_python", ToolKind.MUTATING, RunPythonArgs)
async def run_python(args: RunPythonArgs, ctx: ToolContext) -> str | ToolOutput:
    """Run Python code in the notebook kernel's namespace: variables you create stay there for
    the user and for later calls, and the user's variables are available. Returns sections
    "stdout:", "stderr:", "result:" (repr of the last expression). An exception comes back as
    an error with its traceback. Use timeout_s for code that might run long. Matplotlib
    figures the code draws (no plt.show() needed) are shown to the user in the cell and
    listed under "figures:" as fig-1, fig-2…; look at one with view_image(output="fig-1")."""
    ns = _user_namespace(ctx, "run_python")
    capture = FigureCapture(display_of(ctx))
    with capture.running():
        outcome, state = await _run(args.code, ns, _effective_timeout(args.timeout_s, ctx))
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


# -- list_variables ----------------------------------------------------------------------

_short = reprlib.Repr()
_short.maxstring = SHORT_REPR_CHARS
_short.maxother = SHORT_REPR_CHARS
_short.maxlist = _short.maxtuple = _short.maxset = _short.maxfrozenset = 8
_short.maxdict = 6
_short.maxlevel = 2


def _loaded_type(module: str, name: str) -> type | None:
    """pandas.DataFrame and friends, if that library is already imported (else None).

    An object of a library's type implies the library is loaded, so sys.modules suffices and
    describing a variable never imports pandas or numpy.
    """
    found = getattr(sys.modules.get(module), name, None)
    return found if isinstance(found, type) else None


def _is_instance(obj: object, module: str, name: str) -> bool:
    cls = _loaded_type(module, name)
    return cls is not None and isinstance(obj, cls)


def _one_line(text: str, limit: int = SHORT_REPR_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _type_label(obj: object) -> str:
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj):
        return "function"
    return type(obj).__name__


def _size_label(obj: object) -> str:
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return ""
    try:
        shape = getattr(obj, "shape", None)
        if isinstance(shape, tuple):
            return f"shape {shape}"
        if hasattr(obj, "__len__"):
            return f"len {len(obj)}"  # type: ignore[arg-type]
    except Exception:
        return ""
    return ""


def _short_repr(obj: object) -> str:
    try:
        if _is_instance(obj, "pandas", "DataFrame"):
            return _one_line("columns: " + ", ".join(map(str, obj.columns)))  # type: ignore[attr-defined]
        if inspect.isroutine(obj):
            return _one_line(f"{obj.__name__}{_signature(obj)}")
        if inspect.isclass(obj):
            return f"{obj.__module__}.{obj.__qualname__}"
        return _one_line(_short.repr(obj))
    except Exception as error:
        return f"<repr failed: {type(error).__name__}>"


def _signature(func: Any) -> str:
    try:
        return str(inspect.signature(func))
    except (TypeError, ValueError):
        return "(...)"


def _visible_names(ns: dict[str, Any], hidden: Mapping[str, Any] | None = None) -> list[str]:
    """User variables, like IPython's %who: a name the shell put there itself (`open`, `In`…)
    is hidden unless the user rebound it."""
    hidden = hidden or {}
    return sorted(
        name
        for name, value in ns.items()
        if not name.startswith("_")
        and name not in HIDDEN_NAMES
        and not (name in hidden and hidden[name] is value)
        and not isinstance(value, types.ModuleType)
    )


def _variable_line(name: str, obj: object) -> str:
    details = ", ".join(part for part in (_type_label(obj), _size_label(obj)) if part)
    return f"{name} ({details}): {_short_repr(obj)}"


class ListVariablesArgs(BaseModel):
    pass


@tool("list_variables", ToolKind.READ_ONLY, ListVariablesArgs)
async def list_variables(args: ListVariablesArgs, ctx: ToolContext) -> str:
    """List the user's variables in the notebook kernel: name, type, shape or length, and a
    short repr. Modules and names starting with "_" are left out. Use describe_variable for
    one variable in depth."""
    ns = _user_namespace(ctx, "list_variables")
    names = _visible_names(ns, getattr(ctx.kernel, "hidden_names", None))
    if not names:
        return "no user variables yet"
    lines = [_variable_line(name, ns[name]) for name in names[:MAX_LISTED_VARIABLES]]
    if len(names) > MAX_LISTED_VARIABLES:
        lines.append(
            f"[... {len(names) - MAX_LISTED_VARIABLES} more variables not shown; "
            "use describe_variable with a name]"
        )
    return "\n".join(lines)


# -- describe_variable -------------------------------------------------------------------


def _lookup(ns: dict[str, Any], name: str) -> Any:
    """`name` or a dotted attribute path like `model.config`."""
    root, *attributes = name.strip().split(".")
    if root not in ns:
        raise _unknown_name_error(ns, name)
    obj = ns[root]
    for depth, attribute in enumerate(attributes, start=1):
        try:
            obj = getattr(obj, attribute)
        except Exception as error:
            path = ".".join([root, *attributes[:depth]])
            raise ToolError(f"cannot get {path}: {type(error).__name__}: {error}") from None
    return obj


def _unknown_name_error(ns: dict[str, Any], name: str) -> ToolError:
    names = _visible_names(ns)
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    if close:
        return ToolError(f"no variable named {name!r}; close names: {', '.join(close)}")
    some = ", ".join(names[:10]) or "none yet"
    return ToolError(f"no variable named {name!r}; variables include: {some}")


def _describe_dataframe(df: Any) -> str:
    pd = sys.modules["pandas"]
    columns = pd.DataFrame(
        {"dtype": df.dtypes.astype(str), "non-null": df.notna().sum(), "nulls": df.isna().sum()}
    )
    shown = columns.head(60).to_string()
    more = f"\n[... {len(columns) - 60} more columns]" if len(columns) > 60 else ""
    return "\n".join(
        [
            f"DataFrame: {df.shape[0]} rows × {df.shape[1]} columns",
            f"index: {type(df.index).__name__} (dtype {df.index.dtype})",
            f"columns (dtype, non-null and null counts):\n{shown}{more}",
            f"head(5):\n{df.head(5).to_string(max_cols=20, max_colwidth=40)}",
            f"describe():\n{_pandas_describe(df)}",
        ]
    )


def _pandas_describe(obj: Any) -> str:
    try:
        if _is_instance(obj, "pandas", "DataFrame"):
            return str(obj.describe(include="all").to_string(max_cols=20))
        return str(obj.describe().to_string())
    except Exception as error:
        return f"(not available: {type(error).__name__}: {error})"


def _describe_series(series: Any) -> str:
    return "\n".join(
        [
            f"Series {series.name!r}: {len(series)} values, dtype {series.dtype}",
            f"nulls: {int(series.isna().sum())}",
            f"head(5):\n{series.head(5).to_string()}",
            f"describe():\n{_pandas_describe(series)}",
        ]
    )


def _describe_ndarray(array: Any) -> str:
    np = sys.modules["numpy"]
    lines = [f"ndarray: shape {array.shape}, dtype {array.dtype}, {array.nbytes:,} bytes"]
    numeric = np.issubdtype(array.dtype, np.number) and not np.issubdtype(
        array.dtype, np.complexfloating
    )
    if numeric and array.size:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            lines.append(
                f"min {np.nanmin(array)}, max {np.nanmax(array)}, mean {np.nanmean(array)}"
            )
        if np.issubdtype(array.dtype, np.floating):
            lines.append(f"NaN count: {int(np.isnan(array).sum())}")
    with np.printoptions(threshold=60, edgeitems=3, linewidth=100):
        lines.append(repr(array))
    return "\n".join(lines)


def _describe_mapping(obj: dict[Any, Any]) -> str:
    lines = [f"{type(obj).__name__} with {len(obj)} keys"]
    for key in itertools.islice(obj, 30):
        lines.append(f"  {_short.repr(key)}: {_type_label(obj[key])} {_short_repr(obj[key])}")
    if len(obj) > 30:
        lines.append(f"  [... {len(obj) - 30} more keys]")
    return "\n".join(lines)


def _describe_collection(obj: list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any]) -> str:
    types_seen = Counter(type(item).__name__ for item in itertools.islice(obj, 10_000))
    kinds = ", ".join(f"{name} × {count}" for name, count in types_seen.most_common(5))
    return "\n".join(
        [f"{type(obj).__name__} of length {len(obj)}", f"item types: {kinds or '—'}", _repr(obj)]
    )


def _describe_callable(obj: Any) -> str:
    doc = inspect.getdoc(obj) or "(no docstring)"
    kind = "class" if inspect.isclass(obj) else "function"
    module = getattr(obj, "__module__", None) or "?"
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))
    return f"{kind} {module}.{name}{_signature(obj)}\n{cap_text(doc, 3000)}"


def _describe_other(obj: object) -> str:
    cls = type(obj)
    lines = [f"type: {cls.__module__}.{cls.__qualname__}"]
    for attribute in ("shape", "dtype"):
        value = getattr(obj, attribute, None)
        if value is not None and not callable(value):
            lines.append(f"{attribute}: {value}")
    with contextlib.suppress(Exception):
        lines.append(f"len: {len(obj)}")  # type: ignore[arg-type]
    lines.append(_repr(obj))
    return "\n".join(lines)


def _repr(obj: object) -> str:
    try:
        return cap_text(repr(obj), 4000)
    except Exception as error:
        return f"<repr failed: {type(error).__name__}: {error}>"


def _describe(obj: object) -> str:
    if _is_instance(obj, "pandas", "DataFrame"):
        return _describe_dataframe(obj)
    if _is_instance(obj, "pandas", "Series"):
        return _describe_series(obj)
    if _is_instance(obj, "numpy", "ndarray"):
        return _describe_ndarray(obj)
    if isinstance(obj, dict):
        return _describe_mapping(obj)
    if isinstance(obj, list | tuple | set | frozenset):
        return _describe_collection(obj)
    if isinstance(obj, str):
        return f"str of length {len(obj)}, {obj.count(chr(10)) + 1} lines\n{_repr(obj)}"
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__} from {getattr(obj, '__file__', None) or '(built-in)'}"
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return _describe_callable(obj)
    return _describe_other(obj)


class DescribeVariableArgs(BaseModel):
    name: str = Field(
        description="Variable name in the notebook namespace, or a dotted path like 'obj.attr'."
    )


@tool("describe_variable", ToolKind.READ_ONLY, DescribeVariableArgs)
async def describe_variable(args: DescribeVariableArgs, ctx: ToolContext) -> str:
    """Describe one variable of the notebook kernel in depth. DataFrame: shape, dtypes, null
    counts, head(5) and describe(); Series likewise; NumPy arrays: shape, dtype, min/max/mean
    and a small repr; dicts and lists: length, item types and a short repr; other objects:
    type and repr."""
    ns = _user_namespace(ctx, "describe_variable")
    obj = _lookup(ns, args.name)
    try:
        text = _describe(obj)
    except Exception as error:
        text = f"type: {type(obj).__name__}\n(description failed: {type(error).__name__}: {error})"
    return f"{args.name}: {cap_text(text, MAX_DESCRIPTION_CHARS)}"


KERNEL_TOOLS: list[Tool] = [run_python, list_variables, describe_variable]
"""The kernel tools: they need `ToolContext.kernel` and say so when it is missing."""
