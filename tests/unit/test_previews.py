"""Approval previews (PendingCall.preview): what a call would change, as plain text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from blitz_kernel.engine.events import PermissionRequest
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.tools import builtin_tools
from blitz_kernel.tools.registry import ToolContext

from .conftest import ScriptedApprover, call, tool_step

TOOLS = {t.name: t for t in builtin_tools()}


async def preview(name: str, ctx: ToolContext, **arguments: Any) -> str | None:
    tool = TOOLS[name]
    assert tool.preview is not None
    return await tool.preview(tool.parse_arguments(json.dumps(arguments)), ctx)


async def test_write_file_shows_a_unified_diff_and_a_new_file_as_added_lines(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path)
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    assert await preview("write_file", ctx, path="a.txt", content="one\n2\nthree\n") == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three"
    )
    assert await preview("write_file", ctx, path="new/b.py", content="x = 1\ny = 2\n") == (
        "--- /dev/null\n+++ b/new/b.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2"
    )
    assert not (tmp_path / "new").exists()  # a preview never writes


async def test_a_long_diff_is_folded_with_a_line_count(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path)
    text = await preview("write_file", ctx, path="big.txt", content="".join(f"line {i}\n" for i in range(500)))
    assert text is not None
    lines = text.splitlines()
    assert len(lines) == 121 and lines[-1] == "[... 383 more diff lines]"


async def test_edit_file_shows_the_edit_or_why_it_would_fail(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path)
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    assert await preview("edit_file", ctx, path="m.py", old="return 1", new="return 2") == (
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2"
    )
    failing = await preview("edit_file", ctx, path="m.py", old="return 3", new="x")
    assert (
        failing
        == "(no preview: this edit would fail: old text not found in m.py; read the file and copy the text exactly)"
    )
    outside = await preview("write_file", ctx, path="/etc/passwd", content="x")
    assert outside is not None and outside.startswith("(no preview: ") and "outside the workspace" in outside


async def test_notebook_edit_shows_the_old_and_new_source_and_run_python_the_code(tmp_path: Path) -> None:
    notebook = tmp_path / "n.ipynb"
    notebook.write_text(
        json.dumps(
            {
                "nbformat": 4,
                "nbformat_minor": 5,
                "metadata": {},
                "cells": [
                    {
                        "cell_type": "code",
                        "id": "c",
                        "metadata": {},
                        "source": ["df.plot()\n", "plt.show()"],
                        "outputs": [],
                        "execution_count": None,
                    }
                ],
            }
        )
    )

    class Kernel:
        user_ns = {"__session__": str(notebook)}
        hidden_names: dict[str, Any] = {}

    ctx = ToolContext(workspace=tmp_path, kernel=Kernel())
    assert await preview("notebook_edit", ctx, action="replace", index=0, source="df.plot(kind='bar')") == (
        "cell 0 (code) before:\ndf.plot()\nplt.show()\n\ncell 0 (code) after:\ndf.plot(kind='bar')"
    )
    assert await preview("notebook_edit", ctx, action="insert", index=1, source="# Notes", cell_type="markdown") == (
        "new markdown cell at index 1:\n# Notes"
    )
    assert await preview("run_python", ctx, code="df.describe()") == "df.describe()"


async def test_the_permission_request_carries_the_preview(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    model = ScriptedModel([tool_step(call("write_file", path="a.txt", content="new\n")), {"text": "ok"}])
    workspace = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "home")
    approver = ScriptedApprover("deny")
    await workspace.run("change a", approver=approver)
    [request] = approver.requests
    assert isinstance(request, PermissionRequest)
    assert request.calls[0].preview == "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new"
    assert (tmp_path / "a.txt").read_text() == "old\n"
