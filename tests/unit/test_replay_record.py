"""Replay from a saved cell's turn record (docs/replay.md): no transcript, no store, no model
call; results compared on the part the record kept; what the record lacks is said."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from blitz_kernel.cli.replay_run import replay_copy
from blitz_kernel.engine.turn.replay_record import record_calls
from blitz_kernel.notebook.magics import BlitzCellError
from tests.helpers.workspaces import scripted_workspace


def record(*calls: dict) -> dict:
    return {"version": 1, "session": "sales", "turn_index": 2, "tool_calls": list(calls)}


def entry(number: int, name: str, args: dict, result: str, status: str = "done", **extra: object) -> dict:
    return {"id": f"c{number}", "name": name, "args": args, "status": status, "result": result, **extra}


async def test_a_record_replays_same_changed_failed_and_says_what_it_lacks(tmp_path: Path) -> None:
    (tmp_path / "same.txt").write_text("unchanged\n")
    (tmp_path / "data.csv").write_text("month,sales\njan,10\nfeb,15\n")
    long_text = "x" * 1000 + "\n"
    (tmp_path / "long.txt").write_text(long_text)
    workspace, model = scripted_workspace(tmp_path, [{"text": "never asked"}])
    saved = record(
        entry(1, "read_file", {"path": "same.txt"}, "     1\tunchanged"),
        entry(2, "read_file", {"path": "data.csv"}, "     1\tmonth,sales\n     2\tjan,10\n     3\tfeb,12"),
        entry(3, "read_file", {"path": "gone.txt"}, "     1\there"),
        entry(4, "write_file", {"path": "big.txt", "content": "y" * 1999 + "…"}, "wrote", args_cut=True),
        entry(5, "read_file", {"path": "long.txt"}, ""),
    )
    report = await workspace.turns.replay_record(saved)
    assert model.requests == []  # no model call
    assert workspace.session("sales").history == []  # nothing added to any conversation
    assert [(c.tool, c.status) for c in report.calls] == [
        ("read_file", "same"),
        ("read_file", "changed"),
        ("read_file", "failed"),
        ("write_file", "skipped"),
        ("read_file", "changed"),
    ]
    assert "feb,12" in report.calls[1].detail and "feb,15" in report.calls[1].detail
    assert "its arguments were cut in the notebook's record" in report.calls[3].detail
    assert not (tmp_path / "big.txt").exists()
    assert (report.session, report.turn, report.source) == ("sales", 3, "notebook")
    assert report.summary().startswith("replayed turn 3 of session 'sales' (from the notebook's record): 5 calls")


async def test_a_long_result_is_compared_on_the_part_the_record_kept(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {n}\n" for n in range(200)))
    workspace, _ = scripted_workspace(tmp_path, [{"text": "never asked"}])
    first = await workspace.turns.replay_record(record(entry(1, "read_file", {"path": "long.txt"}, "")))
    kept = first.calls[0].now[:199] + "…"
    report = await workspace.turns.replay_record(record(entry(1, "read_file", {"path": "long.txt"}, kept)))
    assert report.calls[0].status == "same"
    assert "compared on the first 200 characters the notebook kept" in report.calls[0].detail


def test_a_record_without_results_or_with_an_old_cut_argument_is_not_replayed() -> None:
    calls, results, missing = record_calls(
        record(
            {"id": "a", "name": "read_file", "args": {"path": "p"}}, entry(2, "edit_file", {"x": "z" * 1999 + "…"}, "")
        )
    )
    assert [c.name for c in calls] == ["read_file", "edit_file"] and list(results) == ["c2"]
    assert missing == {
        "a": "the record has no result for it",
        "c2": "its arguments were cut in the notebook's record (a value over 2,000 characters)",
    }


def test_the_copy_to_run_replays_cells_with_records_and_never_calls_the_model(tmp_path: Path) -> None:
    nb = {
        "cells": [
            {"cell_type": "code", "source": "import pandas", "outputs": []},
            {"cell_type": "code", "source": "%%blitz\nGo.", "outputs": [{"metadata": {"blitz": record()}}]},
            {"cell_type": "code", "source": ["%%blitz -s x\n", "Later."], "outputs": []},
        ]
    }
    copy, replayed, missing = replay_copy(nb, tmp_path / "my nb.ipynb")
    assert (replayed, missing) == ([1], [2])
    assert copy["cells"][1]["source"] == f"%blitz_replay --notebook '{tmp_path / 'my nb.ipynb'}' --index 1"
    assert "not replayed" in copy["cells"][2]["source"] and copy["cells"][0]["source"] == "import pandas"
    assert nb["cells"][1]["source"] == "%%blitz\nGo."  # the saved notebook itself is left as it was


def test_blitz_replay_of_a_cell_this_kernel_did_not_run_reads_the_saved_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("BLITZ_MODEL", "BLITZ_API_BASE", "BLITZ_AGENT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "same.txt").write_text("unchanged\n")
    saved = {
        "cells": [
            {"cell_type": "markdown", "source": "# Sales"},
            {
                "cell_type": "code",
                "execution_count": 4,
                "source": "%%blitz\nRead it.",
                "outputs": [
                    {"metadata": {"blitz": record(entry(1, "read_file", {"path": "same.txt"}, "     1\tunchanged"))}}
                ],
            },
        ]
    }
    (tmp_path / "sales.ipynb").write_text(json.dumps(saved))
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "sales.ipynb"))
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "blitz_kernel")
    try:
        asyncio.run(shell.run_line_magic("blitz_replay", "4 -o rep"))
        report = shell.user_ns["rep"]
        assert (report.source, [c.status for c in report.calls]) == ("notebook", ["same"])
        with pytest.raises(BlitzCellError, match=r"sales.ipynb has no cell that ran as In\[7\]"):
            asyncio.run(shell.run_line_magic("blitz_replay", "7"))
        with pytest.raises(BlitzCellError, match="cell 0 of sales.ipynb has no turn record in its saved outputs"):
            asyncio.run(shell.run_line_magic("blitz_replay", "--index 0"))
    finally:
        shell.run_line_magic("unload_ext", "blitz_kernel")


def test_the_cell_record_says_when_it_cut_a_calls_arguments() -> None:
    from blitz_kernel.engine.events import ToolCallEvent, TurnStarted
    from blitz_kernel.notebook.widgets.state import TurnState
    from blitz_kernel.notebook.widgets.static import turn_record

    state = TurnState(turn_id="t1", prompt="", session="")
    state.apply(TurnStarted(session="s", turn_index=0, prompt="go", agent="blitz", model="m"))
    state.apply(ToolCallEvent(id="c1", name="write_file", args={"path": "a", "content": "x" * 5000}))
    state.apply(ToolCallEvent(id="c2", name="read_file", args={"path": "b"}))
    cut, whole = turn_record(state, "")["tool_calls"]
    assert cut["args_cut"] is True and len(cut["args"]["content"]) == 2000
    assert "args_cut" not in whole
    assert record_calls(record({**cut, "result": "", "status": "done"}))[2] == {
        "c1": "its arguments were cut in the notebook's record (a value over 2,000 characters)"
    }
