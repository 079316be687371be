"""The names and types of the user's variables, for inline completion's prompt
(docs/completion.md).

The front end asks for them whenever the kernel is idle and the user pauses in typing, with no
approval and no turn, so nothing of the objects' own code may run: not their repr or len, and
not even an `isinstance`, which reads an object's `__class__` (a property a class can define).
Only `type(obj)` is read. Which names count is list_variables' rule (variables.py uses
`is_user_variable` too): no `_` names, no modules, none of IPython's own.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_VARIABLES", "UserVariable", "VariablesReply", "is_user_variable", "variable_types"]

MAX_VARIABLES = 100
"""How many variables go along with one completion request (the newest)."""
MAX_NAME_CHARS = 100
"""A longer name is left out (a cut name would be a wrong one); a longer type name is cut."""
HIDDEN_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
"""IPython's own names in the user namespace: not the user's variables."""
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType)
_TYPE_NAME = vars(type)["__name__"]
"""`type.__name__` itself: a metaclass may define its own `__name__` property; this is not it."""


class UserVariable(BaseModel):
    """One of the user's variables: its name and its type's name (`df`, `DataFrame`)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    type: str = Field(max_length=MAX_NAME_CHARS)


class VariablesReply(BaseModel):
    """The kernel's answer on a `blitz.variables` comm the front end opened (then it closes)."""

    kind: Literal["variables"] = "variables"
    variables: list[UserVariable] = Field(max_length=MAX_VARIABLES)
    """The newest last."""


def is_user_variable(name: object, value: object, hidden: Mapping[str, Any] | None = None) -> bool:
    """Whether `name` is a variable of the user's, like IPython's %who: a name the shell put
    there itself (`open`, `In`…) is not, unless the user rebound it."""
    return (
        isinstance(name, str)
        and not name.startswith("_")
        and name not in HIDDEN_NAMES
        and not (hidden is not None and name in hidden and hidden[name] is value)
        and not issubclass(type(value), types.ModuleType)
    )


def type_name(obj: object) -> str:
    """ "class", "function", or the name of the object's type, from `type(obj)` alone."""
    cls = type(obj)
    if issubclass(cls, type):
        return "class"
    if issubclass(cls, _FUNCTION_TYPES):
        return "function"
    name = _TYPE_NAME.__get__(cls)
    return name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"


def variable_types(ns: Mapping[Any, Any], hidden: Mapping[str, Any] | None = None) -> list[UserVariable]:
    """The user's variables in the order they were first defined, at most the newest
    `MAX_VARIABLES`; names longer than `MAX_NAME_CHARS` are left out."""
    found = [
        UserVariable(name=name, type=type_name(value))
        for name, value in list(ns.items())
        if is_user_variable(name, value, hidden) and len(name) <= MAX_NAME_CHARS
    ]
    return found[-MAX_VARIABLES:]
