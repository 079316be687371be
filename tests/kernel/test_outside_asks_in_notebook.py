"""Outside clients' mutating calls asked in the notebook (docs/mcp-server.md, docs/acp.md),
over a real kernel: the test plays the labextension on the `blitz.notebook` comm (as
test_bridge.py does) while the official `mcp` and `acp` SDK clients call from outside."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from acp import text_block

from tests.fakeserver import FakeOpenAIServer

from .driver import KernelDriver
from .test_acp_agent import ROOT, RecordingClient, over_acp
from .test_bridge import PlayedFrontEnd
from .test_mcp_server import over_mcp, text_of

TARGET = "blitz.notebook"


def serve_questions(
    front_end: PlayedFrontEnd, answer: dict[str, Any] | None, until: str, timeout: float = 60
) -> list[dict[str, Any]]:
    """Answer the kernel's `ask_permission` requests on the played front end's comm with
    `answer` (None: leave them open) until a request of op `until` came; every request seen."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        message = front_end.kernel._next_iopub(deadline)
        content = message["content"]
        if message["msg_type"] != "comm_msg" or content.get("comm_id") != front_end.comm_id:
            continue
        request = content["data"]
        if request.get("kind") != "request":
            continue
        seen.append(request)
        if request["op"] == "ask_permission" and answer is not None:
            reply = {"kind": "reply", "id": request["id"], "ok": True, "result": answer}
            front_end._send("comm_msg", {"comm_id": front_end.comm_id, "data": reply})
        if request["op"] == until:
            return seen


def in_thread(work: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except BaseException as error:  # noqa: BLE001 - re-raised by the test
            box["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def joined(thread: threading.Thread, box: dict[str, Any]) -> Any:
    thread.join(timeout=120)
    assert not thread.is_alive(), "the outside client did not finish"
    if "error" in box:
        raise box["error"]
    return box["result"]


def test_an_mcp_write_asks_in_the_notebook_naming_the_client_and_allow_runs_it(
    kernel: KernelDriver, workspace_dir: Path
) -> None:
    front_end = PlayedFrontEnd(kernel)
    front_end.connect()
    try:
        target = workspace_dir / "asked_in_notebook.txt"
        thread, box = in_thread(lambda: over_mcp(kernel, ("write_file", {"path": target.name, "content": "ok"})))
        (asked,) = serve_questions(front_end, {"answer": "allow"}, until="ask_permission")
        _, (written,) = joined(thread, box)
    finally:
        front_end.disconnect()
    assert asked["params"]["client"].startswith("mcp:")
    assert [call["name"] for call in asked["params"]["calls"]] == ["write_file"]
    assert not written.is_error, text_of(written)
    assert target.read_text() == "ok"
    target.unlink()


def test_acp_asks_in_both_places_and_the_notebook_answering_first_settles_the_client(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "either.txt", "content": "first wins"}}]},
        {"text": "Written."},
    )
    never = RecordingClient("allow")
    asked_in_client = threading.Event()

    async def never_answers(session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        never.permissions.append(tool_call)
        asked_in_client.set()
        await asyncio.Event().wait()  # the person at the ACP client looks away

    never.request_permission = never_answers  # type: ignore[method-assign]

    async def script(conn: Any) -> Any:
        session = await conn.new_session(cwd=str(ROOT))
        return await conn.prompt(session_id=session.session_id, prompt=[text_block("write the file")])

    front_end = PlayedFrontEnd(kernel)
    front_end.connect()
    try:
        thread, box = in_thread(lambda: over_acp(kernel, never, script))
        (asked,) = serve_questions(front_end, {"answer": "allow"}, until="ask_permission")
        response = joined(thread, box)
    finally:
        front_end.disconnect()
    assert asked["params"]["client"] == "acp:test-client"
    assert response.stop_reason == "end_turn"
    assert (workspace_dir / "either.txt").read_text() == "first wins"
    assert asked_in_client.is_set() and len(never.permissions) == 1  # shown in the client too
    (workspace_dir / "either.txt").unlink()


def test_acp_client_answering_first_takes_the_notebooks_card_back(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "client_first.txt", "content": "x"}}]},
        {"text": "Denied, fine."},
    )
    client = RecordingClient("deny")

    async def script(conn: Any) -> Any:
        session = await conn.new_session(cwd=str(ROOT))
        return await conn.prompt(session_id=session.session_id, prompt=[text_block("write the file")])

    front_end = PlayedFrontEnd(kernel)
    front_end.connect()
    try:
        thread, box = in_thread(lambda: over_acp(kernel, client, script))
        seen = serve_questions(front_end, None, until="close_permission")
        response = joined(thread, box)
    finally:
        front_end.disconnect()
    asked, closed = seen[0], seen[-1]
    assert asked["op"] == "ask_permission"
    assert closed["params"] == {"question": asked["params"]["question"]}
    assert response.stop_reason == "end_turn"
    assert not (workspace_dir / "client_first.txt").exists()


def test_a_blitz_turn_over_mcp_asks_its_calls_in_the_notebook(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "by_turn.txt", "content": "from the turn"}}]},
        {"text": "Written."},
    )
    front_end = PlayedFrontEnd(kernel)
    front_end.connect()
    try:
        thread, box = in_thread(lambda: over_mcp(kernel, ("blitz_turn", {"prompt": "write by_turn.txt"})))
        (asked,) = serve_questions(front_end, {"answer": "allow"}, until="ask_permission")
        _, (answered,) = joined(thread, box)
    finally:
        front_end.disconnect()
    assert asked["params"]["client"].startswith("mcp:")
    assert not answered.is_error, text_of(answered)
    assert "Written." in text_of(answered)
    assert (workspace_dir / "by_turn.txt").read_text() == "from the turn"
    (workspace_dir / "by_turn.txt").unlink()
