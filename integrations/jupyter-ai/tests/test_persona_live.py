"""The Blitz persona end to end, with every part real but the model: Jupyter AI's own persona
manager and ACP client (jupyter-ai-acp-client's JaiAcpClient) in this environment, a Jupyter
server's kernel and session managers running the notebook's kernel from blitz's environment with
blitz loaded, and `blitz acp` from blitz's environment as the persona's subprocess. The two sides
use different ACP SDK versions (0.11 here, 0.12 in blitz) and meet on protocol version 1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_server.serverapp import ServerApp
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from jupyter_server.services.sessions.sessionmanager import SessionManager
from jupyterlab_chat.models import Message
from jupyterlab_chat.ychat import YChat

from conftest import ROOT, blitz_python
from tests.fakeserver import FakeOpenAIServer

FAKE_KEY = "sk-test-not-a-real-key-4242"
TIMEOUT_S = 120.0
NOTEBOOK = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


class Server:
    """The parts of a Jupyter server the persona sees: kernels and sessions under `root`."""

    def __init__(self, root: Path, kernels: Path, runtime: Path) -> None:
        specs = KernelSpecManager(kernel_dirs=[str(kernels)], ensure_native_kernel=False)
        self.kernels = AsyncMappingKernelManager(
            kernel_spec_manager=specs, root_dir=str(root), connection_dir=str(runtime)
        )
        self.sessions = SessionManager(
            kernel_manager=self.kernels, contents_manager=AsyncLargeFileManager(root_dir=str(root))
        )
        self.app = ServerApp(root_dir=str(root))
        self.app.kernel_manager = self.kernels
        self.app.session_manager = self.sessions

    async def open_notebook(self, path: str, load: bool = True) -> str:
        """As JupyterLab opening a notebook does: a session, its kernel (blitz loaded unless not
        `load`); the kernel id."""
        model = await self.sessions.create_session(
            path=path, name=Path(path).name, type="notebook", kernel_name="blitz-test"
        )
        kernel_id = str(model["kernel"]["id"])
        code = "%load_ext blitz_kernel\n%blitz_config model_retries=0" if load else "pass"
        reply = await self.run(kernel_id, code)
        assert reply["status"] == "ok", reply
        return kernel_id

    async def run(self, kernel_id: str, code: str) -> dict[str, Any]:
        """Run `code` in the kernel as a notebook cell; its reply content with its stdout under "stdout"."""
        client = self.kernels.get_kernel(kernel_id).client()
        client.start_channels()
        try:
            await client.wait_for_ready(timeout=TIMEOUT_S)
            printed: list[str] = []

            def output(message: dict[str, Any]) -> None:
                if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
                    printed.append(message["content"]["text"])

            reply = await client.execute_interactive(code, timeout=TIMEOUT_S, output_hook=output)
        finally:
            client.stop_channels()
        return {**reply["content"], "stdout": "".join(printed)}


@pytest.fixture(scope="module")
def fake() -> Any:
    with FakeOpenAIServer() as server:
        yield server


@pytest_asyncio.fixture
async def server(tmp_path: Path, fake: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Server]:
    python = blitz_python()
    home = tmp_path / "home"
    home.mkdir()
    environment = {
        "BLITZ_MODEL": "openai/fake-model",
        "BLITZ_API_BASE": fake.base_url,
        "OPENAI_API_KEY": FAKE_KEY,
        "HOME": str(home),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }
    for key, value in environment.items():  # `blitz acp` and a kernel it starts inherit them
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("BLITZ_EXECUTABLE", f"{python} -m blitz_kernel")
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    spec = tmp_path / "kernels" / "blitz-test"
    spec.mkdir(parents=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "blitz test", "language": "python", "env": environment})
    )
    root = tmp_path / "root"
    (root / "work").mkdir(parents=True)
    (root / "work" / "analysis.ipynb").write_text(json.dumps(NOTEBOOK))
    (tmp_path / "runtime").mkdir()
    jupyter = Server(root, tmp_path / "kernels", tmp_path / "runtime")
    fake.reset()
    try:
        yield jupyter
    finally:
        await jupyter.kernels.shutdown_all(now=True)
        fake.reset()


async def blitz_in_chat(server: Server, chat_path: str) -> tuple[Any, YChat]:
    """Jupyter AI's persona manager for a chat at `chat_path`, and its Blitz persona."""
    from jupyter_ai_persona_manager.extension import PersonaManagerExtension
    from jupyter_ai_persona_manager.persona_manager import PersonaManager

    PersonaManager._ep_persona_classes = None  # load the entry points with this test's environment
    extension = PersonaManagerExtension()
    extension.serverapp = server.app
    chat = YChat()
    chat.initial_path = chat_path
    manager = PersonaManager(
        parent=extension, chat=chat, root_dir=server.app.root_dir, event_loop=asyncio.get_running_loop()
    )
    (persona,) = [p for p in manager.personas.values() if p.name == "Blitz"]
    return persona, chat


def say(chat: YChat, body: str) -> Message:
    """A user's message in the chat, as the chat's front end adds it."""
    from jupyterlab_chat.models import NewMessage, User

    chat.set_user(User(username="ada", name="Ada", display_name="Ada"))
    message_id = chat.add_message(NewMessage(body=body, sender="ada"))
    message = chat.get_message(message_id)
    assert message is not None
    return message


async def until(chat: YChat, condition: Callable[[], Any], what: str) -> Any:
    """Wait for the chat document to reach `condition` (checked on each of its changes)."""
    changed = asyncio.Event()
    subscription = chat.ymessages.observe_deep(lambda _events: changed.set())
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while not (found := condition()):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {what}: {[m.body for m in chat.get_messages()]}")
            changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)
        return found
    finally:
        chat.ymessages.unobserve(subscription)


def replies(chat: YChat, persona: Any) -> list[Message]:
    return [m for m in chat.get_messages() if m.sender == persona.id]


async def test_a_prompt_in_the_chat_is_a_turn_in_the_notebooks_kernel_streamed_back(
    server: Server, fake: FakeOpenAIServer
) -> None:
    kernel_id = await server.open_notebook("work/analysis.ipynb")
    await server.run(kernel_id, "regions = ['north', 'south']")
    fake.enqueue({"text": "Two regions, north and south, in this notebook."})
    persona, chat = await blitz_in_chat(server, "work/talk.chat")
    pieces: list[str] = []
    chat.ymessages.observe_deep(lambda _events: pieces.append("".join(m.body for m in replies(chat, persona))))
    try:
        await asyncio.wait_for(persona.on_message(say(chat, "@Blitz how many regions?")), TIMEOUT_S)
        assert persona.kernel is not None and persona.kernel.kernel_id == kernel_id, persona.kernel
        assert persona.kernel.reason == "folder"
        assert [mode.id for mode in persona.acp_modes] == ["normal", "plan"]  # the chat's mode selector
        (answer,) = replies(chat, persona)
        assert answer.body == "Two regions, north and south, in this notebook."
        growing = sorted({text for text in pieces if text}, key=len)
        assert len(growing) > 2 and answer.body.startswith(growing[0]) and growing[0] != answer.body, growing
        sent = str(fake.requests[-1].body)
        assert "how many regions?" in sent
        assert "insert_cell" not in sent  # Jupyter AI's note for other agents' tools is not sent
        session_id = await persona.get_session_id()
        listed = await server.run(kernel_id, "%blitz_session list")
        assert session_id in listed["stdout"], listed
    finally:
        await persona.shutdown()


async def test_a_mutating_call_asks_in_the_chat_and_runs_once_allowed_there(
    server: Server, fake: FakeOpenAIServer
) -> None:
    kernel_id = await server.open_notebook("work/analysis.ipynb")
    fake.enqueue(
        {
            "tool_calls": [
                {"name": "write_file", "arguments": {"path": "from_chat.txt", "content": "hello from Jupyter AI"}}
            ]
        },
        {"text": "Written."},
    )
    persona, chat = await blitz_in_chat(server, "work/talk.chat")
    turn = asyncio.ensure_future(persona.on_message(say(chat, "@Blitz write the file")))
    try:

        def pending() -> Any:
            for message in replies(chat, persona):
                for call in (message.metadata or {}).get("tool_calls", []):
                    if call.get("permission_status") == "pending":
                        return call
            return None

        asked = await until(chat, pending, "the permission request in the chat")
        assert [o["option_id"] for o in asked["permission_options"]] == ["allow", "always", "deny"]
        assert asked["title"] == "write_file from_chat.txt"
        written = Path(server.app.root_dir) / "work" / "from_chat.txt"
        assert not written.exists()  # nothing runs before the answer
        # what Jupyter AI's permission route does when the user clicks Allow in the chat
        client = await persona.get_client()
        session_id = await persona.get_session_id()
        assert client.resolve_permission(session_id, asked["tool_call_id"], "allow")
        await asyncio.wait_for(turn, TIMEOUT_S)
        assert written.read_text() == "hello from Jupyter AI"
        assert "Written." in "".join(m.body for m in replies(chat, persona))
        audit = await server.run(kernel_id, f"%blitz_audit -s {session_id} --tool write_file")
        assert "acp:JupyterAI" in audit["stdout"], audit
    finally:
        turn.cancel()
        await persona.shutdown()


async def test_with_no_notebook_in_the_chats_folder_blitz_starts_its_own_kernel_there(
    server: Server, fake: FakeOpenAIServer
) -> None:
    await server.open_notebook("work/analysis.ipynb")  # another folder's notebook is not this chat's
    (Path(server.app.root_dir) / "notes").mkdir()
    fake.enqueue({"tool_calls": [{"name": "run_python", "arguments": {"code": "import os; print(os.getcwd())"}}]})
    fake.enqueue({"text": "Done."})
    persona, chat = await blitz_in_chat(server, "notes/talk.chat")
    try:
        turn = asyncio.ensure_future(persona.on_message(say(chat, "@Blitz where are you?")))

        def pending() -> Any:
            calls = [c for m in replies(chat, persona) for c in (m.metadata or {}).get("tool_calls", [])]
            return next((c for c in calls if c.get("permission_status") == "pending"), None)

        asked = await until(chat, pending, "the run_python permission request")
        assert persona.kernel is None
        client = await persona.get_client()
        assert client.resolve_permission(await persona.get_session_id(), asked["tool_call_id"], "allow")
        await asyncio.wait_for(turn, TIMEOUT_S)
        result = str(fake.requests[-1].body)
        assert str(Path(server.app.root_dir) / "notes") in result, result
    finally:
        await persona.shutdown()


async def test_each_chat_has_its_own_blitz_acp_under_one_persona_id(server: Server) -> None:
    (Path(server.app.root_dir) / "other").mkdir()
    first, _ = await blitz_in_chat(server, "work/one.chat")
    second, _ = await blitz_in_chat(server, "other/two.chat")
    assert first.id == second.id == "jupyter-ai-personas::blitz_jupyter_ai::BlitzAcpPersona"
    # the base keeps the agent subprocess on the class: one class each, one subprocess each
    assert type(first) is not type(second)
    assert isinstance(first, type(second).__mro__[1])


async def test_a_notebook_kernel_without_blitz_is_one_clear_line_and_loading_it_is_enough(
    server: Server, fake: FakeOpenAIServer
) -> None:
    kernel_id = await server.open_notebook("work/analysis.ipynb", load=False)
    persona, chat = await blitz_in_chat(server, "work/talk.chat")
    try:
        await asyncio.wait_for(persona.on_message(say(chat, "@Blitz hello")), TIMEOUT_S)
        (said,) = replies(chat, persona)
        assert "blitz acp: blitz_kernel is not loaded in this kernel: run %load_ext blitz_kernel" in said.body
        assert fake.requests == []  # no model call
        # the user loads it in the notebook and asks again: a fresh `blitz acp` attaches
        loaded = await server.run(kernel_id, "%load_ext blitz_kernel\n%blitz_config model_retries=0")
        assert loaded["status"] == "ok", loaded
        fake.enqueue({"text": "Loaded now, hello."})
        await asyncio.wait_for(persona.on_message(say(chat, "@Blitz hello again")), TIMEOUT_S)
        assert replies(chat, persona)[-1].body == "Loaded now, hello."
    finally:
        await persona.shutdown()


async def test_the_chats_stop_button_denies_the_waiting_call_and_frees_the_kernel(
    server: Server, fake: FakeOpenAIServer
) -> None:
    kernel_id = await server.open_notebook("work/analysis.ipynb")
    fake.enqueue(
        {"tool_calls": [{"name": "run_python", "arguments": {"code": "ran_after_stop = True"}}]},
        {"text": "Not run, as you stopped it."},
    )
    persona, chat = await blitz_in_chat(server, "work/talk.chat")
    try:
        turn = asyncio.ensure_future(persona.on_message(say(chat, "@Blitz set a flag")))

        def pending() -> Any:
            calls = [c for m in replies(chat, persona) for c in (m.metadata or {}).get("tool_calls", [])]
            return next((c for c in calls if c.get("permission_status") == "pending"), None)

        await until(chat, pending, "the run_python permission request")
        assert persona.processing
        await persona.cancel_response()  # what the chat's stop button calls
        await asyncio.wait_for(turn, TIMEOUT_S)
        assert not persona.processing and pending() is None
        # the turn has ended (the kernel runs a cell again) and the call never ran
        ran = await server.run(kernel_id, "print('ran_after_stop' in globals())")
        assert ran["stdout"] == "False\n", ran
    finally:
        await persona.shutdown()


async def test_when_the_notebooks_kernel_is_shut_down_the_next_message_attaches_afresh_in_the_same_session(
    server: Server, fake: FakeOpenAIServer
) -> None:
    kernel_id = await server.open_notebook("work/analysis.ipynb")
    fake.enqueue({"text": "First answer, from the notebook's kernel."})
    persona, chat = await blitz_in_chat(server, "work/talk.chat")
    try:
        await asyncio.wait_for(persona.on_message(say(chat, "@Blitz first")), TIMEOUT_S)
        session_id = await persona.get_session_id()
        await server.kernels.shutdown_kernel(kernel_id, now=True)  # as JupyterLab's "Shut Down Kernel"
        fake.enqueue({"text": "Second answer, from a kernel of my own."})
        await asyncio.wait_for(persona.on_message(say(chat, "@Blitz second")), TIMEOUT_S)
        assert replies(chat, persona)[-1].body == "Second answer, from a kernel of my own."
        assert persona.kernel is None  # no notebook kernel left in the folder: blitz acp's own
        assert await persona.get_session_id() == session_id  # the same blitz session, loaded again
        sent = json.dumps(fake.requests[-1].body)
        assert "first" in sent and "First answer, from the notebook" in sent  # its history came along
    finally:
        await persona.shutdown()
