"""`%blitz_review` and `Workspace.changes` / `Workspace.revert` in a real kernel: a turn's
changes listed with ids, one of two file edits reverted and the other kept, a rebound variable
reverted on its own, bad options refused with the usage line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeserver import FakeOpenAIServer

from .conftest import blitz_kernel_on
from .driver import KernelDriver


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("review")


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


def ok(cell: Any) -> Any:
    assert cell.status == "ok", cell.reply
    return cell


def two_edits_and_a_variable(kernel: KernelDriver, server: FakeOpenAIServer, workspace: Path, session: str) -> None:
    (workspace / "report.md").write_text("# Report\nold total\n")
    (workspace / "notes.txt").write_text("first\n")
    ok(kernel.run("total = 1"))
    server.enqueue(
        {
            "tool_calls": [
                call("edit_file", path="report.md", old="old total", new="new total"),
                call("write_file", path="notes.txt", content="second\n"),
                call("run_python", code="total = 'many'"),
            ]
        },
        {"text": "Updated."},
    )
    ok(kernel.run(f"%%blitz -s {session} --approve allow\nUpdate the report, the notes and the total."))


def test_the_magic_lists_reverts_one_of_two_edits_and_keeps_the_rest(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace: Path
) -> None:
    two_edits_and_a_variable(kernel, server, workspace, "magic")
    listed = ok(kernel.run("%blitz_review -s magic")).stdout.splitlines()
    assert listed[:4] == [
        "turn 1 of session 'magic': 3 changes",
        "  1f1    pending   file report.md +1 −1",
        "  1f2    pending   file notes.txt +1 −1",
        "  1v1    pending   variable total int → str len 4",
    ]
    diff = ok(kernel.run("%blitz_review 1 -s magic --diff")).stdout
    assert "1f1:\n--- a/report.md\n+++ b/report.md\n" in diff and "-old total\n+new total" in diff

    reverted = ok(kernel.run("%blitz_review -s magic --revert 1f1 1v1")).stdout.splitlines()
    assert reverted[0] == "reverted 1f1, 1v1 in session 'magic'"
    assert "  restored report.md" in reverted and "  restored total (int)" in reverted
    assert (workspace / "report.md").read_text() == "# Report\nold total\n"
    assert (workspace / "notes.txt").read_text() == "second\n"
    assert ok(kernel.run("print(total)")).stdout == "1\n"

    closed = ok(kernel.run("%blitz_review -s magic --keep-all")).stdout.splitlines()
    assert closed[1:4] == [
        "  1f1    reverted  file report.md",
        "  1f2    kept      file notes.txt +1 −1",
        "  1v1    reverted  variable total int → str len 4",
    ]
    audit = ok(kernel.run("%blitz_audit -s magic --last 4")).stdout
    decisions = [word for word in audit.split() if word in ("reviewed", "reverted", "kept")]
    assert decisions == ["reviewed", "reverted", "reverted", "kept"]  # the --diff look, then the decisions


def test_the_python_api_reverts_a_change_and_names_a_conflict(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace: Path
) -> None:
    two_edits_and_a_variable(kernel, server, workspace, "api")
    ok(kernel.run("open('notes.txt', 'w').write('the user was here\\n')"))
    code = (
        "from blitz_kernel import kernel_workspace\n"
        "ws = kernel_workspace()\n"
        "listed = ws.changes(session='api')\n"
        "print([(c.id, c.status) for c in listed.changes])\n"
        "report = await ws.revert(['1f1', '1f2'], session='api')\n"
        "print(report.reverted, report.skipped)"
    )
    lines = ok(kernel.run(code)).stdout.splitlines()
    assert lines[0] == "[('1f1', 'pending'), ('1f2', 'conflict'), ('1v1', 'pending')]"
    assert lines[1] == "['1f1'] {'1f2': 'it was changed since the agent wrote it (--force restores it)'}"
    assert (workspace / "notes.txt").read_text() == "the user was here\n"
    forced = ok(kernel.run("%blitz_review -s api --revert 1f2 --force")).stdout
    assert forced.splitlines()[0] == "reverted 1f2 in session 'api'"
    assert (workspace / "notes.txt").read_text() == "first\n"


def test_bad_options_are_usage_errors_and_an_unknown_id_reverts_nothing(kernel: KernelDriver) -> None:
    for line, says in (
        ("%blitz_review --revert 1f1 --keep-all", "--revert and --keep-all exclude each other"),
        ("%blitz_review --force", "--force goes with --revert"),
        ("%blitz_review 0", "TURN must be a turn number"),
        ("%blitz_review --revert nonsense", "'nonsense' is not a change id"),
        ("%blitz_review --bogus", "unrecognized arguments"),
    ):
        cell = kernel.run(line)
        assert cell.ename == "UsageError", (line, cell.reply)
        assert says in cell.evalue and "usage: %blitz_review" in cell.evalue, cell.evalue
    unknown = kernel.run("%blitz_review -s magic --revert 1f9")
    assert unknown.ename == "BlitzCellError" and "no change '1f9' in session 'magic'" in unknown.evalue
    assert ok(kernel.run("%blitz_review -s nobody")).stdout == "no changes to review in session 'nobody'\n"
