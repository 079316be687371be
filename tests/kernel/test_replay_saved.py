"""Replay from a saved notebook (docs/replay.md): `blitz run --replay` replays each agent cell's
recorded tool calls from the turn record in its saved outputs, in a new kernel, with the store
gone and no model to call, and its exit status says whether anything changed."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from .test_blitz_run import blitz_run, notebook, script


def test_blitz_run_replay_says_whether_the_saved_turns_still_give_their_results(tmp_path: Path):
    (tmp_path / "data.csv").write_text("month,sales\njan,10\nfeb,12\n")
    script(
        tmp_path / "script.json",
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "data.csv"}}]},
        {"tool_calls": [{"name": "run_python", "arguments": {"code": "print(len(open('data.csv').read()))"}}]},
        {"text": "Read it."},
    )
    nb = notebook(
        tmp_path / "analysis.ipynb",
        "%load_ext blitz_kernel",
        "%%blitz --approve allow\nRead data.csv and count its characters.",
        "rows = 2",
    )
    saved = tmp_path / "saved.ipynb"
    first = blitz_run(nb, "--model", "scripted:script.json", "--approve", "allow", "-o", saved, home=tmp_path)
    assert first.returncode == 0, first.stderr
    # the kernel and its store are gone; the script too: a model call would fail
    for path in tmp_path.glob(".blitz/blitz.db*"):
        path.unlink()
    (tmp_path / "script.json").unlink()

    report_path = tmp_path / "replay.json"
    same = blitz_run(saved, "--replay", "--approve", "allow", "--report", report_path, home=tmp_path)
    assert same.returncode == 0, same.stderr
    report = json.loads(report_path.read_text())
    assert report["outcome"] == "same" and [c["cell_index"] for c in report["cells"]] == [1]
    [replay] = report["cells"][0]["reports"]
    assert replay["source"] == "notebook"
    assert [(c["tool"], c["status"]) for c in replay["calls"]] == [("read_file", "same"), ("run_python", "same")]
    assert "cell 1: replayed turn 1 of session 'analysis' (from the notebook's record): 2 calls, 2 same" in same.stderr

    (tmp_path / "data.csv").write_text("month,sales\njan,10\nfeb,15\nmar,20\n")
    out = tmp_path / "replayed.ipynb"
    changed = blitz_run(saved, "--replay", "--approve", "allow", "-o", out, "--report", report_path, home=tmp_path)
    assert changed.returncode == 5, changed.stderr
    report = json.loads(report_path.read_text())
    calls = report["cells"][0]["reports"][0]["calls"]
    assert [c["status"] for c in calls] == ["changed", "changed"]
    assert "mar,20" in calls[0]["detail"] and "feb,12" in calls[0]["detail"]
    assert "blitz run --replay: changed (exit 5)" in changed.stderr
    # the replayed notebook shows the report in the cell; nothing called a model
    cell = nbformat.read(out, as_version=4).cells[1]
    assert "read_file" in cell.outputs[0]["data"]["text/plain"]

    denied = blitz_run(saved, "--replay", home=tmp_path)  # headless deny: run_python is refused now
    assert denied.returncode == 5 and "run_python: failed" in denied.stderr, denied.stderr


def test_replay_of_a_notebook_without_records_is_a_usage_error(tmp_path: Path):
    nb = notebook(tmp_path / "plain.ipynb", "%load_ext blitz_kernel", "%%blitz\nNot run yet.")
    done = blitz_run(nb, "--replay", home=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"blitz run: {nb} has no agent cell with a saved turn record: nothing to replay"
