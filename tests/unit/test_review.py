"""A turn's change list and its partial revert (docs/undo.md): real files in a real workspace
(with its SQLite store), real tools, the ScriptedModel as the model."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.engine.store.checkpoints import FileChange
from blitz_kernel.engine.undo.changes import CellReview, FileReview, VariableReview
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import BlitzError
from tests.helpers.workspaces import scripted_workspace

from .conftest import call, tool_step


@dataclass
class NamespaceKernel:
    user_ns: dict[str, Any] = field(default_factory=dict)
    hidden_names: dict[str, Any] = field(default_factory=dict)
    notebook: Any = None


def two_files_and_a_variable(root: Path, kernel: NamespaceKernel | None = None) -> Workspace:
    (root / "a.txt").write_text("one\ntwo\nthree\n")
    (root / "b.txt").write_text("alpha\n")
    workspace, _ = scripted_workspace(
        root,
        [
            tool_step(
                call("edit_file", path="a.txt", old="two", new="TWO\nand a half"),
                call("write_file", path="b.txt", content="beta\n"),
            ),
            tool_step(call("run_python", code="x = [1, 2, 3]")),
            {"text": "done"},
        ],
        kernel=kernel or NamespaceKernel(user_ns={"x": 1}),
    )
    return workspace


async def test_the_change_list_has_each_file_and_variable_with_its_diff(tmp_path: Path) -> None:
    workspace = two_files_and_a_variable(tmp_path)
    await workspace.run("edit", approve="allow")
    listed = workspace.changes()
    assert [c.id for c in listed.changes] == ["1f1", "1f2", "1v1"]
    a, b, x = listed.changes
    assert isinstance(a, FileReview) and isinstance(b, FileReview) and isinstance(x, VariableReview)
    assert (a.path, a.added, a.removed, a.created, a.status) == ("a.txt", 2, 1, False, "pending")
    assert "-two\n+TWO\n+and a half\n" in a.diff and a.diff.startswith("--- a/a.txt\n+++ b/a.txt\n")
    assert (b.added, b.removed) == (1, 1)
    assert (x.name, x.type_before, x.type_after) == ("x", "int", "list len 3")
    text = listed.text()
    assert text.splitlines()[0] == "turn 1 of session 'default': 3 changes"
    assert "  1f1    pending   file a.txt +2 −1" in text and "  1v1    pending   variable x int → list len 3" in text


async def test_reverting_one_file_leaves_the_other_and_the_conversation(tmp_path: Path) -> None:
    kernel = NamespaceKernel(user_ns={"x": 1})
    workspace = two_files_and_a_variable(tmp_path, kernel)
    await workspace.run("edit", approve="allow")
    history = list(workspace.session("default").history)
    report = await workspace.revert(["1f1"])
    assert report.reverted == ["1f1"] and report.skipped == {}
    assert report.text().splitlines() == ["reverted 1f1 in session 'default'", "  restored a.txt"]
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert (tmp_path / "b.txt").read_text() == "beta\n"
    assert kernel.user_ns["x"] == [1, 2, 3]
    assert workspace.session("default").history == history
    assert [c.status for c in workspace.changes().changes] == ["reverted", "pending", "pending"]
    again = await workspace.revert(["1f1", "1v1"])
    assert again.reverted == ["1v1"] and again.skipped == {"1f1": "already reverted"}
    assert kernel.user_ns["x"] == 1


async def test_a_file_edited_since_is_a_conflict_skipped_unless_forced(tmp_path: Path) -> None:
    workspace = two_files_and_a_variable(tmp_path)
    await workspace.run("edit", approve="allow")
    (tmp_path / "b.txt").write_text("the user's own\n")
    [_, b, _] = workspace.changes().changes
    assert (b.status, b.note) == ("conflict", "the file was edited since the turn")
    report = await workspace.revert(["1f2", "1f1"])
    assert report.reverted == ["1f1"]
    assert report.skipped == {"1f2": "it was changed since the agent wrote it (--force restores it)"}
    assert (tmp_path / "b.txt").read_text() == "the user's own\n"
    forced = await workspace.revert(["1f2"], force=True)
    assert forced.reverted == ["1f2"] and (tmp_path / "b.txt").read_text() == "alpha\n"


async def test_a_file_deleted_since_is_a_conflict_and_force_puts_it_back(tmp_path: Path) -> None:
    workspace = two_files_and_a_variable(tmp_path)
    await workspace.run("edit", approve="allow")
    (tmp_path / "a.txt").unlink()
    [a, _, _] = workspace.changes().changes
    assert (a.status, a.note) == ("conflict", "the file was deleted since the turn")
    report = await workspace.revert(["1f1"])
    assert report.reverted == [] and "deleted since" in report.skipped["1f1"]
    assert not (tmp_path / "a.txt").exists()
    assert (await workspace.revert(["1f1"], force=True)).reverted == ["1f1"]
    assert (tmp_path / "a.txt").read_text() == "one\ntwo\nthree\n"


async def test_a_variable_rebound_twice_in_the_turn_goes_back_to_before_the_turn(tmp_path: Path) -> None:
    original = {"v": 0}
    kernel = NamespaceKernel(user_ns={"x": original})
    workspace, _ = scripted_workspace(
        tmp_path,
        [
            tool_step(call("run_python", code="x = 'first'")),
            tool_step(call("run_python", code="x = 2")),
            {"text": "ok"},
        ],
        kernel=kernel,
    )
    await workspace.run("rebind", approve="allow")
    [x] = workspace.changes().changes
    assert isinstance(x, VariableReview)
    assert (x.id, x.type_before, x.type_after, x.status) == ("1v1", "dict len 1", "int", "pending")
    assert (await workspace.revert(["1v1"])).reverted == ["1v1"]
    assert kernel.user_ns["x"] is original


async def test_a_variable_rebound_since_the_turn_is_a_conflict(tmp_path: Path) -> None:
    kernel = NamespaceKernel(user_ns={"x": 1})
    workspace = two_files_and_a_variable(tmp_path, kernel)
    await workspace.run("edit", approve="allow")
    kernel.user_ns["x"] = "the user's"
    [_, _, x] = workspace.changes().changes
    assert (x.status, x.note) == ("conflict", "it was rebound or deleted since the turn")
    report = await workspace.revert(["1v1"])
    assert report.skipped == {"1v1": "it was rebound or deleted since the turn (--force restores it)"}
    assert kernel.user_ns["x"] == "the user's"
    assert (await workspace.revert(["1v1"], force=True)).reverted == ["1v1"] and kernel.user_ns["x"] == 1


async def test_an_unknown_id_reverts_nothing(tmp_path: Path) -> None:
    workspace = two_files_and_a_variable(tmp_path)
    await workspace.run("edit", approve="allow")
    with pytest.raises(BlitzError, match=r"no change '1f9', 'zz' in session 'default'.*nothing was reverted"):
        await workspace.revert(["1f1", "1f9", "zz"])
    assert (tmp_path / "a.txt").read_text() == "one\nTWO\nand a half\nthree\n"
    with pytest.raises(BlitzError, match="name the changes"):
        await workspace.revert([])


async def test_keep_and_keep_all_close_the_review_and_the_audit_says_who(tmp_path: Path) -> None:
    workspace = two_files_and_a_variable(tmp_path)
    await workspace.run("edit", approve="allow")
    workspace.changes(by="%blitz_review")
    workspace.review.keep(["1f2"], by="Review changes panel")
    await workspace.revert(["1f1"], by="%blitz_review")
    closed = workspace.review.keep(by="%blitz_review")
    assert [c.status for c in closed.changes] == ["reverted", "kept", "kept"] and closed.open == []
    assert "(%blitz_review --revert" not in closed.text()
    rows = [(r.tool, r.decision, r.decided_by, r.reason, json.loads(r.arguments)) for r in workspace.audit()]
    assert rows[-4:] == [
        ("review", "reviewed", "user", "%blitz_review", {"changes": ["1f1", "1f2", "1v1"]}),
        ("review", "kept", "user", "Review changes panel", {"changes": ["1f2"]}),
        ("review", "reverted", "user", "%blitz_review", {"changes": ["1f1"]}),
        ("review", "kept", "user", "%blitz_review", {"changes": ["1v1"]}),
    ]
    # the kept files stay as the agent left them
    assert (tmp_path / "b.txt").read_text() == "beta\n"


async def test_the_review_reads_the_same_after_a_restart(tmp_path: Path) -> None:
    workspace = two_files_and_a_variable(tmp_path)
    await workspace.run("edit", approve="allow")
    workspace.review.keep(["1f2"])
    await workspace.revert(["1f1"])
    workspace.sessions.close()
    reopened, _ = scripted_workspace(tmp_path, [])
    listed = reopened.changes()
    assert [(c.id, c.status) for c in listed.changes] == [("1f1", "reverted"), ("1f2", "kept"), ("1v1", "conflict")]
    x = listed.changes[2]
    assert isinstance(x, VariableReview) and (x.type_before, x.type_after) == ("int", "list len 3")
    assert x.note is not None and "no longer kept" in x.note
    assert reopened.audit()[-1].decision == "reverted"


async def test_one_cell_of_two_is_reverted_in_the_ipynb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = tmp_path / "analysis.ipynb"
    cells = [
        {
            "cell_type": "code",
            "id": "load",
            "metadata": {},
            "execution_count": 1,
            "source": "df = load()",
            "outputs": [],
        }
    ]
    notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    monkeypatch.chdir(tmp_path)
    kernel = NamespaceKernel(user_ns={"__session__": str(notebook)})
    workspace, _ = scripted_workspace(
        tmp_path,
        [
            tool_step(
                call("notebook_edit", action="replace", index=0, source="df = load(cache=True)"),
                call("notebook_edit", action="insert", index=1, source="df.describe()"),
            ),
            {"text": "ok"},
        ],
        kernel=kernel,
    )
    await workspace.run("tidy", approve="allow")
    replaced, inserted = workspace.changes().changes
    assert isinstance(replaced, CellReview) and isinstance(inserted, CellReview)
    assert (replaced.id, replaced.action, replaced.source_before, replaced.source_after) == (
        "1c1",
        "replace",
        "df = load()",
        "df = load(cache=True)",
    )
    assert (inserted.id, inserted.index, inserted.action) == ("1c2", 1, "insert")
    assert (await workspace.revert(["1c2"])).reverted == ["1c2"]
    assert [c["source"] for c in json.loads(notebook.read_text())["cells"]] == ["df = load(cache=True)"]
    # the user edits the kept cell: a revert now is a conflict
    document = json.loads(notebook.read_text())
    document["cells"][0]["source"] = "df = load(cache=False)"
    notebook.write_text(json.dumps(document))
    [first, _] = workspace.changes().changes
    assert (first.status, first.note) == ("conflict", "the cell was edited since the turn")
    assert "edited since" in (await workspace.revert(["1c1"])).skipped["1c1"]


async def test_one_cell_of_two_is_reverted_through_the_front_end(tmp_path: Path) -> None:
    from .test_checkpoints import LiveNotebook

    front_end = LiveNotebook(
        [{"id": "a", "cell_type": "code", "source": "x = 1"}, {"id": "b", "cell_type": "code", "source": "y = 1"}]
    )
    workspace, _ = scripted_workspace(
        tmp_path,
        [
            tool_step(
                call("notebook_edit", action="replace", index=0, source="x = 2"),
                call("notebook_edit", action="replace", index=1, source="y = 2"),
            ),
            {"text": "ok"},
        ],
        kernel=NamespaceKernel(notebook=front_end),
    )
    await workspace.run("edit", approve="allow")
    assert [c.status for c in workspace.changes().changes] == ["pending", "pending"]  # checked when reverted
    front_end.cells[1]["source"] = "y = 'mine'"
    report = await workspace.revert(["1c1", "1c2"])
    assert report.reverted == ["1c1"]
    assert report.skipped == {"1c2": "it was edited since the agent changed it (--force restores it)"}
    assert [c["source"] for c in front_end.cells] == ["x = 1", "y = 'mine'"]


async def test_records_naming_paths_outside_the_workspace_are_shown_not_read(tmp_path: Path) -> None:
    # a session store shipped with a repository holds whatever someone wrote into it
    (tmp_path.parent / "outside.txt").write_text("not the workspace's\n")
    workspace = two_files_and_a_variable(tmp_path)
    await workspace.run("edit", approve="allow")
    files = workspace.session("default").checkpoints.get(0).files
    files["../outside.txt"] = FileChange(path="../outside.txt", existed=False, after="x")
    files[".blitz/blitz.db"] = FileChange(path=".blitz/blitz.db", existed=False, after="x")
    files["c.txt"] = FileChange(path="c.txt", existed=True, copy_path="b.txt", after="x")
    (tmp_path / "c.txt").write_text("c\n")
    listed = {c.id: c for c in workspace.changes().changes}
    notes = [listed[i].note or "" for i in ("1f3", "1f4", "1f5")]
    assert all(note.startswith("the checkpoint record is not acted on: ") for note in notes), notes
    assert "leads outside the workspace" in notes[0] and "inside .blitz/" in notes[1] and "not under" in notes[2]
    shown = [listed[i] for i in ("1f3", "1f4", "1f5")]
    assert all(isinstance(c, FileReview) and c.status == "conflict" and not c.diff for c in shown)
    report = await workspace.revert(["1f3", "1f4", "1f5"], force=True)
    assert report.reverted == [] and set(report.skipped) == {"1f3", "1f4", "1f5"}
    assert (tmp_path.parent / "outside.txt").read_text() == "not the workspace's\n"


async def test_secrets_in_a_diff_are_redacted(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(
        tmp_path,
        [
            tool_step(call("write_file", path="settings.env", content="WAREHOUSE_TOKEN=s3cr3t-value-123\n")),
            {"text": "ok"},
        ],
    )
    await workspace.run("configure", approve="allow")
    [change] = workspace.changes().changes
    assert isinstance(change, FileReview)
    assert "+WAREHOUSE_TOKEN=[redacted]\n" in change.diff and "s3cr3t" not in workspace.changes().text()
    assert "s3cr3t" not in change.model_dump_json()
