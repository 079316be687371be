"""Per-turn checkpoints of files, cells and variables, and Workspace.undo.

Real files in a real workspace (with its SQLite store), real tools, the ScriptedModel as the
model; the notebook front end is a stateful stand-in speaking the bridge's protocol.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from blitz_kernel.core.history import ToolResultMessage, UserMessage
from blitz_kernel.engine.events import TurnDone
from blitz_kernel.engine.undo import recorder as checkpoints
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.errors import SessionBusyError
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.tools import confined
from blitz_kernel.tools.notebook import NotebookRequestError
from tests.helpers.workspaces import scripted_workspace

from .conftest import NeverAnswers, call, tool_step


@dataclass
class NamespaceKernel:
    user_ns: dict[str, Any] = field(default_factory=dict)
    hidden_names: dict[str, Any] = field(default_factory=dict)
    notebook: Any = None


def open_workspace(
    root: Path, steps: list[Any], kernel: NamespaceKernel | None = None, **overrides: Any
) -> tuple[Workspace, ScriptedModel]:
    return scripted_workspace(root, steps, kernel=kernel, **overrides)


def done(result: Any) -> TurnDone:
    [event] = [e for e in result.events if isinstance(e, TurnDone)]
    return event


def results(workspace: Workspace, session: str = "default") -> list[str]:
    return [m.output or m.error or "" for m in workspace.session(session).history if isinstance(m, ToolResultMessage)]


# -- files ---------------------------------------------------------------------------------------


async def test_ws03_files_written_and_edited_in_a_turn_come_back(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    workspace, _ = open_workspace(
        tmp_path,
        [
            tool_step(
                call("write_file", path="notes.txt", content="replaced\n"),
                call("write_file", path="out/new.csv", content="a,b\n1,2\n"),
            ),
            tool_step(call("edit_file", path="notes.txt", old="replaced", new="edited twice")),
            {"text": "done"},
        ],
    )
    result = await workspace.run("rewrite the notes", approve="allow")
    assert (tmp_path / "notes.txt").read_text() == "edited twice\n"
    assert result.undoable and done(result).undoable
    copies = list((tmp_path / ".blitz" / "checkpoints").rglob("*.bak"))
    assert [c.read_text() for c in copies] == ["first line\nsecond line\n"]  # one copy: the first change only

    report = await workspace.undo("default")
    assert (tmp_path / "notes.txt").read_text() == "first line\nsecond line\n"
    assert not (tmp_path / "out" / "new.csv").exists()
    assert report.turns == [0]
    assert report.files == ["removed out/new.csv (the turn created it)", "restored notes.txt"]
    assert report.skipped == [] and report.not_undone == []
    assert report.conversation == "removed turn 1 from the history (7 messages)"
    assert workspace.session("default").history == []
    assert report.text().splitlines()[0] == "undid turn 1 of session 'default'"


async def test_ws03_a_file_changed_since_is_skipped_and_forced_back(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("x\n1\n")
    workspace, _ = open_workspace(
        tmp_path, [tool_step(call("write_file", path="data.csv", content="x\n2\n")), {"text": "ok"}]
    )
    await workspace.run("change it", approve="allow")
    (tmp_path / "data.csv").write_text("x\n3 (the user's edit)\n")

    report = await workspace.undo("default", files=True, conversation=False)
    assert (tmp_path / "data.csv").read_text() == "x\n3 (the user's edit)\n"
    assert [(s.item, s.reason) for s in report.skipped] == [
        ("file data.csv", "it was changed since the agent wrote it (--force restores it)")
    ]
    assert "skipped file data.csv: it was changed since the agent wrote it" in report.text()
    # the turn stays pending until forced: the same undo names the same conflict
    again = await workspace.undo("default", files=True, conversation=False)
    assert again.turns == [0] and [s.item for s in again.skipped] == ["file data.csv"]
    forced = await workspace.undo("default", files=True, conversation=False, force=True)
    assert forced.files == ["restored data.csv"] and (tmp_path / "data.csv").read_text() == "x\n1\n"
    assert (await workspace.undo("default", conversation=False)).text() == "nothing to undo in session 'default'"


async def test_ws03_force_restores_a_file_changed_since(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("x\n1\n")
    workspace, _ = open_workspace(
        tmp_path, [tool_step(call("write_file", path="data.csv", content="x\n2\n")), {"text": "ok"}]
    )
    await workspace.run("change it", approve="allow")
    (tmp_path / "data.csv").unlink()
    report = await workspace.undo("default", force=True)
    assert (tmp_path / "data.csv").read_text() == "x\n1\n"
    assert report.files == ["restored data.csv"] and report.skipped == []


async def test_ws03_the_first_change_moves_the_file_aside_keeping_its_mode(tmp_path: Path) -> None:
    # the checkpoint is the old inode itself (renamed, not copied); the path gets a fresh file
    notes = tmp_path / "notes.txt"
    notes.write_text("old\n")
    notes.chmod(0o640)
    before = notes.stat()
    workspace, _ = open_workspace(
        tmp_path, [tool_step(call("edit_file", path="notes.txt", old="old", new="new")), {"text": "ok"}]
    )
    await workspace.run("edit it", approve="allow")
    after = notes.stat()
    [copy] = (tmp_path / ".blitz" / "checkpoints").rglob("*.bak")
    assert notes.read_text() == "new\n" and copy.read_text() == "old\n"
    assert copy.stat().st_ino == before.st_ino and after.st_ino != before.st_ino
    assert after.st_mode & 0o777 == 0o640
    assert (await workspace.undo("default")).files == ["restored notes.txt"]
    assert notes.read_text() == "old\n" and notes.stat().st_mode & 0o777 == 0o640


async def test_ws03_a_hard_linked_file_is_copied_and_changed_in_place(tmp_path: Path) -> None:
    # moving it aside would leave the other link on the old content: copy, write in place
    (tmp_path / "data.csv").write_text("x\n1\n")
    (tmp_path / "link.csv").hardlink_to(tmp_path / "data.csv")
    inode = (tmp_path / "data.csv").stat().st_ino
    workspace, _ = open_workspace(
        tmp_path, [tool_step(call("write_file", path="data.csv", content="x\n2\n")), {"text": "ok"}]
    )
    await workspace.run("change it", approve="allow")
    assert (tmp_path / "data.csv").stat().st_ino == inode and (tmp_path / "link.csv").read_text() == "x\n2\n"
    [copy] = (tmp_path / ".blitz" / "checkpoints").rglob("*.bak")
    assert copy.read_text() == "x\n1\n" and copy.stat().st_ino != inode
    await workspace.undo("default")
    assert (tmp_path / "link.csv").read_text() == "x\n1\n"


async def test_ws03_a_refused_link_falls_back_to_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the checkpoint folder on another file system: link says EXDEV, the old content is copied
    def cross_device(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    (tmp_path / "data.csv").write_text("x\n1\n")
    inode = (tmp_path / "data.csv").stat().st_ino
    monkeypatch.setattr(checkpoints.os, "link", cross_device)
    workspace, _ = open_workspace(
        tmp_path, [tool_step(call("write_file", path="data.csv", content="x\n2\n")), {"text": "ok"}]
    )
    await workspace.run("change it", approve="allow")
    monkeypatch.undo()
    assert (tmp_path / "data.csv").read_text() == "x\n2\n"
    [copy] = (tmp_path / ".blitz" / "checkpoints").rglob("*.bak")
    assert copy.read_text() == "x\n1\n" and copy.stat().st_ino != inode  # a copy, not the old inode
    assert (await workspace.undo("default")).files == ["restored data.csv"]
    assert (tmp_path / "data.csv").read_text() == "x\n1\n"


async def test_a_full_disk_leaves_the_file_and_its_checkpoint_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the second piece of the new content does not fit: the old file stays whole, no checkpoint is
    # left behind, and the next write of the turn still keeps the true old content
    (tmp_path / "data.csv").write_text("old\n")
    real_pwrite = os.pwrite

    def full_after_one_piece(fd: int, data: Any, offset: int) -> int:
        if offset > 0:  # only the big first write has a second piece
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwrite(fd, data, offset)

    seen_after_the_failure: list[str] = []

    def look_then_write_again(request: Any) -> dict[str, Any]:
        seen_after_the_failure.append((tmp_path / "data.csv").read_text())
        monkeypatch.undo()  # the disk has room again
        return tool_step(call("write_file", path="data.csv", content="new\n"))

    big = "y" * (300 * 1024)
    workspace, _ = open_workspace(
        tmp_path,
        [
            tool_step(call("write_file", path="data.csv", content=big)),
            look_then_write_again,
            {"text": "ok"},
        ],
    )
    monkeypatch.setattr(confined.os, "pwrite", full_after_one_piece)
    await workspace.run("change it", approve="allow")
    assert seen_after_the_failure == ["old\n"]
    assert "No space left on device; the file is unchanged" in results(workspace)[0]
    assert (tmp_path / "data.csv").read_text() == "new\n"
    assert not any(name.endswith(".tmp") for name in os.listdir(tmp_path))
    report = await workspace.undo("default")
    assert report.files == ["restored data.csv"] and (tmp_path / "data.csv").read_text() == "old\n"


# -- variables -----------------------------------------------------------------------------------


def sales_frame() -> pd.DataFrame:
    return pd.DataFrame({"region": list("abcdefg"), "units": range(7), "price": [1.0] * 7})


async def test_ws03_variables_are_diffed_by_name_and_restored_by_reference(tmp_path: Path) -> None:
    sales = sales_frame()
    kernel = NamespaceKernel(user_ns={"sales": sales, "tmp": [1, 2], "_hidden": 1})
    code = "sales = sales.assign(revenue=sales.units * sales.price)\nrevenue_by_region = sales.groupby('region').revenue.sum()\ndel tmp"
    workspace, model = open_workspace(tmp_path, [tool_step(call("run_python", code=code)), {"text": "ok"}], kernel)
    result = await workspace.run("add revenue", approve="allow")
    assert result.undoable
    output = results(workspace)[0]
    assert output == "namespace: created revenue_by_region; rebound sales (DataFrame 7×3 → 7×4); deleted tmp"
    assert kernel.user_ns["sales"].shape == (7, 4)

    report = await workspace.undo("default")
    assert kernel.user_ns["sales"] is sales  # the very object, not a copy
    assert kernel.user_ns["tmp"] == [1, 2] and "revenue_by_region" not in kernel.user_ns
    assert sorted(report.variables) == [
        "removed revenue_by_region (the turn created it)",
        "restored sales (DataFrame 7×3)",
        "restored tmp (list len 2)",
    ]
    assert report.not_undone[0].startswith(
        "run_python ran in this turn; what its code did outside the namespace cannot be undone: turn 1, `sales = "
    )
    assert "objects changed in place (df.drop(..., inplace=True)) keep their new content" in report.not_undone


async def test_ws03_in_place_mutation_is_not_seen_and_not_claimed(tmp_path: Path) -> None:
    frame = sales_frame()
    kernel = NamespaceKernel(user_ns={"sales": frame})
    code = "sales['units'] = 0"
    workspace, _ = open_workspace(tmp_path, [tool_step(call("run_python", code=code)), {"text": "ok"}], kernel)
    result = await workspace.run("drop price", approve="allow")
    assert "namespace:" not in results(workspace)[0]
    assert not result.undoable  # nothing a name diff can see changed
    report = await workspace.undo("default", conversation=False)
    assert report.variables == [] and frame["units"].sum() == 0
    assert any("inplace=True" in line for line in report.not_undone)


async def test_ws03_a_variable_rebound_since_is_skipped_unless_forced(tmp_path: Path) -> None:
    kernel = NamespaceKernel(user_ns={"x": 1})
    workspace, _ = open_workspace(tmp_path, [tool_step(call("run_python", code="x = 2")), {"text": "ok"}], kernel)
    await workspace.run("set x", approve="allow")
    kernel.user_ns["x"] = 3
    report = await workspace.undo("default", conversation=False)
    assert kernel.user_ns["x"] == 3
    assert [(s.item, s.reason) for s in report.skipped] == [
        ("variable x", "it was rebound or deleted since the turn (--force restores it)")
    ]


async def test_ws03_rebound_objects_are_kept_only_for_keep_turns(tmp_path: Path) -> None:
    kernel = NamespaceKernel(user_ns={"x": "original"})
    steps = [tool_step(call("run_python", code="x = 'one'")), {"text": "1"}, {"text": "2"}]
    workspace, _ = open_workspace(tmp_path, steps, kernel, **{"checkpoints.keep_turns": 1})
    await workspace.run("first", approve="allow")
    await workspace.run("second", approve="allow")  # turn 1 starts: turn 0's objects are let go
    report = await workspace.undo("default", turns=2)
    assert kernel.user_ns["x"] == "one"
    assert [s.item for s in report.skipped] == ["variables x"]
    assert "no longer kept" in report.skipped[0].reason
    assert report.turns == [1, 0]


# -- cells -----------------------------------------------------------------------------------------


def write_notebook(path: Path) -> list[dict[str, Any]]:
    cells = [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# Sales"},
        {
            "cell_type": "code",
            "id": "load",
            "metadata": {"tags": ["keep"]},
            "execution_count": 3,
            "source": "df = load()",
            "outputs": [{"output_type": "stream", "name": "stdout", "text": "ok\n"}],
        },
        {"cell_type": "code", "id": "plot", "metadata": {}, "execution_count": 4, "source": "df.plot()", "outputs": []},
    ]
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}, indent=1))
    return cells


async def test_ws03_cells_edited_in_the_ipynb_come_back_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = tmp_path / "analysis.ipynb"
    original = write_notebook(notebook)
    monkeypatch.chdir(tmp_path)
    kernel = NamespaceKernel(user_ns={"__session__": str(notebook)})
    workspace, _ = open_workspace(
        tmp_path,
        [
            tool_step(call("notebook_edit", action="replace", index=1, source="df = load(cache=True)")),
            tool_step(
                call("notebook_edit", action="insert", index=3, source="df.describe()"),
                call("notebook_edit", action="delete", index=0),
            ),
            {"text": "ok"},
        ],
        kernel,
    )
    result = await workspace.run("tidy the notebook", approve="allow")
    assert result.undoable
    assert "edited the .ipynb file on disk" in results(workspace)[0]
    edited = json.loads(notebook.read_text())["cells"]
    assert [c["source"] for c in edited] == ["df = load(cache=True)", "df.plot()", "df.describe()"]

    report = await workspace.undo("default")
    assert json.loads(notebook.read_text())["cells"] == original  # outputs and metadata too
    assert report.cells == [
        "put back cell 0 (id intro)",
        f"removed cell 3 (id {edited[2]['id']})",
        "restored cell 1 (id load)",
    ]


async def test_ws03_a_cell_edited_since_is_skipped_then_forced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = tmp_path / "analysis.ipynb"
    write_notebook(notebook)
    monkeypatch.chdir(tmp_path)
    kernel = NamespaceKernel(user_ns={"__session__": str(notebook)})
    steps = [tool_step(call("notebook_edit", action="replace", index=2, source="df.plot(kind='bar')")), {"text": "ok"}]
    workspace, _ = open_workspace(tmp_path, steps, kernel)
    await workspace.run("bar chart", approve="allow")
    document = json.loads(notebook.read_text())
    document["cells"][2]["source"] = "df.plot(kind='barh')  # the user's"
    notebook.write_text(json.dumps(document))

    skipped = await workspace.undo("default", conversation=False)
    assert [(s.item, s.reason) for s in skipped.skipped] == [
        ("cell 2 (id plot)", "it was edited since the agent changed it (--force restores it)")
    ]
    assert json.loads(notebook.read_text())["cells"][2]["source"] == "df.plot(kind='barh')  # the user's"
    forced = await workspace.undo("default", conversation=False, force=True)
    assert forced.cells == ["restored cell 2 (id plot)"]
    assert json.loads(notebook.read_text())["cells"][2]["source"] == "df.plot()"


@dataclass
class LiveNotebook:
    """The labextension's side of the bridge, holding cells and applying edits like protocol.ts."""

    cells: list[dict[str, Any]]
    ops: list[str] = field(default_factory=list)
    next_id: int = 0

    async def request(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ops.append(op)
        cells = self.cells
        if op == "read_cells":
            shown = [{"index": i, **c} for i, c in enumerate(cells)]
            return {"path": "nb.ipynb", "cell_count": len(cells), "cells": shown}
        if op == "insert_cell":
            self.next_id += 1
            cell = {"id": f"new{self.next_id}", "cell_type": params["cell_type"], "source": params["source"]}
            cells.insert(params["index"], cell)
            return {"index": params["index"], "id": cell["id"], "cell_count": len(cells)}
        if not 0 <= params["index"] < len(cells):
            raise NotebookRequestError(f"no cell {params['index']}")
        cell = cells[params["index"]]
        if op == "replace_cell":
            previous = cell["source"]
            cell_type = params.get("cell_type", cell["cell_type"])
            if cell_type != cell["cell_type"]:
                self.next_id += 1
                cell = cells[params["index"]] = {"id": f"new{self.next_id}", "cell_type": cell_type, "source": ""}
            cell["source"] = params["source"]
            return {
                "index": params["index"],
                "id": cell["id"],
                "cell_type": cell_type,
                "previous_source": previous,
                "cell_count": len(cells),
            }
        del cells[params["index"]]
        return {"deleted": dict(cell), "cell_count": len(cells)}


async def test_ws03_cells_edited_through_the_bridge_come_back(tmp_path: Path) -> None:
    front_end = LiveNotebook(
        [
            {"id": "a", "cell_type": "markdown", "source": "# Title"},
            {"id": "b", "cell_type": "code", "source": "x = 1"},
        ]
    )
    original = [dict(c) for c in front_end.cells]
    kernel = NamespaceKernel(notebook=front_end)
    workspace, _ = open_workspace(
        tmp_path,
        [
            tool_step(call("notebook_edit", action="replace", index=1, source="x = 2")),
            tool_step(call("notebook_edit", action="replace", index=0, source="print('hi')", cell_type="code")),
            tool_step(call("notebook_edit", action="insert", index=2, source="x")),
            tool_step(call("notebook_edit", action="delete", index=1)),
            {"text": "ok"},
        ],
        kernel,
    )
    await workspace.run("edit", approve="allow")
    assert [c["source"] for c in front_end.cells] == ["print('hi')", "x"]
    report = await workspace.undo("default")
    assert [(c["cell_type"], c["source"]) for c in front_end.cells] == [(c["cell_type"], c["source"]) for c in original]
    assert len(report.cells) == 4 and report.skipped == []


# -- turns, conversation, durability ---------------------------------------------------------------


async def test_ws03_a_turn_that_changed_nothing_has_nothing_to_undo(tmp_path: Path) -> None:
    workspace, _ = open_workspace(tmp_path, [{"text": "hello"}])
    result = await workspace.run("hi")
    assert not result.undoable and not done(result).undoable
    report = await workspace.undo("default", conversation=False)
    assert report.nothing_to_undo and report.text() == "nothing to undo in session 'default' (turn 1 changed nothing)"
    talk = await workspace.undo("default")  # the conversation part is still there to roll back
    assert talk.conversation == "removed turn 1 from the history (2 messages)"
    assert (await workspace.undo("default")).nothing_to_undo


async def test_ws03_rewind_two_turns_newest_first_and_the_model_forgets_them(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("v0")
    workspace, model = open_workspace(
        tmp_path,
        [
            {"text": "kept"},
            tool_step(call("write_file", path="f.txt", content="v1")),
            {"text": "one"},
            tool_step(call("write_file", path="f.txt", content="v2")),
            {"text": "two"},
            {"text": "after the rewind"},
        ],
    )
    for prompt in ("keep me", "first change", "second change"):
        await workspace.run(prompt, approve="allow")
    report = await workspace.undo("default", turns=2)
    assert report.turns == [2, 1] and (tmp_path / "f.txt").read_text() == "v0"
    assert report.files == ["restored f.txt", "restored f.txt"]
    assert report.conversation == "removed turn 3, 2 from the history (8 messages)"
    await workspace.run("what now?")
    prompts = [m.text for m in model.requests[-1].messages if isinstance(m, UserMessage)]
    assert prompts == ["keep me", "what now?"]


async def test_ws03_the_rewind_survives_a_restart_and_search_marks_it(tmp_path: Path) -> None:
    workspace, _ = open_workspace(tmp_path, [{"text": "zebra answer"}, {"text": "kept answer"}])
    await workspace.run("first")
    await workspace.run("tell me about zebras")
    await workspace.undo("default", conversation=True, files=False)
    workspace.sessions.close()

    reopened, _ = open_workspace(tmp_path, [])
    history = reopened.session("default").history
    assert [m.kind for m in history] == ["user", "assistant"] and history[0].text == "first"  # type: ignore[union-attr]
    hits = reopened.sessions.search("zebras")
    assert [(h.role, h.rewound) for h in hits] == [("user", True)]
    assert reopened.session("default").checkpoints.get(1).conversation_undone
    assert (await reopened.undo("default", files=False)).turns == [0]


async def test_ws03_file_records_survive_a_restart(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("before")
    workspace, _ = open_workspace(
        tmp_path, [tool_step(call("write_file", path="a.txt", content="after")), {"text": "ok"}]
    )
    await workspace.run("write", approve="allow")
    workspace.sessions.close()
    reopened, _ = open_workspace(tmp_path, [])
    report = await reopened.undo("default")
    assert (tmp_path / "a.txt").read_text() == "before" and report.files == ["restored a.txt"]


async def test_ws03_undo_while_a_turn_runs_is_refused(tmp_path: Path) -> None:
    workspace, _ = open_workspace(tmp_path, [tool_step(call("write_file", path="a.txt", content="x")), {"text": "ok"}])
    approver = NeverAnswers()
    turn = asyncio.ensure_future(workspace.run("write", approver=approver))
    await asyncio.wait_for(approver.asked.wait(), 10)
    with pytest.raises(SessionBusyError, match="session 'default' has a running turn; undo it after the turn ends"):
        await workspace.undo("default")
    workspace.stop("default")
    turn.cancel()
    await asyncio.gather(turn, return_exceptions=True)


async def test_ws03_two_run_python_calls_in_one_batch_each_name_their_own_changes(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    kernel = NamespaceKernel()
    workspace, _ = open_workspace(
        tmp_path,
        [
            tool_step(call("run_python", code="first = 1"), call("run_python", code="second = 2")),
            {"text": "ok"},
        ],
        kernel,
    )
    await workspace.run("two at once", approve="allow")
    assert results(workspace) == ["namespace: created first", "namespace: created second"]
    assert plt.show.__module__ == "matplotlib.pyplot"  # neither call's figure capture leaked
    report = await workspace.undo("default")
    assert "first" not in kernel.user_ns and "second" not in kernel.user_ns
    assert sorted(report.variables) == ["removed first (the turn created it)", "removed second (the turn created it)"]


async def test_ws03_deleting_a_session_deletes_its_copies_and_undo_creates_none(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("before")
    workspace, _ = open_workspace(
        tmp_path, [tool_step(call("write_file", path="a.txt", content="after")), {"text": "ok"}]
    )
    await workspace.run("write", session="doomed", approve="allow")
    assert list((tmp_path / ".blitz" / "checkpoints").rglob("*.bak"))
    workspace.sessions.delete("doomed")
    assert not list((tmp_path / ".blitz" / "checkpoints").rglob("*.bak"))
    assert (await workspace.undo("never-used")).nothing_to_undo
    assert "never-used" not in workspace.sessions.names()


async def test_ws03_a_continued_turn_is_rewound_on_its_own(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("0")
    workspace, _ = open_workspace(
        tmp_path,
        [
            tool_step(call("write_file", path="a.txt", content="1")),  # the turn stops here at max_turns=1
            {"text": "finished"},  # what the continuation adds
        ],
    )
    first = await workspace.run("write it", approve="allow", max_turns=1)
    assert first.stop_reason == "max_turns"
    await workspace.continue_turn("default")
    history = workspace.session("default").history
    assert [m.kind for m in history] == ["user", "assistant", "tool_result", "assistant"]
    report = await workspace.undo("default", files=False)
    assert report.turns == [1] and report.conversation == "removed turn 2 from the history (1 messages)"
    assert [m.kind for m in history] == ["user", "assistant", "tool_result"]
    report = await workspace.undo("default", turns=2)  # turn 2's files part is still pending (it has none)
    assert report.turns == [1, 0] and history == [] and (tmp_path / "a.txt").read_text() == "0"


async def test_ws03_turns_compaction_summarised_keep_their_summary(tmp_path: Path) -> None:
    workspace, _ = open_workspace(
        tmp_path, [{"text": "one"}, {"text": "two"}, {"text": "the summary"}, {"text": "three"}]
    )
    await workspace.run("first")
    await workspace.run("second")
    await workspace.compact("default", keep_turns=1)  # the first turn goes into a summary
    await workspace.run("third")
    report = await workspace.undo("default", turns=3, files=False)
    assert report.conversation == "removed turn 3, 2 from the history (4 messages)"
    assert [(s.item, s.reason) for s in report.skipped] == [
        ("conversation of turn 1", "compaction summarised it; the summary stays")
    ]
    assert [m.kind for m in workspace.session("default").history] == ["summary"]
    workspace.sessions.close()
    reopened, _ = open_workspace(tmp_path, [])
    assert [m.kind for m in reopened.session("default").history] == ["summary"]
    assert (await reopened.undo("default", files=False)).nothing_to_undo


async def test_ws03_undo_through_an_older_turn_undoes_the_later_ones_too(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("v0")
    workspace, _ = open_workspace(
        tmp_path,
        [
            tool_step(call("write_file", path="f.txt", content="v1")),
            {"text": "one"},
            tool_step(call("write_file", path="f.txt", content="v2")),
            {"text": "two"},
            {"text": "three"},
        ],
    )
    for prompt in ("first", "second", "third"):
        await workspace.run(prompt, approve="allow")
    report = await workspace.undo("default", through_turn=1)
    assert report.turns == [2, 1] and (tmp_path / "f.txt").read_text() == "v1"
    assert (await workspace.undo("default", through_turn=2)).nothing_to_undo  # already undone
