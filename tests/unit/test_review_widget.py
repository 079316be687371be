"""Review changes under a finished turn (notebook/widgets/undo.py): the change list in the
widget and in the static rendering, Keep and Revert from typed comm messages, and the audit
row saying the panel decided. A real workspace on a ScriptedModel; the cell's outputs are
recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from blitz_kernel.core.usage import UsageTotals
from blitz_kernel.engine.events import TurnDone, TurnStarted
from blitz_kernel.engine.turn.setup import TurnResult
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.notebook.presenters import WidgetPresenter
from blitz_kernel.notebook.widgets.controller import TurnController
from blitz_kernel.notebook.widgets.undo import UndoButton
from tests.helpers.workspaces import scripted_workspace

from .conftest import ScriptedApprover, call, tool_step


class RecordingOutput:
    """The cell's outputs as a test sees them (the widget presenter's WidgetOutput)."""

    def __init__(self) -> None:
        self.shown: list[Any] = []
        self.replaced: list[tuple[Any, dict[str, str], dict[str, Any] | None]] = []

    def show(self, view: Any) -> Any:
        self.shown.append(view)
        return f"display-{len(self.shown)}"

    def replace(self, handle: Any, data: dict[str, str], metadata: dict[str, Any] | None = None) -> None:
        self.replaced.append((handle, data, metadata))

    def append(self, data: dict[str, str]) -> None:
        pass


async def two_edits(root: Path) -> tuple[Workspace, WidgetPresenter, RecordingOutput]:
    (root / "a.txt").write_text("one\n")
    (root / "b.txt").write_text("two\n")
    workspace = scripted_workspace(
        root,
        [
            tool_step(
                call("write_file", path="a.txt", content="ONE\n"), call("write_file", path="b.txt", content="TWO\n")
            ),
            {"text": "Both."},
        ],
    )[0]
    result = await workspace.run("edit", session="s", approver=ScriptedApprover("allow"))
    done = next(e for e in result.events if isinstance(e, TurnDone))
    controller = TurnController(workspace, "s", "edit")
    output = RecordingOutput()
    presenter = WidgetPresenter(controller, output=output)
    controller.state.apply(TurnStarted(session="s", turn_index=0, prompt="edit", agent="blitz", model="m"))
    presenter.catch_up()
    controller.state.apply(done)
    await presenter.finish(
        TurnResult(text="Both.", stop_reason="end_turn", usage=UsageTotals(), session="s", turn_index=0)
    )
    return workspace, presenter, output


async def test_the_turn_offers_review_changes_and_its_rendering_lists_them(tmp_path: Path) -> None:
    _, presenter, output = await two_edits(tmp_path)
    view = output.shown[-1]
    assert isinstance(view, UndoButton) and not view.panel
    assert [(c["id"], c["kind"], c["summary"], c["status"]) for c in view.changes] == [
        ("1f1", "file", "file a.txt +1 −1", "pending"),
        ("1f2", "file", "file b.txt +1 −1", "pending"),
    ]
    assert "-one\n+ONE\n" in view.changes[0]["diff"]
    _, data, metadata = output.replaced[-1]  # the static rendering that replaced the widget
    plain = data["text/plain"]
    assert (
        "Changes in this turn (revert one with Review changes or %blitz_review --revert ID while a kernel runs)"
        in plain
    )
    assert "  1f1  file a.txt +1 −1  [pending]" in plain
    assert "**Changes in this turn**" in data["text/markdown"]
    assert metadata is not None and [c["id"] for c in metadata["blitz"]["changes"]] == ["1f1", "1f2"]
    assert presenter.undo is not None


async def test_revert_one_keep_the_other_from_the_panel(tmp_path: Path) -> None:
    workspace, presenter, output = await two_edits(tmp_path)
    control = presenter.undo
    assert control is not None
    turn_id = control.state.turn_id
    control._receive(control.view, {"kind": "review_open", "turn_id": turn_id}, [])
    assert control.view.panel
    control._receive(
        control.view, {"kind": "review_change", "turn_id": turn_id, "change_id": "1f1", "decision": "revert"}, []
    )
    assert control.view.status == "running" and control.task is not None
    await asyncio.wait_for(control.task, 10)
    assert control.view.status == "ready" and control.view.report.startswith("reverted 1f1")
    control._receive(
        control.view, {"kind": "review_change", "turn_id": turn_id, "change_id": "1f2", "decision": "keep"}, []
    )
    assert (tmp_path / "a.txt").read_text() == "one\n" and (tmp_path / "b.txt").read_text() == "TWO\n"
    assert [c["status"] for c in control.view.changes] == ["reverted", "kept"]
    _, data, _ = output.replaced[-1]
    assert "  1f1  file a.txt  [reverted]" in data["text/plain"] and "[kept]" in data["text/plain"]
    rows = [(r.decision, r.reason) for r in workspace.audit("s") if r.tool == "review"]
    assert rows == [
        ("reviewed", "Review changes panel"),
        ("reverted", "Review changes panel"),
        ("kept", "Review changes panel"),
    ]


async def test_stale_and_malformed_messages_change_nothing(tmp_path: Path) -> None:
    _, presenter, _ = await two_edits(tmp_path)
    control = presenter.undo
    assert control is not None
    turn_id = control.state.turn_id
    for content in (
        {"kind": "review_change", "turn_id": "another-turn", "change_id": "1f1", "decision": "revert"},
        {"kind": "review_change", "turn_id": turn_id, "change_id": "1f1", "decision": "delete"},
        {"kind": "review_change", "turn_id": turn_id, "change_id": "9f9", "decision": "revert"},
        {"kind": "review_open"},
        "nonsense",
    ):
        control._receive(control.view, content, [])
    assert control.task is None and not control.view.panel
    assert (tmp_path / "a.txt").read_text() == "ONE\n"


async def test_undo_all_still_undoes_the_whole_turn_in_one_click(tmp_path: Path) -> None:
    _, presenter, output = await two_edits(tmp_path)
    control = presenter.undo
    assert control is not None
    control._receive(control.view, {"kind": "undo", "turn_id": control.state.turn_id}, [])
    assert control.task is not None
    await asyncio.wait_for(control.task, 10)
    assert control.view.status == "done"
    assert (tmp_path / "a.txt").read_text() == "one\n" and (tmp_path / "b.txt").read_text() == "two\n"
    assert [c["status"] for c in control.view.changes] == ["reverted", "reverted"]
    _, data, _ = output.replaced[-1]
    assert "This turn was undone (" in data["text/plain"]
