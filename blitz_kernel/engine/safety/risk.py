"""`ask-if-risky` for run_python: run code without asking only when nothing in it is flagged.

A convenience, not a sandbox: Python can reach anything (`getattr(__builtins__, "op" + "en")`),
so this reads the code the way a reviewer skims it and flags what plainly reaches outside the
namespace. Flagged code asks, and the card says why ("writes a file: sales.to_csv('out.csv')").
Flagged:
- imports of os, subprocess, shutil, socket, requests, urllib, httpx (and their submodules),
  and pathlib writes (`write_text`, `write_bytes`, `unlink`, `rmdir`, `mkdir`, `rename`, …);
- eval / exec / compile / __import__;
- open(...) for writing (a mode with w, a, x or +);
- DataFrame writers (`to_csv`, `to_parquet`, `to_sql`, `to_excel`, `to_json`, `to_pickle`,
  `to_feather`, `to_hdf`, `to_html`, `to_stata`, …) and `savefig` to a path;
- `!` shell lines and `%` / `%%` magics (`%pip` included);
- `del` of a name (a user variable);
- code that does not parse.
"""

from __future__ import annotations

import ast

RISKY_MODULES = frozenset({"os", "subprocess", "shutil", "socket", "requests", "urllib", "httpx"})
DYNAMIC_CODE = frozenset({"eval", "exec", "compile", "__import__"})
PATH_WRITERS = frozenset(
    {"write_text", "write_bytes", "unlink", "rmdir", "mkdir", "rename", "replace", "touch", "chmod", "symlink_to"}
)
FRAME_WRITERS = frozenset(
    {
        "to_csv",
        "to_parquet",
        "to_sql",
        "to_excel",
        "to_json",
        "to_pickle",
        "to_feather",
        "to_hdf",
        "to_html",
        "to_stata",
        "to_orc",
        "to_xml",
        "to_latex",
        "to_markdown",
        "write_csv",
        "write_parquet",
        "savefig",
        "save",
        "savez",
        "tofile",
        "dump",
    }
)
MAX_REASON_CHARS = 80


def risky_reasons(code: str) -> list[str]:
    """Why `code` should be asked about; empty when nothing is flagged."""
    shell = _shell_lines(code)
    if shell:
        return shell
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [f"does not parse ({exc.msg}, line {exc.lineno})"]
    finder = _Finder(code)
    finder.visit(tree)
    return finder.reasons


def _shell_lines(code: str) -> list[str]:
    reasons = []
    for line in code.splitlines():
        stripped = line.lstrip()
        if stripped.startswith("!"):
            reasons.append(f"runs a shell command: {_short(stripped)}")
        elif stripped.startswith("%"):
            reasons.append(f"runs a magic: {_short(stripped)}")
    return reasons


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


class _Finder(ast.NodeVisitor):
    def __init__(self, code: str) -> None:
        self.code = code
        self.reasons: list[str] = []

    def _flag(self, what: str, node: ast.AST) -> None:
        source = ast.get_source_segment(self.code, node) or ""
        self.reasons.append(f"{what}: {_short(source)}" if source else what)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.split(".")[0] in RISKY_MODULES:
                self._flag(f"imports {alias.name}", node)
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.module.split(".")[0] in RISKY_MODULES:
            self._flag(f"imports from {node.module}", node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self._flag("deletes a variable", node)
                break
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in DYNAMIC_CODE:
                self._flag(f"runs dynamic code ({func.id})", node)
            elif func.id == "open" and _opens_for_writing(node):
                self._flag("writes a file", node)
        elif isinstance(func, ast.Attribute):
            if func.attr in FRAME_WRITERS and (node.args or node.keywords):
                self._flag("writes a file", node)
            elif func.attr in PATH_WRITERS:
                self._flag("changes the file system", node)
            elif func.attr == "open" and _opens_for_writing(node):
                self._flag("writes a file", node)
            elif func.attr in {"system", "popen", "remove", "run", "call", "Popen"} and _on_module(func):
                self._flag("runs a command or removes a file", node)
        self.generic_visit(node)


def _on_module(func: ast.Attribute) -> bool:
    return isinstance(func.value, ast.Name) and func.value.id in RISKY_MODULES


def _opens_for_writing(node: ast.Call) -> bool:
    mode: ast.expr | None = node.args[1] if len(node.args) > 1 else None
    for keyword in node.keywords:
        if keyword.arg == "mode":
            mode = keyword.value
    if mode is None:
        return False
    if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
        return True  # a mode we cannot read is a mode we cannot vouch for
    return any(flag in mode.value for flag in "wax+")
