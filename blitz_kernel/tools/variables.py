"""Variable tools: list the user's variables and describe one in depth.

They need no approval, so they must not become a way to run code or read secrets: a name is
a user variable (the ones list_variables shows) or a public attribute path on one, never a
walk into a module (`pathlib.os.environ`); an object's own repr/len/properties are called only
for types we know (safe_repr.py), and whatever is called runs under a time limit (the sooner
of a per-call limit and the turn's --timeout) and the ■ button (signals.time_limited).

Nothing here imports IPython: the namespace arrives through `ToolContext.kernel.user_ns`, and
pandas/numpy are only looked up in `sys.modules` (an object of theirs implies they are loaded),
so describing a variable never imports a library.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import inspect
import itertools
import math
import os
import sys
import time
import types
import warnings
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from ..core.text import one_line
from .registry import Tool, ToolContext, ToolError, ToolKind, tool
from .run_python import cap_text, user_namespace
from .safe_repr import SafeRepr, is_trusted
from .signals import UserCodeTimeout, time_limited
from .variable_names import is_user_variable

__all__ = ["VARIABLE_TOOLS", "describe_variable", "list_variables"]

MAX_DESCRIPTION_CHARS = 20_000
DESCRIBE_LIMIT_S = 5.0
"""How long describe_variable may run the code it calls (a DataFrame's to_string, say)."""
LIST_LIMIT_S = 1.0
"""How long list_variables may spend on one variable's line."""
MAX_LISTED_VARIABLES = 300
SHORT_REPR_CHARS = 80

T = TypeVar("T")


# -- list_variables ----------------------------------------------------------------------

_short = SafeRepr(chars=SHORT_REPR_CHARS, items=8, level=2)
_long = SafeRepr(chars=4000, items=100, level=4)


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


def _type_label(obj: object) -> str:
    if inspect.isclass(obj):
        return "class"
    if inspect.isroutine(obj):
        return "function"
    return type(obj).__name__


def _size_label(obj: object) -> str:
    if inspect.isclass(obj) or inspect.isroutine(obj) or not is_trusted(obj):
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
            return one_line("columns: " + ", ".join(map(str, obj.columns)), SHORT_REPR_CHARS)  # type: ignore[attr-defined]
        if inspect.isroutine(obj):
            return one_line(f"{obj.__name__}{_signature(obj)}", SHORT_REPR_CHARS)
        if inspect.isclass(obj):
            return f"{obj.__module__}.{obj.__qualname__}"
        return one_line(_short.repr(obj), SHORT_REPR_CHARS)
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
    return sorted(name for name, value in ns.items() if is_user_variable(name, value, hidden))


def _variable_line(name: str, obj: object, limit_s: float, *, values: bool = True) -> str:
    def line() -> str:
        details = ", ".join(part for part in (_type_label(obj), _size_label(obj)) if part)
        if not values:  # privacy.variables = "schema"
            columns = _schema_columns(obj)
            return f"{name} ({details})" + (f": columns: {columns}" if columns else "")
        return f"{name} ({details}): {_short_repr(obj)}"

    try:
        return _limited(line, limit_s)
    except UserCodeTimeout:
        return f"{name} ({type(obj).__name__}): <not shown: its repr ran past {limit_s:.3g} s>"


def _limit(seconds: float, ctx: ToolContext) -> float | None:
    """`seconds`, or less when the turn's deadline (--timeout) comes sooner; None once it
    has passed."""
    if ctx.deadline is None or not math.isfinite(ctx.deadline):
        return seconds
    remaining = ctx.deadline - time.monotonic()
    return min(seconds, remaining) if remaining > 0.001 else None


def _limited(work: Callable[[], T], limit_s: float) -> T:
    """`work()` under a time limit (UserCodeTimeout) and ■ (the tool ends as cancelled, like
    run_python): the code it calls may be a library's, running the user's objects' code."""
    with time_limited(limit_s) as state:
        try:
            return work()
        except KeyboardInterrupt:
            if state.interrupted:
                raise asyncio.CancelledError("interrupted by the user") from None
            raise


class ListVariablesArgs(BaseModel):
    pass


@tool("list_variables", ToolKind.READ_ONLY, ListVariablesArgs)
async def list_variables(args: ListVariablesArgs, ctx: ToolContext) -> str:
    """List the user's variables in the notebook kernel: name, type, shape or length, and a
    short repr. Modules and names starting with "_" are left out. Use describe_variable for
    one variable in depth."""
    ns = user_namespace(ctx, "list_variables")
    names = _visible_names(ns, getattr(ctx.kernel, "hidden_names", None))
    if not names:
        return "no user variables yet"
    lines: list[str] = []
    for name in names[:MAX_LISTED_VARIABLES]:
        limit_s = _limit(LIST_LIMIT_S, ctx)
        if limit_s is None:
            lines.append(f"[... stopped at the turn's time limit; {len(names) - len(lines)} not shown]")
            break
        lines.append(_variable_line(name, ns[name], limit_s, values=ctx.variable_values))
    if len(names) > MAX_LISTED_VARIABLES:
        lines.append(
            f"[... {len(names) - MAX_LISTED_VARIABLES} more variables not shown; use describe_variable with a name]"
        )
    return "\n".join(lines)


# -- describe_variable -------------------------------------------------------------------


def _lookup(ns: dict[str, Any], name: str, hidden: Mapping[str, Any] | None) -> Any:
    """A user variable, or a public attribute path on one like `model.config`.

    Only names list_variables shows are roots, no step may start with "_" (`f.__globals__`
    reaches a module's namespace) and no step may be a module or the process environment:
    `pathlib.os.environ` once sent an API key to the provider without any approval."""
    root, *attributes = name.strip().split(".")
    if root not in ns or root not in _visible_names(ns, hidden):
        if isinstance(ns.get(root), types.ModuleType):
            raise _module_refusal(root, ns[root])
        raise _unknown_name_error(ns, name)
    obj = ns[root]
    for depth, attribute in enumerate(attributes, start=1):
        path = ".".join([root, *attributes[:depth]])
        if not attribute.isidentifier() or attribute.startswith("_"):
            raise ToolError(
                f"cannot get {path}: describe_variable follows public attributes only (no '_' "
                "names); use run_python to look further"
            )
        try:
            obj = getattr(obj, attribute)
        except Exception as error:
            raise ToolError(f"cannot get {path}: {type(error).__name__}: {error}") from None
        if isinstance(obj, types.ModuleType):
            raise _module_refusal(path, obj)
        if obj is os.environ:
            raise ToolError(f"{path} is the process environment; describe_variable does not show it")
    return obj


def _module_refusal(path: str, module: types.ModuleType) -> ToolError:
    return ToolError(
        f"{path} is the module {module.__name__}; describe_variable describes the user's "
        "variables, not modules or what they hold"
    )


def _unknown_name_error(ns: dict[str, Any], name: str) -> ToolError:
    names = _visible_names(ns)
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    if close:
        return ToolError(f"no variable named {name!r}; close names: {', '.join(close)}")
    some = ", ".join(names[:10]) or "none yet"
    return ToolError(f"no variable named {name!r}; variables include: {some}")


def _describe_dataframe(df: Any) -> str:
    pd = sys.modules["pandas"]
    columns = pd.DataFrame({"dtype": df.dtypes.astype(str), "non-null": df.notna().sum(), "nulls": df.isna().sum()})
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
    numeric = np.issubdtype(array.dtype, np.number) and not np.issubdtype(array.dtype, np.complexfloating)
    if numeric and array.size:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            lines.append(f"min {np.nanmin(array)}, max {np.nanmax(array)}, mean {np.nanmean(array)}")
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
    return "\n".join([f"{type(obj).__name__} of length {len(obj)}", f"item types: {kinds or '—'}", _repr(obj)])


def _describe_callable(obj: Any) -> str:
    doc = inspect.getdoc(obj) or "(no docstring)"
    kind = "class" if inspect.isclass(obj) else "function"
    module = getattr(obj, "__module__", None) or "?"
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))
    return f"{kind} {module}.{name}{_signature(obj)}\n{cap_text(doc, 3000)}"


def _describe_untrusted(obj: object) -> str:
    """Type and the names and types of its instance attributes: nothing of its own runs."""
    cls = type(obj)
    lines = [
        f"type: {cls.__module__}.{cls.__qualname__}",
        "(its repr, len and properties are its own code and were not run; use run_python to look inside)",
    ]
    try:
        attributes = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        attributes = None
    if isinstance(attributes, dict):
        public = [(k, v) for k, v in attributes.items() if isinstance(k, str) and not k.startswith("_")]
        shown = ", ".join(f"{k} ({type(v).__name__})" for k, v in public[:40])
        more = f", … {len(public) - 40} more" if len(public) > 40 else ""
        lines.append(f"attributes: {shown or '(none public)'}{more}")
    return "\n".join(lines)


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
        return cap_text(_long.repr(obj) if isinstance(obj, dict | list | tuple | set | frozenset) else repr(obj), 4000)
    except Exception as error:
        return f"<repr failed: {type(error).__name__}: {error}>"


def _describe(obj: object) -> str:
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return _describe_callable(obj)
    if not is_trusted(obj):
        return _describe_untrusted(obj)
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
    return _describe_other(obj)


# -- privacy.variables = "schema": the shape of the data, none of its values -----------------


def _schema_columns(obj: object) -> str:
    """`name: dtype, …` of a DataFrame's columns ("" for anything else)."""
    if not _is_instance(obj, "pandas", "DataFrame"):
        return ""
    dtypes = obj.dtypes  # type: ignore[attr-defined]
    pairs = [f"{column}: {dtype}" for column, dtype in itertools.islice(dtypes.items(), 60)]
    more = f", … {len(dtypes) - 60} more" if len(dtypes) > 60 else ""
    return ", ".join(pairs) + more


def _describe_schema(obj: object) -> str:
    """Type, shape, dtypes and column names; no head, describe, repr or element values."""
    note = "(privacy.variables = schema: values are not shown)"
    if inspect.isclass(obj) or inspect.isroutine(obj):
        return f"{_type_label(obj)} {getattr(obj, '__qualname__', type(obj).__name__)}\n{note}"
    cls = type(obj)
    lines = [f"type: {cls.__module__}.{cls.__qualname__}"]
    if _is_instance(obj, "pandas", "DataFrame"):
        lines += [
            f"DataFrame: {obj.shape[0]} rows × {obj.shape[1]} columns",  # type: ignore[attr-defined]
            f"index: {type(obj.index).__name__} (dtype {obj.index.dtype})",  # type: ignore[attr-defined]
            f"columns (name: dtype): {_schema_columns(obj)}",
        ]
    elif _is_instance(obj, "pandas", "Series"):
        lines.append(f"Series {obj.name!r}: {len(obj)} values, dtype {obj.dtype}")  # type: ignore[attr-defined, arg-type]
    elif _is_instance(obj, "numpy", "ndarray"):
        lines.append(f"ndarray: shape {obj.shape}, dtype {obj.dtype}")  # type: ignore[attr-defined]
    elif is_trusted(obj):
        size = _size_label(obj)
        if size:
            lines.append(size)
        if isinstance(obj, dict | list | tuple | set | frozenset):
            items = obj.values() if isinstance(obj, dict) else obj
            kinds = Counter(type(item).__name__ for item in itertools.islice(items, 10_000))
            lines.append("item types: " + (", ".join(f"{k} × {n}" for k, n in kinds.most_common(5)) or "—"))
    lines.append(note)
    return "\n".join(lines)


class DescribeVariableArgs(BaseModel):
    name: str = Field(
        description=(
            "A user variable's name (as list_variables shows them), or a public attribute path "
            "on one like 'model.config'; modules and '_' names are refused."
        )
    )


@tool("describe_variable", ToolKind.READ_ONLY, DescribeVariableArgs)
async def describe_variable(args: DescribeVariableArgs, ctx: ToolContext) -> str:
    """Describe one variable of the notebook kernel in depth. DataFrame: shape, dtypes, null
    counts, head(5) and describe(); Series likewise; NumPy arrays: shape, dtype, min/max/mean
    and a small repr; dicts and lists: length, item types and a short repr; builtin values:
    type and repr; objects of other classes: type and attribute names (their own repr is not
    run)."""
    ns = user_namespace(ctx, "describe_variable")
    limit_s = _limit(DESCRIBE_LIMIT_S, ctx)
    if limit_s is None:
        raise ToolError("the turn's time limit has passed; describe_variable did not run")
    hidden = getattr(ctx.kernel, "hidden_names", None)
    try:
        text = _limited(lambda: _describe_found(ns, args.name, hidden, values=ctx.variable_values), limit_s)
    except UserCodeTimeout:
        raise ToolError(
            f"describing {args.name} ran past {limit_s:.3g} s (its repr or a property is slow) "
            "and was stopped; use run_python with timeout_s to look at parts of it"
        ) from None
    return f"{args.name}: {cap_text(text, MAX_DESCRIPTION_CHARS)}"


def _describe_found(ns: dict[str, Any], name: str, hidden: Mapping[str, Any] | None, *, values: bool = True) -> str:
    obj = _lookup(ns, name, hidden)  # a property on the path is user code too: inside the limit
    try:
        return _describe(obj) if values else _describe_schema(obj)
    except Exception as error:
        return f"type: {type(obj).__name__}\n(description failed: {type(error).__name__}: {error})"


VARIABLE_TOOLS: list[Tool] = [list_variables, describe_variable]
"""The variable tools: they need `ToolContext.kernel` and say so when it is missing."""
