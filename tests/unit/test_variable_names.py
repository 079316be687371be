"""The names and types inline completion sends (tools/variable_names.py): list_variables'
choice of names, types read from `type()` alone, and the caps the server checks."""

from __future__ import annotations

import types

from blitz_kernel.tools.variable_names import MAX_NAME_CHARS, MAX_VARIABLES, variable_types


class Meta(type):
    @property
    def __name__(cls) -> str:  # type: ignore[override]
        raise AssertionError("a metaclass's __name__ ran")


class Odd(metaclass=Meta):
    pass


class Lying:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise AssertionError("__class__ ran")

    def __repr__(self) -> str:
        raise AssertionError("__repr__ ran")


def test_types_come_from_type_alone_and_no_code_of_the_objects_runs() -> None:
    ns = {"odd": Odd(), "lying": Lying(), "Odd": Odd, "f": len, "g": lambda: 1, "n": 1}
    assert [(v.name, v.type) for v in variable_types(ns)] == [
        ("odd", "Odd"),
        ("lying", "Lying"),
        ("Odd", "class"),
        ("f", "function"),
        ("g", "function"),
        ("n", "int"),
    ]


def test_the_users_names_only_like_list_variables() -> None:
    shell_open = object()
    ns = {"os": types.ModuleType("os"), "_x": 1, "In": [], "open": shell_open, "mine": shell_open, 3: "not a name"}
    assert [v.name for v in variable_types(ns, {"open": shell_open})] == ["mine"]


def test_the_newest_are_kept_and_long_names_left_out() -> None:
    ns: dict[str, object] = {f"v{i}": i for i in range(MAX_VARIABLES + 20)}
    ns["x" * (MAX_NAME_CHARS + 1)] = 1
    kept = variable_types(ns)
    assert len(kept) == MAX_VARIABLES
    assert kept[0].name == "v20" and kept[-1].name == f"v{MAX_VARIABLES + 19}"
    long_type = type("T" * 300, (), {})()
    [only] = variable_types({"t": long_type})
    assert len(only.type) == MAX_NAME_CHARS
