"""Showing the user's objects without running the user's code.

An object's `__repr__`, `__str__`, `__len__` and properties are code its author wrote: they
can take 20 s, print secrets or change state, and list_variables/describe_variable need no
approval. So the variable tools call them only for types whose code we know: builtins, a few
standard-library value types, and the data libraries people inspect all day (pandas, numpy,
polars, pyarrow). Anything else is shown by its type alone, like `<Model instance at 0x…>`.
Whatever we do call still runs under a time limit and the ■ button (signals.time_limited):
a library's repr calls `__str__` on the objects in an object column, for one.
"""

from __future__ import annotations

import reprlib
from typing import Any

__all__ = ["SafeRepr", "is_trusted", "opaque"]

TRUSTED_MODULES = frozenset({"builtins", "datetime", "decimal", "fractions", "pathlib", "uuid", "collections", "types"})
"""Standard-library modules whose types have their own, known reprs (exact module names)."""
TRUSTED_LIBRARIES = frozenset({"pandas", "numpy", "polars", "pyarrow"})
"""Top-level packages whose types we call into (any sub-module)."""


def is_trusted(obj: object) -> bool:
    """Whether calling `obj`'s repr, len and attributes runs only code we know."""
    module = getattr(type(obj), "__module__", None)
    if not isinstance(module, str):
        return False
    return module in TRUSTED_MODULES or module.split(".")[0] in TRUSTED_LIBRARIES


def opaque(obj: object) -> str:
    """What an untrusted object looks like: its type and identity, no code of its own run."""
    return f"<{type(obj).__name__} instance at {id(obj):#x}>"


class SafeRepr(reprlib.Repr):
    """reprlib's shortened repr that never calls an untrusted object's `__repr__`, also not
    for the items inside a list or dict (a builtin container's repr would call theirs)."""

    def __init__(self, *, chars: int, items: int, level: int) -> None:
        super().__init__()
        self.maxstring = self.maxother = chars
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = items
        self.maxdict = max(items - 2, 1)
        self.maxlevel = level

    def repr1(self, x: Any, level: int) -> str:
        if not is_trusted(x):
            return opaque(x)
        return super().repr1(x, level)
