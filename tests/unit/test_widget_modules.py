"""The widget modules the package ships (static/turn.js and undo.js) are the built ones, each a
single ES module that anywidget can load on its own: no import left in it (nothing would
resolve one in the browser), a default export, and the banner naming the TypeScript it was built
from. That they match their sources is scripts/js_test.sh's check (docs/widget.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "blitz_kernel" / "notebook" / "widgets" / "static"
IMPORT = re.compile(r"^\s*import\b|\bimport\s*\(|^\s*export\s+\*\s+from|^\s*export\s+\{[^}]*\}\s+from", re.M)


@pytest.mark.parametrize("entry", ["turn", "undo"])
def test_the_shipped_module_is_one_self_contained_build(entry: str):
    source = (STATIC / f"{entry}.js").read_text(encoding="utf-8")
    assert source.startswith(f"// Built from labextension/widget/src/{entry}.ts by `npm run build:widget`")
    assert IMPORT.search(source) is None
    assert re.search(r"export\s*\{[^}]*\b\w+ as default\b", source)
    assert (Path(__file__).resolve().parents[2] / "labextension" / "widget" / "src" / f"{entry}.ts").is_file()


def test_the_import_pattern_finds_imports():
    assert IMPORT.search('const x = 1;\nimport { h } from "./dom.js";\n')
    assert IMPORT.search('const m = await import("./dom.js");')
    assert IMPORT.search('export { h } from "./dom.js";')
    assert IMPORT.search("const important = 1; export { important as default };") is None
