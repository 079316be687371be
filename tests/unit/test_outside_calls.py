"""`Workspace.call_tool`: a call from outside the notebook runs as a one-call turn, with the same
screening, approvals, redaction, audit and undo as a call of the model (docs/mcp-server.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.cli.kernel_link import KernelLink, KernelLinkError, find_connection_file
from blitz_kernel.cli.mcp_server import client_name, loopback_address, main
from blitz_kernel.core.history import Message
from blitz_kernel.engine.events import PermissionDecision, PermissionRequest
from blitz_kernel.models.base import ModelRequest
from tests.helpers.workspaces import scripted_workspace

ALLOW_WRITES: dict[str, Any] = {"approval.tools.write_file": "allow"}
SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


class AllowingApprover:
    """A person who says yes, and remembers what they were shown."""

    interactive = True

    def __init__(self) -> None:
        self.asked: list[PermissionRequest] = []

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        self.asked.append(request)
        return [PermissionDecision(call_id=call.id, decision="allow") for call in request.calls]


def test_a_mutating_call_is_denied_headless_and_the_audit_names_the_client(tmp_path: Path) -> None:
    workspace, model = scripted_workspace(tmp_path, [{"text": "unused"}])
    result = asyncio.run(
        workspace.outside.call_tool("default", "write_file", {"path": "a.txt", "content": "x"}, "mcp:claude-code")
    )
    assert result.status == "denied"
    assert result.text == "write_file was denied: approval needed but nobody can answer (headless)"
    assert not (tmp_path / "a.txt").exists()
    (row,) = workspace.audit("default")
    assert (row.tool, row.decision, row.decided_by, row.caller) == (
        "write_file",
        "denied",
        "headless default",
        "mcp:claude-code",
    )
    assert model.remaining == 1  # the session's own model was never asked


def test_an_allowed_call_runs_and_undo_takes_it_back(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(tmp_path, [], **ALLOW_WRITES)
    result = asyncio.run(
        workspace.outside.call_tool("default", "write_file", {"path": "a.txt", "content": "hello"}, "mcp:codex")
    )
    assert (result.status, result.text) == ("ok", "created a.txt (5 bytes written)")
    assert (tmp_path / "a.txt").read_text() == "hello"
    report = asyncio.run(workspace.undo("default"))
    assert "removed a.txt (the turn created it)" in report.text()
    assert not (tmp_path / "a.txt").exists()


def test_the_next_turn_sees_the_outside_call_in_its_history(tmp_path: Path) -> None:
    seen: list[list[Message]] = []

    def answer(request: ModelRequest) -> dict[str, str]:
        seen.append(list(request.messages))
        return {"text": "noted"}

    workspace, _ = scripted_workspace(tmp_path, [answer], **ALLOW_WRITES)
    asyncio.run(workspace.outside.call_tool("default", "write_file", {"path": "c.txt", "content": "z"}, "mcp:codex"))
    asyncio.run(workspace.run("what changed?"))
    kinds = [(m.kind, getattr(m, "name", None)) for m in seen[0]]
    assert kinds[:3] == [("user", None), ("assistant", None), ("tool_result", "write_file")]
    assert "mcp:codex called write_file" in seen[0][0].model_dump_json()


def test_a_whole_turn_for_an_outside_client_names_it_in_the_audit(tmp_path: Path) -> None:
    from blitz_kernel.engine.turn.options import FrontEnd, RunOptions

    (tmp_path / "notes.txt").write_text("three regions")
    steps: list[Any] = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"text": "There are three regions."},
    ]
    workspace, _ = scripted_workspace(tmp_path, steps)
    result = asyncio.run(workspace.run_turn("how many?", "default", RunOptions(), FrontEnd(caller="mcp:codex")))
    assert result.text == "There are three regions."
    assert [(row.tool, row.caller) for row in workspace.audit("default")] == [("read_file", "mcp:codex")]


def test_a_person_at_the_front_end_is_asked_before_the_headless_policy(tmp_path: Path) -> None:
    from blitz_kernel.engine.turn.options import FrontEnd

    workspace, _ = scripted_workspace(tmp_path, [])
    approver = AllowingApprover()
    result = asyncio.run(
        workspace.outside.call_tool(
            "default", "write_file", {"path": "b.txt", "content": "y"}, "mcp:vscode", FrontEnd(approver=approver)
        )
    )
    assert result.status == "ok"
    assert [call.name for request in approver.asked for call in request.calls] == ["write_file"]
    assert workspace.audit("default")[-1].decided_by == "user"


def test_results_sent_out_are_redacted(tmp_path: Path) -> None:
    (tmp_path / "env.txt").write_text(f"OPENAI_API_KEY={SECRET}\n")
    workspace, _ = scripted_workspace(tmp_path, [])
    result = asyncio.run(workspace.outside.call_tool("default", "read_file", {"path": "env.txt"}, "mcp:claude-code"))
    assert result.status == "ok"
    assert "OPENAI_API_KEY" in result.text and SECRET not in result.text


def test_a_refused_call_records_nothing(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(tmp_path, [])
    unknown = asyncio.run(workspace.outside.call_tool("default", "invoke_agent", {}, "mcp:x"))
    invalid = asyncio.run(workspace.outside.call_tool("default", "read_file", {"paht": "a"}, "mcp:x"))
    assert (unknown.status, unknown.text) == ("error", "unknown tool 'invoke_agent'")
    assert invalid.status == "error" and invalid.text.startswith("invalid arguments for read_file")
    assert workspace.audit("default") == [] and workspace.session("default").turns == 0


def test_the_outside_tool_list_leaves_out_a_turns_own_tools(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(tmp_path, [])
    tools = {tool.name: tool for tool in workspace.outside.tools()}
    assert {"list_variables", "describe_variable", "run_python", "notebook_edit", "notebook_run", "write_file"} <= set(
        tools
    )
    assert not {"invoke_agent", "list_agents", "enter_plan_mode", "todo"} & set(tools)
    assert tools["read_file"].read_only and not tools["run_python"].read_only
    assert not tools["notebook_run"].read_only and "cell" in tools["notebook_run"].parameters["properties"]


def test_an_outside_notebook_run_asks_like_any_mutating_call(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(tmp_path, [])
    result = asyncio.run(workspace.outside.call_tool("default", "notebook_run", {"cell": 0}, "mcp:codex"))
    assert (result.status, result.text) == (
        "denied",
        "notebook_run was denied: approval needed but nobody can answer (headless)",
    )
    (row,) = workspace.audit("default")
    assert (row.tool, row.decided_by, row.caller) == ("notebook_run", "headless default", "mcp:codex")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0.0.0.0:8765", "--http listens on the loopback only (127.0.0.1, ::1 or localhost), not 0.0.0.0"),
        ("127.0.0.1:http", "--http needs HOST:PORT (e.g. 127.0.0.1:8765), got '127.0.0.1:http'"),
        ("127.0.0.1:70000", "--http: port 70000 is out of range"),
    ],
)
def test_http_listens_on_the_loopback_only(text: str, message: str) -> None:
    with pytest.raises(KernelLinkError) as raised:
        loopback_address(text)
    assert str(raised.value) == message


def test_http_addresses_on_the_loopback() -> None:
    assert loopback_address("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert loopback_address("[::1]:9000") == ("::1", 9000)
    assert loopback_address("localhost:1") == ("localhost", 1)


def test_the_client_name_is_cleaned_for_the_audit_trail() -> None:
    class Info:
        name = "claude code; rm -rf"

    class Params:
        client_info = Info()

    class Session:
        client_params = Params()

    class Context:
        session = Session()
        meta = None

    assert client_name(Context()) == "claudecoderm-rf"
    assert client_name(object()) == "client"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            [],
            "blitz mcp: no kernel given: pass --connection-file F (in a notebook: `%connect_info` names it) or --kernel-id ID",
        ),
        (["--server-url", "http://127.0.0.1:1"], "blitz mcp: --server-url goes with --kernel-id"),
        (
            ["--connection-file", "a.json", "--kernel-id", "x"],
            "blitz mcp: give --connection-file or --kernel-id, not both",
        ),
        (
            ["--kernel-id", "x", "--server-url", "ftp://host"],
            "blitz mcp: --server-url needs an http(s) URL, got 'ftp://host'",
        ),
        (
            ["--kernel-id", "x", "--server-url", "http://127.0.0.1:1"],
            "blitz mcp: cannot reach the Jupyter server at http://127.0.0.1:1: [Errno 111] Connection refused",
        ),
    ],
)
def test_bad_command_lines_are_one_clear_line(argv: list[str], line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1
    assert capsys.readouterr().err.strip() == line


def test_a_kernel_id_is_found_in_the_runtime_dir_or_named_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "kernel-abc.json").write_text("{}")
    assert find_connection_file("abc") == tmp_path / "kernel-abc.json"
    with pytest.raises(KernelLinkError, match="no kernel 'gone' on this machine"):
        find_connection_file("gone")


def test_a_file_that_is_not_a_connection_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "other.json").write_text('{"hello": 1}')
    assert main(["--connection-file", str(tmp_path / "other.json")]) == 1
    assert (
        capsys.readouterr().err.strip()
        == f"blitz mcp: {tmp_path / 'other.json'} is not a Jupyter connection file (no shell_port or key)"
    )


def test_a_connection_file_of_a_dead_kernel_is_named(tmp_path: Path) -> None:
    from jupyter_client.connect import write_connection_file

    path, _info = write_connection_file(str(tmp_path / "kernel-dead.json"), ip="127.0.0.1")
    with pytest.raises(KernelLinkError) as raised:
        KernelLink(Path(path), call_timeout_s=5, ready_timeout_s=1)
    assert str(raised.value) == f"the kernel of {path} is not running (no answer within 1 s)"


def test_the_kernel_endpoint_answers_bad_requests_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from blitz_kernel.core.outside_wire import EXPIRED, NOT_LOADED, OutsideRequest
    from blitz_kernel.notebook.outside import answer

    malformed = asyncio.run(answer('{"kind": "explode", "client": "mcp:x"}'))
    assert malformed.status == "error" and malformed.text.startswith("malformed request: kind: Input should be")
    expired = OutsideRequest(kind="tools", client="mcp:x", expires_at=1.0).model_dump_json()
    assert asyncio.run(answer(expired)).text == EXPIRED
    monkeypatch.setattr("blitz_kernel.notebook.extension.loaded_magics", lambda: None)  # no %load_ext
    fresh = OutsideRequest(kind="tools", client="mcp:x").model_dump_json()
    assert asyncio.run(answer(fresh)).text == NOT_LOADED
