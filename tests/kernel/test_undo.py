"""`%blitz_undo` and `%blitz_rewind` in a real kernel: files, a cell edited through the
.ipynb fallback (no front end is connected) and a rebound DataFrame come back; the conversation
goes, or stays, as asked; a conflict is skipped and then forced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeOpenAIServer

from .conftest import blitz_kernel_on
from .driver import KernelDriver

CELLS = [
    {"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# Sales"},
    {
        "cell_type": "code",
        "id": "plot",
        "metadata": {},
        "execution_count": 2,
        "source": "sales.plot()",
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "plotted\n"}],
    },
]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("undo")
    (root / "analysis.ipynb").write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": CELLS})
    )
    return root


@pytest.fixture(scope="module")
def kernel(
    server: FakeOpenAIServer, workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KernelDriver]:
    home = tmp_path_factory.mktemp("home")
    driver = blitz_kernel_on(server, workspace, home, JPY_SESSION_NAME=str(workspace / "analysis.ipynb"))
    yield driver
    driver.shutdown()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def prompts(server: FakeOpenAIServer) -> list[str]:
    """The user prompts the model was sent in its last request."""
    return [m["content"] for m in server.requests[-1].body["messages"] if m["role"] == "user"]


def ok(cell: Any) -> Any:
    assert cell.status == "ok", cell.reply
    return cell


def test_undo_puts_back_files_a_cell_and_a_rebound_dataframe(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace: Path
):
    (workspace / "report.md").write_text("old report\n")
    ok(
        kernel.run(
            "import pandas as pd\nsales = pd.DataFrame({'a': range(7), 'b': range(7), 'c': range(7)})\noriginal = sales"
        )
    )
    server.enqueue(
        {
            "tool_calls": [
                call("write_file", path="report.md", content="new report\n"),
                call("write_file", path="out/summary.txt", content="7 rows\n"),
                call("notebook_edit", action="replace", index=1, source="sales.plot(kind='bar')"),
                call("run_python", code="sales = sales.assign(d=sales.a * 2)"),
            ]
        },
        {"text": "Updated."},
    )
    ok(kernel.run("%%blitz -s everything --approve allow\nUpdate the report, the plot and the data."))
    assert (workspace / "report.md").read_text() == "new report\n"
    assert json.loads((workspace / "analysis.ipynb").read_text())["cells"][1]["source"] == "sales.plot(kind='bar')"
    results = [m["content"] for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert any("namespace: rebound sales (DataFrame 7×3 → 7×4)" in r for r in results)

    undo = ok(kernel.run("%blitz_undo -s everything"))
    lines = undo.stdout.splitlines()
    assert lines[0] == "undid turn 1 of session 'everything'"
    assert "  files: removed out/summary.txt (the turn created it); restored report.md" in lines  # newest first
    assert "  cells: restored cell 1 (id plot)" in lines
    assert "  variables: restored sales (DataFrame 7×3)" in lines
    assert "  conversation: removed turn 1 from the history (7 messages)" in lines
    assert any(
        line.startswith("  not undone: run_python ran in this turn; what its code did outside") for line in lines
    )
    assert (workspace / "report.md").read_text() == "new report\n".replace("new", "old")
    assert not (workspace / "out" / "summary.txt").exists()
    assert json.loads((workspace / "analysis.ipynb").read_text())["cells"] == CELLS
    assert ok(kernel.run("print(sales is original, sales.shape)")).stdout == "True (7, 3)\n"
    again = ok(kernel.run("%blitz_undo -s everything"))
    assert again.stdout == "nothing to undo in session 'everything'\n"


def test_rewind_two_turns(kernel: KernelDriver, server: FakeOpenAIServer, workspace: Path):
    (workspace / "notes.txt").write_text("v0")
    server.enqueue({"text": "Hello."})
    ok(kernel.run("%%blitz -s rewind\nHi."))
    for version in ("v1", "v2"):
        server.enqueue({"tool_calls": [call("write_file", path="notes.txt", content=version)]}, {"text": version})
        ok(kernel.run(f"%%blitz -s rewind --approve allow\nWrite {version}."))
    rewind = ok(kernel.run("%blitz_rewind 2 -s rewind"))
    assert rewind.stdout.splitlines()[:2] == [
        "undid turn 3, 2 of session 'rewind'",
        "  files: restored notes.txt; restored notes.txt",
    ]
    assert (workspace / "notes.txt").read_text() == "v0"
    server.enqueue({"text": "We only said hello."})
    ok(kernel.run("%%blitz -s rewind\nWhat did we do?"))
    assert prompts(server) == ["Hi.", "What did we do?"]


def test_files_only_keeps_the_conversation_and_conversation_only_keeps_the_files(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace: Path
):
    server.enqueue({"tool_calls": [call("write_file", path="kept.txt", content="agent")]}, {"text": "Wrote it."})
    ok(kernel.run("%%blitz -s files-only --approve allow\nWrite kept.txt."))
    undo = ok(kernel.run("%blitz_undo --files-only -s files-only"))
    assert "conversation" not in undo.stdout and not (workspace / "kept.txt").exists()
    server.enqueue({"text": "Noted."})
    ok(kernel.run("%%blitz -s files-only\nAnd now?"))
    assert prompts(server) == ["Write kept.txt.", "And now?"]

    server.enqueue({"tool_calls": [call("write_file", path="stays.txt", content="agent")]}, {"text": "Wrote it."})
    ok(kernel.run("%%blitz -s talk-only --approve allow\nWrite stays.txt."))
    undo = ok(kernel.run("%blitz_undo --conversation-only -s talk-only"))
    assert undo.stdout.splitlines()[1:] == ["  conversation: removed turn 1 from the history (4 messages)"]
    assert (workspace / "stays.txt").read_text() == "agent"
    server.enqueue({"text": "Fresh start."})
    ok(kernel.run("%%blitz -s talk-only\nAnd now?"))
    assert prompts(server) == ["And now?"]


def test_a_conflict_is_skipped_then_forced(kernel: KernelDriver, server: FakeOpenAIServer, workspace: Path):
    (workspace / "config.ini").write_text("mode = old\n")
    server.enqueue({"tool_calls": [call("write_file", path="config.ini", content="mode = agent\n")]}, {"text": "Set."})
    ok(kernel.run("%%blitz -s conflict --approve allow\nSet the mode."))
    ok(kernel.run("open('config.ini', 'w').write('mode = mine\\n')"))
    skipped = ok(kernel.run("%blitz_undo -s conflict --files-only"))
    assert (
        "  skipped file config.ini: it was changed since the agent wrote it (--force restores it)"
        in skipped.stdout.splitlines()
    )
    assert (workspace / "config.ini").read_text() == "mode = mine\n"
    forced = ok(kernel.run("%blitz_undo -s conflict --files-only --force"))
    assert "  files: restored config.ini" in forced.stdout.splitlines()
    assert (workspace / "config.ini").read_text() == "mode = old\n"


def test_wrong_usage_is_a_usage_error_with_the_usage_line(kernel: KernelDriver):
    both = kernel.run("%blitz_undo --files-only --conversation-only")
    assert both.ename == "UsageError" and "exclude each other" in both.evalue and "usage: %blitz_undo" in both.evalue
    zero = kernel.run("%blitz_rewind 0")
    assert zero.ename == "UsageError" and "usage: %blitz_rewind" in zero.evalue
    unknown = kernel.run("%blitz_undo -s nobody-here")
    assert unknown.stdout == "nothing to undo in session 'nobody-here': it has no turns\n"


def test_a_cell_replaced_through_the_bridge_is_restored_through_it(kernel: KernelDriver, server: FakeOpenAIServer):
    """Last in this module: it connects a (played) front end, which the others must not have."""
    from .test_bridge import PlayedFrontEnd

    cells = [
        {
            "index": 0,
            "id": "intro",
            "cell_type": "markdown",
            "source": "# Sales",
            "execution_count": None,
            "running": False,
            "outputs": [],
        }
    ]

    def live(request: dict[str, Any]) -> dict[str, Any]:
        op, params = request["op"], request["params"]
        if op == "read_cells":
            return {"ok": True, "result": {"path": "analysis.ipynb", "cell_count": len(cells), "cells": cells}}
        assert op == "replace_cell", op
        cell = cells[params["index"]]
        previous, cell["source"] = cell["source"], params["source"]
        return {
            "ok": True,
            "result": {
                "index": params["index"],
                "id": cell["id"],
                "cell_type": cell["cell_type"],
                "previous_source": previous,
                "cell_count": len(cells),
            },
        }

    front_end = PlayedFrontEnd(kernel)
    front_end.connect()
    try:
        server.enqueue(
            {"tool_calls": [call("notebook_edit", action="replace", index=0, source="# Revenue")]}, {"text": "Done."}
        )
        ok(front_end.run("%%blitz -s bridge --approve allow\nRename the title.", live))
        assert cells[0]["source"] == "# Revenue"
        undo = ok(front_end.run("%blitz_undo -s bridge", live))
        assert "  cells: restored cell 0 (id intro)" in undo.stdout.splitlines()
        assert cells[0]["source"] == "# Sales"
        assert [r["op"] for r in front_end.requests] == ["replace_cell", "read_cells", "replace_cell"]
    finally:
        front_end.disconnect()
