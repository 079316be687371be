"""The import rules of docs/architecture.md, checked on the source.

Every import counts: module level, function level and `if TYPE_CHECKING:` alike, since a
type-only import still ties two modules together. The package is cut into rooms (a subpackage,
or a root module such as `errors`); rooms sit in layers, and a room imports only from rooms of a
lower layer (and from itself). Rooms of one layer do not import each other. On top of that: no
module-level import cycle at all, no private name imported across modules, no front-end library
below the notebook, and provider libraries only in the model adapters.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "blitz_kernel"
FRONT_END_LIBRARIES = ("IPython", "ipywidgets", "anywidget", "ipykernel", "comm")
PROVIDER_LIBRARIES = {
    "litellm": {"models/litellm_model.py"},
    "openai": {"models/openai_direct.py", "models/litellm_model.py", "models/litellm_errors.py", "models/factory.py"},
}
"""Who may import a provider's SDK: the adapters (the error mapper reads the SDK's error
classes; the factory checks the direct path's client is installed)."""

LAYERS: list[set[str]] = [
    {"errors"},
    {"core"},
    {"config", "models", "tools"},
    {"mcp"},
    {"engine", "engine.events", "engine.tracing", "engine.steering"},
    {"engine.safety"},
    {"engine.store"},
    {"engine.undo"},
    {"engine.turn"},
    {"engine.workspace"},
    {"notebook", "cli", "server"},
    {"blitz_kernel", "__main__", "protocol_schema"},
]
"""Lowest first. `engine.events`, `engine.tracing` and `engine.steering` are the engine's base
modules (what every engine room shares); `engine.workspace` is the composition root."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path) -> Iterator[tuple[str, list[str], int]]:
    """(absolute module, imported names, line) for every import in `path`, at any depth."""
    parts = module_name(path).split(".")
    package = parts if path.name == "__init__.py" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield module, [alias.name for alias in node.names], node.lineno


def package_dependencies(path: Path) -> set[str]:
    """The package's modules `path` imports (a `from package import module` names the module)."""
    modules = all_modules()
    found: set[str] = set()
    for module, names, _line in imports_of(path):
        submodules = [f"{module}.{name}" for name in names if f"{module}.{name}" in modules]
        found.update(submodules)
        if len(submodules) < len(names) or not names:
            while module and module not in modules:
                module = module.rpartition(".")[0]
            if module:
                found.add(module)
    found.discard(module_name(path))
    return {name for name in found if name.startswith("blitz_kernel")}


def room_of(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts:
        return "blitz_kernel"
    if parts[0] == "engine" and len(parts) > 1:
        return f"engine.{parts[1]}"
    return parts[0]


def layer_of(room: str) -> int:
    for index, rooms in enumerate(LAYERS):
        if room in rooms:
            return index
    raise AssertionError(f"room {room!r} is in no layer of docs/architecture.md: add it to LAYERS")


def is_ancestor(module: str, of: str) -> bool:
    """A package a module sits in (importing a submodule runs its package's __init__)."""
    return of.startswith(module + ".")


MODULES = sorted(all_modules().items())
IDS = [str(path.relative_to(PACKAGE)) for _, path in MODULES]


@pytest.mark.parametrize(("name", "path"), MODULES, ids=IDS)
def test_a_room_imports_only_lower_layers(name: str, path: Path) -> None:
    here = room_of(name)
    wrong = [
        f"{dependency} (layer {layer_of(room_of(dependency))})"
        for dependency in package_dependencies(path)
        if room_of(dependency) != here
        and not is_ancestor(dependency, name)
        and layer_of(room_of(dependency)) >= layer_of(here)
    ]
    assert not wrong, f"{name} (room {here}, layer {layer_of(here)}) imports upward or sideways: {wrong}"


def import_graph() -> dict[str, set[str]]:
    return {name: {d for d in package_dependencies(path) if not is_ancestor(d, name)} for name, path in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_there_is_no_import_cycle_at_all() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle_brought_back() -> None:
    graph = import_graph()
    # the cycle the turn loop once had: the setup named the sub-agents service, which ran the loop
    graph["blitz_kernel.engine.turn.setup"].add("blitz_kernel.engine.turn.subagents")
    graph["blitz_kernel.engine.turn.subagents"].add("blitz_kernel.engine.turn.loop")
    assert any("blitz_kernel.engine.turn.setup" in cycle for cycle in cycles(graph))


@pytest.mark.parametrize(("name", "path"), MODULES, ids=IDS)
def test_no_private_name_is_imported_across_modules(name: str, path: Path) -> None:
    private = [
        f"{module}.{imported} (line {line})"
        for module, names, line in imports_of(path)
        if module.startswith("blitz_kernel") or module.startswith(".")
        for imported in names
        if imported.startswith("_") and not imported.startswith("__")
    ]
    assert not private, f"{name} imports private names; make them public and documented, or move them: {private}"


LOWER = [(n, p) for n, p in MODULES if layer_of(room_of(n)) < layer_of("notebook")]


@pytest.mark.parametrize(("name", "path"), LOWER, ids=[str(p.relative_to(PACKAGE)) for _, p in LOWER])
def test_below_the_notebook_nothing_imports_a_front_end_library(name: str, path: Path) -> None:
    imported = [module for module, _names, _line in imports_of(path)]
    assert not [m for m in imported if m.split(".")[0] in FRONT_END_LIBRARIES]


@pytest.mark.parametrize(("name", "path"), MODULES, ids=IDS)
def test_only_the_model_adapters_import_provider_libraries(name: str, path: Path) -> None:
    relative = str(path.relative_to(PACKAGE))
    for module, _names, line in imports_of(path):
        allowed = PROVIDER_LIBRARIES.get(module.split(".")[0])
        assert allowed is None or relative in allowed, f"{relative}:{line} imports {module}"


def test_every_room_is_in_a_layer() -> None:
    rooms = {room_of(name) for name in all_modules()}
    assert rooms <= set().union(*LAYERS), sorted(rooms - set().union(*LAYERS))
