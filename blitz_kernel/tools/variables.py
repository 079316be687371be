"""Variable tools: list the user's variables and describe one in depth.

Nothing here imports IPython: the namespace arrives through `ToolContext.kernel.user_ns`, and
pandas/numpy are only looked up in `sys.modules` (an object of theirs implies they are loaded),
so describing a variable never imports a library.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import itertools
import reprlib
import sys
import types
import warnings
from collections import Counter
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from ..core.text import one_line
from .registry import Tool, ToolContext, ToolError, ToolKind, tool
from .run_python import cap_text, user_namespace

__all__ = ["VARIABLE_TOOLS", "describe_variable", "list_variables"]

MAX_DESCRIPTION_CHARS = 20_000
MAX_LISTED_VARIABLES = 300
SHORT_REPR_CHARS = 80
HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
"""IPython's own names in the user namespace: not the user's variables."""


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
    ns = user_namespace(ctx, "list_variables")
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
    ns = user_namespace(ctx, "describe_variable")
    obj = _lookup(ns, args.name)
    try:
        text = _describe(obj)
    except Exception as error:
        text = f"type: {type(obj).__name__}\n(description failed: {type(error).__name__}: {error})"
    return f"{args.name}: {cap_text(text, MAX_DESCRIPTION_CHARS)}"


VARIABLE_TOOLS: list[Tool] = [list_variables, describe_variable]
"""The variable tools: they need `ToolContext.kernel` and say so when it is missing."""
