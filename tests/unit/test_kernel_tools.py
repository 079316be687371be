"""The kernel tools against a plain namespace dict: the real KernelContext protocol, no IPython.

These tests run on the main thread (pytest-asyncio's loop), like the kernel's own cells, so
the SIGINT and SIGALRM handling is exercised for real.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from blitz_kernel.tools import run_python, signals, variables
from blitz_kernel.tools.registry import ToolContext, ToolError, ToolKind
from blitz_kernel.tools.run_python import RUN_PYTHON_TOOLS
from blitz_kernel.tools.variables import VARIABLE_TOOLS

TOOLS = {t.name: t for t in [*RUN_PYTHON_TOOLS, *VARIABLE_TOOLS]}


@dataclass
class NamespaceKernel:
    """The whole KernelContext protocol: a user namespace."""

    user_ns: dict[str, Any] = field(default_factory=dict)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path, kernel=NamespaceKernel())


def ns(ctx: ToolContext) -> dict[str, Any]:
    assert ctx.kernel is not None
    return ctx.kernel.user_ns


async def call(ctx: ToolContext, tool_name: str, **arguments: Any) -> str:
    tool = TOOLS[tool_name]
    return await tool.func(tool.parse_arguments(json.dumps(arguments)), ctx)


async def error_of(ctx: ToolContext, tool_name: str, **arguments: Any) -> str:
    with pytest.raises(ToolError) as caught:
        await call(ctx, tool_name, **arguments)
    return str(caught.value)


def interrupt_when(event_name: str, ctx: ToolContext) -> threading.Thread:
    """Send SIGINT to this process once the user code has set `event_name` (it is running)."""
    started = threading.Event()
    ns(ctx)[event_name] = started

    def send() -> None:
        if started.wait(timeout=30):
            os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


# -- the contract --------------------------------------------------------------------------


def test_names_kinds_and_arguments_match_the_interface() -> None:
    expected = {
        "run_python": (ToolKind.MUTATING, {"code", "timeout_s"}),
        "list_variables": (ToolKind.READ_ONLY, set()),
        "describe_variable": (ToolKind.READ_ONLY, {"name"}),
    }
    actual = {name: (t.kind, set(t.spec().parameters.get("properties", {}))) for name, t in TOOLS.items()}
    assert actual == expected
    for tool in TOOLS.values():
        for name, prop in tool.spec().parameters.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


@pytest.mark.parametrize(
    ("tool_name", "arguments"),
    [("run_python", {"code": "1"}), ("list_variables", {}), ("describe_variable", {"name": "x"})],
)
async def test_without_a_kernel_every_tool_says_it_needs_one(
    tmp_path: Path, tool_name: str, arguments: dict[str, Any]
) -> None:
    with pytest.raises(ToolError, match=f"{tool_name} needs a running kernel"):
        await call(ToolContext(workspace=tmp_path), tool_name, **arguments)


@pytest.mark.parametrize("module", [run_python, signals, variables], ids=lambda m: m.__name__)
def test_tools_package_does_not_import_ipython(module: types.ModuleType) -> None:
    assert not any(name.split(".")[0] in {"IPython", "ipywidgets"} for name in vars(module))
    source = Path(str(module.__file__)).read_text()
    assert "import IPython" not in source and "from IPython" not in source


# -- run_python ----------------------------------------------------------------------------


async def test_variables_persist_in_the_user_namespace(ctx: ToolContext) -> None:
    ns(ctx)["users_value"] = 41
    assert await call(ctx, "run_python", code="answer = users_value + 1") == "(no output)"
    assert ns(ctx)["answer"] == 42
    assert await call(ctx, "run_python", code="answer * 2") == "result:\n84"


async def test_last_expression_repr_stdout_and_stderr(ctx: ToolContext) -> None:
    code = "import sys\nprint('to out')\nprint('to err', file=sys.stderr)\n{'k': [1, 2]}"
    assert await call(ctx, "run_python", code=code) == ("stdout:\nto out\nstderr:\nto err\nresult:\n{'k': [1, 2]}")
    assert sys.stdout is not None and "to out" not in repr(sys.stdout)


async def test_none_result_and_trailing_statement_show_no_result(ctx: ToolContext) -> None:
    assert await call(ctx, "run_python", code="None") == "(no output)"
    assert await call(ctx, "run_python", code="x = 3") == "(no output)"


async def test_exception_shows_the_users_lines_not_ours(ctx: ToolContext) -> None:
    code = "print('before')\ndef divide(a, b):\n    return a / b\n\ndivide(1, 0)\n"
    text = await error_of(ctx, "run_python", code=code)
    assert text.startswith("stdout:\nbefore\nerror:\nTraceback (most recent call last):\n")
    assert "divide(1, 0)" in text and "return a / b" in text
    assert text.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "run_python.py" not in text and "signals.py" not in text
    assert "divide" in ns(ctx)


async def test_user_code_does_not_inherit_our_future_imports(ctx: ToolContext) -> None:
    code = "def f(x: int) -> int:\n    return x\nf.__annotations__"
    assert await call(ctx, "run_python", code=code) == "result:\n{'x': <class 'int'>, 'return': <class 'int'>}"


async def test_functions_defined_earlier_keep_their_source_in_tracebacks(ctx: ToolContext) -> None:
    await call(ctx, "run_python", code="def boom():\n    raise ValueError('bad value')\n")
    text = await error_of(ctx, "run_python", code="boom()")
    assert "raise ValueError('bad value')" in text
    assert "ValueError: bad value" in text


async def test_syntax_error_shows_the_line(ctx: ToolContext) -> None:
    text = await error_of(ctx, "run_python", code="x = 1\ny = (2 +\n")
    assert text.startswith("error:\n")
    assert "line 2" in text and "y = (2 +" in text and "SyntaxError" in text


async def test_system_exit_is_an_error_not_the_end_of_the_kernel(ctx: ToolContext) -> None:
    text = await error_of(ctx, "run_python", code="import sys\nsys.exit(3)")
    assert "SystemExit: 3" in text


async def test_output_is_capped_keeping_head_and_tail(ctx: ToolContext) -> None:
    code = "print('START')\nfor i in range(100_000): print('x' * 50)\nprint('END')"
    text = await call(ctx, "run_python", code=code)
    assert len(text) < run_python.MAX_SECTION_CHARS + 200
    assert "START" in text and "END" in text
    assert "more characters cut]" in text


async def test_result_repr_is_capped_and_repr_failures_reported(ctx: ToolContext) -> None:
    text = await call(ctx, "run_python", code="'y' * 50_000")
    assert len(text) < run_python.MAX_SECTION_CHARS + 200 and "more characters cut]" in text
    code = "class Odd:\n    def __repr__(self):\n        raise RuntimeError('no')\nOdd()"
    assert "<repr of Odd failed: RuntimeError: no>" in await call(ctx, "run_python", code=code)


async def test_timeout_stops_a_busy_loop(ctx: ToolContext) -> None:
    started = time.monotonic()
    text = await error_of(ctx, "run_python", code="n = 0\nwhile True:\n    n += 1", timeout_s=0.2)
    elapsed = time.monotonic() - started
    assert "TimeoutError: stopped after timeout_s=0.2 s" in text
    assert "<run_python-" in text and "run_python.py" not in text and "signals.py" not in text
    assert ns(ctx)["n"] > 0
    assert elapsed < 10  # a generous bound: only proves the loop was stopped at all


async def test_timeout_is_not_swallowed_by_except_exception(ctx: ToolContext) -> None:
    code = "while True:\n    try:\n        pass\n    except Exception:\n        pass"
    assert "TimeoutError" in await error_of(ctx, "run_python", code=code, timeout_s=0.1)


async def test_timeout_restores_the_previous_alarm_handler_and_timer(ctx: ToolContext) -> None:
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    signal.setitimer(signal.ITIMER_REAL, 600)
    try:
        await error_of(ctx, "run_python", code="while True: pass", timeout_s=0.05)
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < remaining <= 600
        assert signal.getsignal(signal.SIGALRM) is not None
        signal.raise_signal(signal.SIGALRM)
        assert fired == [signal.SIGALRM]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


async def test_fast_code_with_timeout_leaves_no_timer_behind(ctx: ToolContext) -> None:
    assert await call(ctx, "run_python", code="1 + 1", timeout_s=5) == "result:\n2"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


async def test_sigint_during_a_busy_loop_cancels_the_tool(ctx: ToolContext) -> None:
    previous = signal.getsignal(signal.SIGINT)
    sender = interrupt_when("started", ctx)
    with pytest.raises(asyncio.CancelledError):
        await call(ctx, "run_python", code="started.set()\nspins = 0\nwhile True:\n    spins += 1")
    sender.join(timeout=30)
    assert ns(ctx)["spins"] > 0
    assert signal.getsignal(signal.SIGINT) is previous


async def test_sigint_cancels_even_when_the_code_catches_keyboard_interrupt(
    ctx: ToolContext,
) -> None:
    sender = interrupt_when("started", ctx)
    code = "started.set()\ntry:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n    caught = True\n"
    with pytest.raises(asyncio.CancelledError):
        await call(ctx, "run_python", code=code)
    sender.join(timeout=30)
    assert ns(ctx)["caught"] is True


async def test_custom_sigint_handler_is_restored(ctx: ToolContext) -> None:
    def handler(signum: int, frame: types.FrameType | None) -> None:
        pass

    previous = signal.signal(signal.SIGINT, handler)
    try:
        await call(ctx, "run_python", code="1")
        await error_of(ctx, "run_python", code="1/0")
        await error_of(ctx, "run_python", code="while True: pass", timeout_s=0.05)
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)


async def test_keyboard_interrupt_raised_by_the_code_itself_is_an_error(ctx: ToolContext) -> None:
    assert "KeyboardInterrupt" in await error_of(ctx, "run_python", code="raise KeyboardInterrupt")


async def test_off_the_main_thread_runs_without_timeout_support(ctx: ToolContext) -> None:
    def in_thread() -> str:
        return asyncio.run(call(ctx, "run_python", code="threaded = 1\nthreaded", timeout_s=1))

    text = await asyncio.to_thread(in_thread)
    assert text == "result:\n1\n[timeout_s was not enforced: not running on the main thread]"


async def test_invalid_timeout_is_an_argument_error(ctx: ToolContext) -> None:
    assert "timeout_s" in await error_of(ctx, "run_python", code="1", timeout_s=0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("NaN", "timeout_s: Input should be a finite number"),
        ("Infinity", "timeout_s: Input should be a finite number"),
        ("1e309", "timeout_s: Input should be a finite number"),
        ("-1", "timeout_s: Input should be greater than 0"),
        ("1e9", "timeout_s: Input should be less than or equal to 86400"),
    ],
)
async def test_non_finite_or_huge_timeouts_are_refused_and_touch_no_handler(
    ctx: ToolContext, raw: str, expected: str
) -> None:
    """NaN, inf and 1e309 from the model used to reach setitimer."""

    def users_handler(signum: int, frame: types.FrameType | None) -> None:
        pass

    previous = signal.signal(signal.SIGALRM, users_handler)
    try:
        tool = TOOLS["run_python"]
        with pytest.raises(ToolError) as caught:
            await tool.func(tool.parse_arguments(f'{{"code": "ran = 1", "timeout_s": {raw}}}'), ctx)
        assert str(caught.value) == f"invalid arguments for run_python: {expected}"
        assert "ran" not in ns(ctx)
        assert signal.getsignal(signal.SIGALRM) is users_handler
    finally:
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize(
    ("code", "timeout_s"),
    [("1", 86_400), ("1/0", 86_400), ("while True: pass", 0.05), ("raise SystemExit", 30)],
    ids=["huge timeout", "exception", "timeout fires", "SystemExit"],
)
async def test_the_users_alarm_handler_and_timer_are_always_restored(
    ctx: ToolContext, code: str, timeout_s: float
) -> None:
    def users_handler(signum: int, frame: types.FrameType | None) -> None:
        pass

    previous = signal.signal(signal.SIGALRM, users_handler)
    signal.setitimer(signal.ITIMER_REAL, 600, 5)
    try:
        with contextlib.suppress(ToolError):
            await call(ctx, "run_python", code=code, timeout_s=timeout_s)
        assert signal.getsignal(signal.SIGALRM) is users_handler
        remaining, interval = signal.getitimer(signal.ITIMER_REAL)
        assert 590 < remaining <= 600 and interval == 5
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


async def test_a_turn_deadline_that_is_not_finite_is_ignored(ctx: ToolContext) -> None:
    ctx.deadline = float("inf")
    assert await call(ctx, "run_python", code="1 + 1", timeout_s=5) == "result:\n2"
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


# -- list_variables ------------------------------------------------------------------------


async def test_list_variables_shows_users_variables_only(ctx: ToolContext) -> None:
    ns(ctx).update(
        {
            "In": [],
            "Out": {},
            "exit": object(),
            "get_ipython": lambda: None,
            "_hidden": 1,
            "np": np,
            "df": pd.DataFrame({"a": [1, 2], "b": [3, 4]}),
            "arr": np.zeros((2, 3)),
            "items": [1, 2, 3],
            "name": "x" * 200,
            "Point": type("Point", (), {"__module__": "geometry"}),
        }
    )
    await call(ctx, "run_python", code="def area(r: float) -> float:\n    return 3.14 * r * r")
    lines = (await call(ctx, "list_variables")).splitlines()
    assert [line.split(" ")[0] for line in lines] == ["Point", "area", "arr", "df", "items", "name"]
    assert lines[0] == "Point (class): geometry.Point"
    assert lines[1] == "area (function): area(r: float) -> float"
    assert lines[2].startswith("arr (ndarray, shape (2, 3)): array(")
    assert lines[3] == "df (DataFrame, shape (2, 2)): columns: a, b"
    assert lines[4] == "items (list, len 3): [1, 2, 3]"
    assert lines[5].startswith("name (str, len 200): 'xxx")
    assert all(len(line.split(": ", 1)[1]) <= variables.SHORT_REPR_CHARS for line in lines)


async def test_list_variables_empty_and_capped(ctx: ToolContext) -> None:
    assert await call(ctx, "list_variables") == "no user variables yet"
    ns(ctx).update({f"v{n:04}": n for n in range(variables.MAX_LISTED_VARIABLES + 4)})
    lines = (await call(ctx, "list_variables")).splitlines()
    assert len(lines) == variables.MAX_LISTED_VARIABLES + 1
    assert lines[-1].startswith("[... 4 more variables not shown")


async def test_list_variables_survives_objects_that_misbehave(ctx: ToolContext) -> None:
    class Hostile:
        def __len__(self) -> int:
            raise RuntimeError("no len")

        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    ns(ctx)["h"] = Hostile()
    assert (await call(ctx, "list_variables")).startswith("h (Hostile): <Hostile instance at 0x")


# -- describe_variable ---------------------------------------------------------------------


async def test_describe_dataframe(ctx: ToolContext) -> None:
    ns(ctx)["sales"] = pd.DataFrame(
        {"region": ["n", "s", None, "e", "w", "n"], "amount": [1.0, 2.0, 3.0, None, 5.0, 6.0]}
    )
    text = await call(ctx, "describe_variable", name="sales")
    assert text.startswith("sales: DataFrame: 6 rows × 2 columns\nindex: RangeIndex")
    columns = text.split("columns (dtype, non-null and null counts):\n")[1].splitlines()
    assert columns[1].split() == ["region", "str", "5", "1"]
    assert columns[2].split() == ["amount", "float64", "5", "1"]
    head = text.split("head(5):\n")[1].split("describe():")[0]
    assert len(head.strip().splitlines()) == 6  # header + 5 rows
    assert "mean" in text.split("describe():\n")[1]


async def test_describe_series_and_empty_dataframe(ctx: ToolContext) -> None:
    ns(ctx)["s"] = pd.Series([1, 2, None], name="v")
    ns(ctx)["empty"] = pd.DataFrame()
    series = await call(ctx, "describe_variable", name="s")
    assert series.startswith("s: Series 'v': 3 values, dtype float64\nnulls: 1")
    empty = await call(ctx, "describe_variable", name="empty")
    assert "0 rows × 0 columns" in empty and "describe():\n(not available" in empty


async def test_describe_ndarray(ctx: ToolContext) -> None:
    ns(ctx)["grid"] = np.array([[1.0, np.nan], [3.0, 5.0]])
    ns(ctx)["words"] = np.array(["a", "b"])
    grid = (await call(ctx, "describe_variable", name="grid")).splitlines()
    assert grid[0] == "grid: ndarray: shape (2, 2), dtype float64, 32 bytes"
    assert grid[1] == "min 1.0, max 5.0, mean 3.0"
    assert grid[2] == "NaN count: 1"
    words = await call(ctx, "describe_variable", name="words")
    assert "min" not in words and "array(['a', 'b']" in words


async def test_describe_containers_text_and_callables(ctx: ToolContext) -> None:
    ns(ctx).update({"config": {"lr": 0.1, "layers": [64, 64]}, "xs": [1, "a", 2], "msg": "a\nb"})
    config = await call(ctx, "describe_variable", name="config")
    assert config.splitlines() == [
        "config: dict with 2 keys",
        "  'lr': float 0.1",
        "  'layers': list [64, 64]",
    ]
    xs = await call(ctx, "describe_variable", name="xs")
    assert xs.splitlines()[:2] == ["xs: list of length 3", "item types: int × 2, str × 1"]
    assert await call(ctx, "describe_variable", name="msg") == "msg: str of length 3, 2 lines\n'a\\nb'"
    await call(ctx, "run_python", code="def f(x):\n    '''Doubles x.'''\n    return 2 * x")
    assert (await call(ctx, "describe_variable", name="f")).endswith("f(x)\nDoubles x.")


async def test_describe_dotted_attribute(ctx: ToolContext) -> None:
    ns(ctx)["point"] = types.SimpleNamespace(x=3)
    assert await call(ctx, "describe_variable", name="point.x") == "point.x: type: builtins.int\n3"
    assert "cannot get point.y: AttributeError" in await error_of(ctx, "describe_variable", name="point.y")


async def test_describe_unknown_name_suggests_close_names(ctx: ToolContext) -> None:
    ns(ctx).update({"dataframe": 1, "data_frame": 2, "unrelated": 3, "_private": 4})
    text = await error_of(ctx, "describe_variable", name="datafrme")
    assert text.startswith("no variable named 'datafrme'; close names: ")
    assert "dataframe" in text and "data_frame" in text and "_private" not in text
    far = await error_of(ctx, "describe_variable", name="zzz")
    assert far == "no variable named 'zzz'; variables include: data_frame, dataframe, unrelated"


async def test_describe_does_not_import_pandas_for_plain_objects(ctx: ToolContext) -> None:
    # `_loaded_type` looks in sys.modules only; with pandas absent there it must not load it.
    saved = {k: v for k, v in sys.modules.items() if k == "pandas" or k.startswith("pandas.")}
    for name in saved:
        del sys.modules[name]
    try:
        ns(ctx)["n"] = 5
        assert await call(ctx, "describe_variable", name="n") == "n: type: builtins.int\n5"
        assert "pandas" not in sys.modules
    finally:
        sys.modules.update(saved)


# -- no walking into modules, no unbounded user code --------------------


class SlowRepr:
    """A user class whose repr, str and len take 20 s: the user's code, not ours to run."""

    calls = 0

    def __init__(self) -> None:
        self.size = 3

    def __repr__(self) -> str:
        SlowRepr.calls += 1
        time.sleep(20)
        return "slow"

    __str__ = __repr__

    def __len__(self) -> int:
        SlowRepr.calls += 1
        time.sleep(20)
        return 0


async def test_describe_refuses_dotted_paths_into_modules(ctx: ToolContext) -> None:
    import pathlib

    os.environ["BLITZ_TEST_SECRET"] = "sk-do-not-send"
    ns(ctx).update(
        {
            "pathlib": pathlib,
            "holder": types.SimpleNamespace(mod=os, env=os.environ),
            "f": lambda: None,
        }
    )
    try:
        refusals = {
            name: await error_of(ctx, "describe_variable", name=name)
            for name in ["pathlib.os.environ", "holder.mod.environ", "holder.env", "f.__globals__", "os"]
        }
    finally:
        del os.environ["BLITZ_TEST_SECRET"]
    assert refusals["pathlib.os.environ"] == (
        "pathlib is the module pathlib; describe_variable describes the user's variables, not modules or what they hold"
    )
    assert refusals["holder.mod.environ"].startswith("holder.mod is the module os;")
    assert refusals["holder.env"] == ("holder.env is the process environment; describe_variable does not show it")
    assert refusals["f.__globals__"].startswith("cannot get f.__globals__: describe_variable follows public")
    assert refusals["os"].startswith("no variable named 'os'")
    assert not any("sk-do-not-send" in text for text in refusals.values())


async def test_list_and_describe_do_not_run_a_user_objects_repr_or_len(ctx: ToolContext) -> None:
    SlowRepr.calls = 0
    ns(ctx).update({"slow": SlowRepr(), "in_a_list": [1, SlowRepr()]})
    started = time.monotonic()
    lines = (await call(ctx, "list_variables")).splitlines()
    described = await call(ctx, "describe_variable", name="slow")
    in_list = await call(ctx, "describe_variable", name="in_a_list")
    assert time.monotonic() - started < 5
    assert SlowRepr.calls == 0
    assert lines[0] == "in_a_list (list, len 2): [1, <SlowRepr instance at 0x" + lines[0].split("0x")[1]
    assert lines[1].startswith("slow (SlowRepr): <SlowRepr instance at 0x")
    assert described.splitlines() == [
        "slow: type: tests.unit.test_kernel_tools.SlowRepr",
        "(its repr, len and properties are its own code and were not run; use run_python to look inside)",
        "attributes: size (int)",
    ]
    assert "<SlowRepr instance at 0x" in in_list


async def test_user_code_that_a_library_calls_is_stopped_at_the_turn_deadline(ctx: ToolContext) -> None:
    SlowRepr.calls = 0
    ns(ctx)["df"] = pd.DataFrame({"obj": [SlowRepr()]})
    ctx.deadline = time.monotonic() + 0.5
    started = time.monotonic()
    text = await error_of(ctx, "describe_variable", name="df")
    assert time.monotonic() - started < 5
    assert text.startswith("describing df ran past 0.") and "and was stopped" in text
    assert SlowRepr.calls == 1
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


async def test_interrupt_stops_a_slow_str_inside_describe(ctx: ToolContext) -> None:
    class SignalsThenSleeps:
        def __str__(self) -> str:
            ns(ctx)["started"].set()
            time.sleep(20)
            return "late"

    previous = signal.getsignal(signal.SIGINT)
    sender = interrupt_when("started", ctx)
    ns(ctx)["df"] = pd.DataFrame({"obj": [SignalsThenSleeps()]})
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await call(ctx, "describe_variable", name="df")
    sender.join(timeout=30)
    assert time.monotonic() - started < 10
    assert signal.getsignal(signal.SIGINT) is previous
