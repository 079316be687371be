"""ARCHITECTURE.md's import rules, checked on the source: imports point inward only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "blitz_kernel"
FRONT_END_LIBRARIES = ("IPython", "ipywidgets", "anywidget", "ipykernel")


def imported_modules(path: Path) -> set[str]:
    """Absolute names of everything a module imports (relative imports resolved)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level]
                names.add(".".join([*base, node.module] if node.module else base))
            else:
                names.add(node.module or "")
    return names


def modules_in(*layers: str) -> list[Path]:
    return sorted(p for layer in layers for p in (PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize(
    "path", modules_in("engine", "core", "models", "tools"), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_lower_layers_never_import_the_front_end(path: Path):
    imported = imported_modules(path)
    assert not [m for m in imported if m.split(".")[0] in FRONT_END_LIBRARIES]
    assert not [m for m in imported if m.startswith("blitz_kernel.notebook")]


@pytest.mark.parametrize(
    "path", modules_in("engine", "core", "models", "tools"), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_only_the_adapter_imports_litellm(path: Path):
    if path.name == "litellm_model.py":
        return
    assert not [m for m in imported_modules(path) if m.split(".")[0] == "litellm"]


@pytest.mark.parametrize("path", modules_in("core", "models", "tools"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_models_tools_and_core_do_not_import_the_engine(path: Path):
    assert not [m for m in imported_modules(path) if m.startswith("blitz_kernel.engine")]
