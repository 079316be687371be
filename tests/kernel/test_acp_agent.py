"""`blitz acp` against a real kernel, driven by the official `agent-client-protocol` SDK's
client over stdio: a prompt is a blitz turn in the kernel with the notebook's model (the fake
OpenAI-compatible server), its text and tool calls stream back as session updates, a mutating
call asks through `session/request_permission` and the answer reaches the running turn
(docs/acp.md)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, cast

from acp import RequestError, spawn_agent_process, text_block
from acp.schema import AllowedOutcome, DeniedOutcome, Implementation, RequestPermissionResponse

from tests.fakeserver import FakeOpenAIServer

from .driver import KernelDriver, kernel_environment

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 90


class RecordingClient:
    """An ACP client that records every update and answers permission requests as told."""

    def __init__(self, answer: str | None = "allow") -> None:
        self.answer = answer
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.answering = asyncio.Event()
        """Set at the first message chunk: the turn is streaming its answer."""

    def on_connect(self, conn: Any) -> None:
        return None

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)
        if update.session_update == "agent_message_chunk":
            self.answering.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
        self.permissions.append((tool_call, [option.option_id for option in options]))
        if self.answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    def of_kind(self, kind: str) -> list[Any]:
        return [update for update in self.updates if update.session_update == kind]

    def message_text(self) -> str:
        return "".join(update.content.text for update in self.of_kind("agent_message_chunk"))


def agent_env() -> dict[str, str]:
    path = os.pathsep.join(part for part in (str(ROOT), os.environ.get("PYTHONPATH", "")) if part)
    return {**os.environ, "PYTHONPATH": path, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def over_acp(kernel: KernelDriver, client: RecordingClient, script: Any) -> Any:
    """Start `blitz acp` for the kernel, initialize, then run `script(conn)`."""

    async def session() -> Any:
        command = [sys.executable, "-m", "blitz_kernel", "acp", "--connection-file", kernel.manager.connection_file]
        async with spawn_agent_process(cast(Any, client), *command, env=agent_env(), use_unstable_protocol=True) as (
            conn,
            _,
        ):
            await asyncio.wait_for(
                conn.initialize(protocol_version=1, client_info=Implementation(name="test-client", version="1")),
                TIMEOUT_S,
            )
            try:
                return await asyncio.wait_for(script(conn), TIMEOUT_S)
            except RequestError as error:  # the error's data says what went wrong
                raise AssertionError(f"{error}: {error.data}") from None

    return asyncio.run(session())


def ok(run: Any) -> Any:
    assert run.status == "ok", run.reply
    return run


def test_a_prompt_is_a_blitz_turn_streamed_as_message_chunks(kernel: KernelDriver, server: FakeOpenAIServer) -> None:
    server.enqueue({"text": "Two regions, north and south."})
    client = RecordingClient()

    async def script(conn: Any) -> Any:
        session = await conn.new_session(cwd=str(ROOT))
        assert [mode.id for mode in session.modes.available_modes] == ["normal", "plan"]
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block("how many regions?")])
        return session.session_id, response

    session_id, response = over_acp(kernel, client, script)
    assert response.stop_reason == "end_turn"
    assert client.message_text() == "Two regions, north and south."
    assert len(client.of_kind("agent_message_chunk")) > 1  # streamed in pieces, not repeated at the end
    assert "how many regions?" in str(server.requests[-1].body)
    sessions = ok(kernel.run("%blitz_session list")).stdout
    assert session_id in sessions, sessions


def test_a_mutating_call_asks_the_acp_client_with_a_diff_and_runs_once_allowed(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "from_acp.txt", "content": "hello from ACP"}}]},
        {"text": "Written."},
    )
    client = RecordingClient("allow")

    async def script(conn: Any) -> Any:
        session = await conn.new_session(cwd=str(ROOT))
        done = await conn.prompt(session_id=session.session_id, prompt=[text_block("write the file")])
        return session.session_id, done

    session_id, response = over_acp(kernel, client, script)
    assert response.stop_reason == "end_turn"
    assert (workspace_dir / "from_acp.txt").read_text() == "hello from ACP"
    ((asked, options),) = client.permissions
    assert options == ["allow", "always", "deny"]
    assert asked.kind == "edit" and asked.title == "write_file from_acp.txt"
    diffs = [part for part in asked.content if part.type == "diff"]
    assert diffs and diffs[0].path == "from_acp.txt" and diffs[0].new_text == "hello from ACP"
    (started,) = client.of_kind("tool_call")
    assert started.kind == "edit" and started.content[0].type == "diff"
    finished = [u for u in client.of_kind("tool_call_update") if u.tool_call_id == started.tool_call_id]
    assert finished and finished[-1].status == "completed"
    audit = ok(kernel.run(f"%blitz_audit -s {session_id} --tool write_file")).stdout
    assert "acp:test-client" in audit, audit
    (workspace_dir / "from_acp.txt").unlink()


def test_a_denied_call_does_not_run_and_the_model_reads_why(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "never.txt", "content": "no"}}]},
        {"text": "Understood, not written."},
    )
    client = RecordingClient("deny")

    async def script(conn: Any) -> Any:
        session = await conn.new_session(cwd=str(ROOT))
        return await conn.prompt(session_id=session.session_id, prompt=[text_block("write it")])

    response = over_acp(kernel, client, script)
    assert response.stop_reason == "end_turn"
    assert not (workspace_dir / "never.txt").exists()
    assert "denied in the ACP client" in str(server.requests[-1].body)
    failed = [u for u in client.of_kind("tool_call_update") if u.status == "failed"]
    assert failed, client.updates


def test_plan_mode_is_a_session_mode_and_cancel_stops_the_turn(kernel: KernelDriver, server: FakeOpenAIServer) -> None:
    server.enqueue({"text": "Thinking about it at length", "hold": "acp-cancel"})
    client = RecordingClient()

    async def script(conn: Any) -> Any:
        session = await conn.new_session(cwd=str(ROOT))
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        running = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("plan it")]))
        await client.answering.wait()  # the held stream sent its first piece
        await conn.cancel(session_id=session.session_id)
        server.release("acp-cancel")
        return await running

    response = over_acp(kernel, client, script)
    assert response.stop_reason == "cancelled"
    assert [u.current_mode_id for u in client.of_kind("current_mode_update")] == ["plan"]
    assert "plan mode" in str(server.requests[0].body).lower()


def test_load_session_replays_the_conversation_and_undo_is_an_extension(
    kernel: KernelDriver, server: FakeOpenAIServer
) -> None:
    server.enqueue({"text": "First answer."})
    first = RecordingClient()

    async def create(conn: Any) -> str:
        session = await conn.new_session(cwd=str(ROOT))
        await conn.prompt(session_id=session.session_id, prompt=[text_block("first question")])
        return str(session.session_id)

    session_id = over_acp(kernel, first, create)
    again = RecordingClient()

    async def reload(conn: Any) -> Any:
        await conn.load_session(cwd=str(ROOT), session_id=session_id)
        return await conn.ext_method("blitz/undo", {"sessionId": session_id})

    undone = over_acp(kernel, again, reload)
    said = [(u.session_update, u.content.text) for u in again.updates if hasattr(u, "content")]
    assert said == [("user_message_chunk", "first question"), ("agent_message_chunk", "First answer.")]
    assert "turn" in undone["text"].lower(), undone


def test_steering_reaches_the_running_turn_and_an_aside_answers_from_the_session(
    kernel: KernelDriver, server: FakeOpenAIServer
) -> None:
    server.enqueue(
        {
            "text": "Looking at the namespace.",
            "tool_calls": [{"name": "list_variables", "arguments": {}}],
            "hold": "acp-steer",
        },
        {"text": "Using the sales table then."},
        {"text": "It was about the sales table."},
    )
    client = RecordingClient()

    async def script(conn: Any) -> Any:
        session = await conn.new_session(cwd=str(ROOT))
        running = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("look around")]))
        await client.answering.wait()  # the held stream sent its first piece
        queued = await conn.ext_method("blitz/steer", {"sessionId": session.session_id, "text": "use the sales table"})
        server.release("acp-steer")
        await running
        aside = await conn.ext_method(
            "blitz/aside", {"sessionId": session.session_id, "question": "what was it about?"}
        )
        return queued, aside

    queued, aside = over_acp(kernel, client, script)
    assert queued == {"queued": True}
    assert "use the sales table" in str(server.requests[1].body)
    assert aside == {"text": "It was about the sales table."}


def test_unknown_session_and_unknown_extension_are_clear_errors(kernel: KernelDriver) -> None:
    async def script(conn: Any) -> list[str]:
        errors = []
        for call in (
            conn.prompt(session_id="acp-nope", prompt=[text_block("hi")]),
            conn.ext_method("blitz/nothing", {"sessionId": "acp-nope"}),
            conn.load_session(cwd=str(ROOT), session_id="../escape"),
        ):
            try:
                await call
            except RequestError as error:
                errors.append(f"{error} {error.data}")
        return errors

    unknown, extension, bad_name = over_acp(kernel, RecordingClient(), script)
    assert "unknown session 'acp-nope'" in unknown
    assert "unknown session" in extension  # the session is checked first
    assert "path separator" in bad_name


def test_with_no_kernel_given_it_starts_its_own_in_the_folder_and_says_so(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.enqueue({"text": "Answered by my own kernel."})
    client = RecordingClient()
    (tmp_path / "home").mkdir()
    env = {
        **kernel_environment(tmp_path / "home"),
        "PYTHONPATH": agent_env()["PYTHONPATH"],
        "BLITZ_MODEL": "openai/fake-model",
        "BLITZ_API_BASE": server.base_url,
        "OPENAI_API_KEY": "sk-test-not-a-real-key-4242",
    }

    async def session() -> tuple[Any, bytes]:
        command = [sys.executable, "-m", "blitz_kernel", "acp"]
        transport = {"stderr": asyncio.subprocess.PIPE}
        async with spawn_agent_process(
            cast(Any, client), *command, env=env, cwd=tmp_path, transport_kwargs=transport, use_unstable_protocol=True
        ) as (conn, process):
            await asyncio.wait_for(conn.initialize(protocol_version=1), TIMEOUT_S)
            new = await conn.new_session(cwd=str(tmp_path))
            done = await asyncio.wait_for(conn.prompt(session_id=new.session_id, prompt=[text_block("hi")]), TIMEOUT_S)
            assert process.stderr is not None
            first_line = await asyncio.wait_for(process.stderr.readline(), TIMEOUT_S)
            return done, first_line

    done, first_line = asyncio.run(session())
    assert done.stop_reason == "end_turn"
    assert client.message_text() == "Answered by my own kernel."
    assert first_line.decode().startswith(f"blitz acp: no kernel given: started a kernel of its own in {tmp_path}")


def test_a_missing_connection_file_is_one_clear_line(tmp_path: Path) -> None:
    import subprocess

    gone = tmp_path / "kernel-gone.json"
    done = subprocess.run(
        [sys.executable, "-m", "blitz_kernel", "acp", "--connection-file", str(gone)],
        env=agent_env(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == f"blitz acp: connection file {gone} does not exist"


def test_a_failing_model_is_one_error_line_in_the_client(kernel: KernelDriver, server: FakeOpenAIServer) -> None:
    server.enqueue({"fault": "status", "status": 400, "message": "bad request from the fake"})
    client = RecordingClient()

    async def script(conn: Any) -> Any:
        session = await conn.new_session(cwd=str(ROOT))
        return await conn.prompt(session_id=session.session_id, prompt=[text_block("fail please")])

    response = over_acp(kernel, client, script)
    assert response.stop_reason == "end_turn"
    said = [
        u.content.text for u in client.of_kind("agent_message_chunk") if "bad request from the fake" in u.content.text
    ]
    assert len(said) == 1 and said[0].strip().startswith("error:"), client.updates


def test_a_client_that_goes_away_mid_permission_stops_the_turn_and_frees_the_kernel(
    kernel: KernelDriver, server: FakeOpenAIServer, workspace_dir: Path
) -> None:
    server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "orphan.txt", "content": "never"}}]},
        {"text": "Stopped."},
    )
    asked = asyncio.Event()

    class GoneClient(RecordingClient):
        async def request_permission(self, session_id: str, tool_call: Any, options: list[Any], **_: Any) -> Any:
            asked.set()
            await asyncio.Event().wait()  # nobody ever answers: the client is about to go away

    async def script(conn: Any) -> str:
        session = await conn.new_session(cwd=str(ROOT))
        running = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("write it")]))
        await asked.wait()
        running.cancel()
        return str(session.session_id)  # leaving closes the agent's stdin

    session_id = over_acp(kernel, GoneClient(), script)
    assert ok(kernel.run("print(6 * 7)", timeout=60)).stdout.strip() == "42"  # the kernel is free
    assert not (workspace_dir / "orphan.txt").exists()
    audit = ok(kernel.run(f"%blitz_audit -s {session_id} --tool write_file")).stdout
    assert "denied" in audit, audit  # the unanswered request failed closed
    assert "the ACP client could not be asked" in str(server.requests[-1].body)  # and the model read why
    server.enqueue({"text": "Still here."})  # and the session's history is valid for its next turn
    again = ok(kernel.run(f"%%blitz -s {session_id}\nare you there?", timeout=60))
    assert "Still here." in str(again.outputs), again.outputs
