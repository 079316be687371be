"""An outside client's mutating call asked in the notebook (docs/mcp-server.md): the bridge's
`ask_permission` card answers it; no answer in time leaves it to the headless policy."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from blitz_kernel.core.terms import HeadlessPolicy
from blitz_kernel.engine.events import PendingCall, PermissionDecision, PermissionRequest
from blitz_kernel.engine.safety.approval import TIMEOUT_REASON, ApprovalGate
from blitz_kernel.engine.turn.options import FrontEnd
from blitz_kernel.notebook import bridge as bridge_module
from blitz_kernel.notebook.bridge import NotebookBridge
from blitz_kernel.notebook.outside_approval import OUTSIDE_ASK_TIMEOUT_S, NotebookApprover, notebook_approver
from tests.helpers.workspaces import scripted_workspace

from .test_notebook_tools import FakeComm, hello

WRITE = {"path": "a.txt", "content": "hello"}


async def sent_op(comm: FakeComm, op: str, timeout_s: float = 10.0) -> dict[str, Any]:
    """The first request of `op` the bridge sent, once it has (the turn runs until it asks)."""
    async with asyncio.timeout(timeout_s):
        while True:
            found = [m for m in comm.sent if m.get("kind") == "request" and m["op"] == op]
            if found:
                return found[0]
            await asyncio.sleep(0.01)


def connected() -> tuple[NotebookBridge, FakeComm]:
    bridge, comm = NotebookBridge(), FakeComm()
    hello(comm, bridge)
    return bridge, comm


async def call_write(workspace: Any, bridge: NotebookBridge, timeout_s: float | None = 30.0) -> Any:
    approval = workspace.configuration.config.approval
    approver = NotebookApprover(bridge, "mcp:claude-code", timeout_s, approval.headless)
    return await workspace.outside.call_tool(
        "default", "write_file", WRITE, "mcp:claude-code", FrontEnd(approver=approver)
    )


async def test_allow_in_the_notebook_runs_the_call_and_the_card_names_the_client(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(tmp_path, [])
    bridge, comm = connected()
    task = asyncio.ensure_future(call_write(workspace, bridge))
    request = await sent_op(comm, "ask_permission")
    assert request["op"] == "ask_permission"
    params = request["params"]
    assert params["client"] == "mcp:claude-code" and params["timeout_s"] == 30.0
    ((call),) = params["calls"]
    assert call["name"] == "write_file" and "hello" in call["preview"]
    comm.reply({"kind": "reply", "id": request["id"], "ok": True, "result": {"answer": "allow"}})
    result = await task
    assert result.status == "ok"
    assert (tmp_path / "a.txt").read_text() == "hello"
    (row,) = workspace.audit("default")
    assert (row.decision, row.decided_by, row.caller) == ("allowed", "user", "mcp:claude-code")


async def test_deny_in_the_notebook_gives_the_client_the_reason(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(tmp_path, [])
    bridge, comm = connected()
    task = asyncio.ensure_future(call_write(workspace, bridge))
    request = await sent_op(comm, "ask_permission")
    result_data = {"answer": "deny", "reason": "not in this folder"}
    comm.reply({"kind": "reply", "id": request["id"], "ok": True, "result": result_data})
    result = await task
    assert result.status == "denied"
    assert "not in this folder" in result.text
    assert not (tmp_path / "a.txt").exists()


async def test_no_answer_in_time_leaves_it_to_the_headless_policy_and_takes_the_card_back(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(tmp_path, [])
    bridge, comm = connected()
    result = await call_write(workspace, bridge, timeout_s=0.05)
    assert result.status == "denied"
    assert "nobody answered in the notebook within 0.05 s" in result.text
    assert "nobody can answer (headless)" in result.text
    assert not (tmp_path / "a.txt").exists()
    closing = await sent_op(comm, "close_permission")
    asked = await sent_op(comm, "ask_permission")
    assert closing["op"] == "close_permission"
    assert closing["params"] == {"question": asked["params"]["question"]}


async def test_no_answer_in_time_runs_the_call_when_the_headless_policy_allows(tmp_path: Path) -> None:
    allow_late: dict[str, Any] = {"approval.headless": "allow", "approval.timeout_s": 0.05}
    workspace, _ = scripted_workspace(tmp_path, [], **allow_late)
    bridge, _comm = connected()
    approver = notebook_approver_for(workspace, bridge)
    assert approver is not None and approver.timeout_s == 0.05
    front_end = FrontEnd(approver=approver)
    result = await workspace.outside.call_tool("default", "write_file", WRITE, "mcp:codex", front_end)
    assert result.status == "ok"
    assert (tmp_path / "a.txt").read_text() == "hello"


def notebook_approver_for(workspace: Any, bridge: NotebookBridge) -> NotebookApprover | None:
    saved, bridge_module._current = bridge_module._current, bridge
    try:
        return notebook_approver(workspace, "mcp:codex")
    finally:
        bridge_module._current = saved


def test_without_a_connected_front_end_nothing_is_asked(tmp_path: Path) -> None:
    workspace, _ = scripted_workspace(tmp_path, [])
    assert notebook_approver_for(workspace, NotebookBridge()) is None
    bridge, _comm = connected()
    approver = notebook_approver_for(workspace, bridge)
    assert approver is not None and approver.timeout_s == OUTSIDE_ASK_TIMEOUT_S  # approval.timeout_s unset


class SilentApprover:
    """Someone who was asked and never answers."""

    interactive = True

    def __init__(self, expires_to_headless: bool) -> None:
        self.expires_to_headless = expires_to_headless

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        await asyncio.Event().wait()
        return []


async def test_the_gate_leaves_an_expired_outside_question_to_the_headless_policy() -> None:
    calls = [PendingCall(id="c1", name="write_file")]
    cases: list[tuple[bool, HeadlessPolicy, str]] = [
        (True, "allow", "allow"),
        (True, "deny", "deny"),
        (False, "allow", "deny"),
    ]
    for marked, headless, expected in cases:
        gate = ApprovalGate(SilentApprover(marked), headless_policy=headless, timeout_s=0.02)
        decision = (await gate.decide(gate.new_request(calls)))["c1"]
        assert (decision.decision, decision.decided_by) == (expected, "timeout")
        if not marked:
            assert decision.reason == TIMEOUT_REASON  # a notebook turn's own question: expired is denied


async def test_a_front_end_that_answers_with_an_error_denies_even_when_headless_allows(tmp_path: Path) -> None:
    """An error reply is an answer, not "nobody there": it must not hand the call to a headless
    policy that allows it."""
    workspace, _ = scripted_workspace(tmp_path, [], **{"approval.headless": "allow"})
    bridge, comm = connected()
    task = asyncio.ensure_future(call_write(workspace, bridge))
    request = await sent_op(comm, "ask_permission")
    error = {"code": "unknown_op", "message": "this front end cannot ask permission questions"}
    comm.reply({"kind": "reply", "id": request["id"], "ok": False, "error": error})
    result = await task
    assert result.status == "denied" and "could not ask" in result.text
    assert not (tmp_path / "a.txt").exists()
