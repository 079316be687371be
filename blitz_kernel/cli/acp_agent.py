"""`blitz acp`: blitz as an ACP agent over stdio (docs/acp.md), on the official
`agent-client-protocol` SDK, so Jupyter AI's chat, Zed and other ACP clients can talk to it.

Like `blitz mcp`, it never runs the agent itself: every prompt becomes a blitz turn in the
notebook's kernel (kernel_link.py, the kernel's own signed connection), with the notebook's
model, tools, approvals, audit and undo. The turn's events stream back and map onto ACP:
text and thinking to message and thought chunks, tool calls to `tool_call`/`tool_call_update`
(a diff for file and cell edits), permission requests and a plan to review to
`session/request_permission`, plan mode to the session modes. The answers, Stop and steering
go back into the running turn as controls. With no kernel given it starts one of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import uuid
from pathlib import Path
from typing import Any, cast

from ..core.outside_wire import OutsideControl, OutsideEvent, OutsideReply, OutsideRequest
from .acp_updates import EventMapper
from .kernel_link import (
    READY_TIMEOUT_S,
    KernelLink,
    KernelLinkError,
    add_kernel_options,
    check_server_kernel,
    find_connection_file,
)

DEFAULT_CALL_TIMEOUT_S = 600.0
OWN_KERNEL_READY_S = 120.0
MODES = {"normal": "Normal", "plan": "Plan"}
"""The ACP session modes: a normal turn, or a plan-only one (`%%blitz --plan`)."""
STOP_REASONS = {"end_turn": "end_turn", "cancelled": "cancelled", "max_turns": "max_turn_requests"}


def parser(prog: str) -> argparse.ArgumentParser:
    command = argparse.ArgumentParser(
        prog=f"{prog} acp",
        description="Speak ACP (Agent Client Protocol) over stdio: each prompt is a blitz turn in the "
        "notebook's kernel, with its approvals, audit and undo. See docs/acp.md.",
    )
    add_kernel_options(command, DEFAULT_CALL_TIMEOUT_S, "a request waits for a busy kernel")
    return command


def main(argv: list[str], prog: str = "blitz") -> int:
    args = parser(prog).parse_args(argv)
    own = None
    try:
        if args.call_timeout <= 0:
            raise KernelLinkError("--call-timeout must be a positive number of seconds")
        connection = connection_file(args)
        if connection is None:
            own = OwnKernel.start(Path.cwd())
            connection = own.connection_file
            print(
                f"blitz acp: no kernel given: started a kernel of its own in {Path.cwd()} "
                f"(connection file {connection})",
                file=sys.stderr,
            )
        # a kernel it has just started may take a while on a busy machine; one given must answer soon
        link = KernelLink(connection, args.call_timeout, OWN_KERNEL_READY_S if own else READY_TIMEOUT_S)
    except KernelLinkError as error:
        print(f"blitz acp: {error}", file=sys.stderr)
        if own is not None:
            own.stop()
        return 1
    try:
        if own is not None:
            own.load_extension(link)
        listed = link.ask(OutsideRequest(kind="tools", client="acp:blitz-acp"))
        if listed.status != "ok":
            raise KernelLinkError(listed.text)
        signal.signal(signal.SIGTERM, _end)  # a client that terminates us: the same clean end as EOF
        asyncio.run(serve(BlitzAgent(link)))
    except KernelLinkError as error:
        print(f"blitz acp: {error}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        link.close()
        if own is not None:
            own.stop()
    return 0


async def serve(agent: BlitzAgent) -> None:
    from acp import run_agent

    # the SDK's Agent protocol lists every optional method; BlitzAgent has the ones blitz serves
    try:
        await run_agent(cast(Any, agent), use_unstable_protocol=True)
    finally:  # the client went away (or we were told to end): no turn may wait for it
        agent.stop_running()  # session/resume is still "unstable" in the SDK


def _end(signum: int, frame: Any) -> None:
    raise SystemExit(0)


def connection_file(args: argparse.Namespace) -> Path | None:
    """The kernel to attach to; None: none given, start one."""
    if args.connection_file and args.kernel_id:
        raise KernelLinkError("give --connection-file or --kernel-id, not both")
    if args.server_url and not args.kernel_id:
        raise KernelLinkError("--server-url goes with --kernel-id")
    if args.connection_file:
        return Path(args.connection_file).expanduser()
    if args.kernel_id:
        if args.server_url:
            check_server_kernel(args.server_url, args.kernel_id)
        return find_connection_file(args.kernel_id)
    return None


class OwnKernel:
    """The kernel `blitz acp` starts when given none: IPython in the current folder, with the
    blitz extension loaded, ended when the agent ends."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self.connection_file = Path(manager.connection_file)

    @classmethod
    def start(cls, folder: Path) -> OwnKernel:
        from jupyter_client.manager import KernelManager
        from jupyter_core.paths import jupyter_runtime_dir

        runtime = Path(jupyter_runtime_dir())
        runtime.mkdir(parents=True, exist_ok=True)
        connection = runtime / f"kernel-blitz-acp-{uuid.uuid4().hex[:12]}.json"
        manager = KernelManager(kernel_name="python3", connection_file=os.fspath(connection))
        try:
            manager.start_kernel(cwd=os.fspath(folder))
        except Exception as error:  # noqa: BLE001 - any failure to start is one line for the user
            raise KernelLinkError(f"could not start a kernel: {error}") from None
        return cls(manager)

    def load_extension(self, link: KernelLink) -> None:
        client = link.client
        msg_id = client.execute("%load_ext blitz_kernel", silent=True, store_history=False)
        reply = client.get_shell_msg(timeout=link.call_timeout_s)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = client.get_shell_msg(timeout=link.call_timeout_s)
        if reply["content"].get("status") != "ok":
            raise KernelLinkError(f"could not load blitz_kernel in its kernel: {reply['content'].get('evalue')}")

    def stop(self) -> None:
        self.manager.shutdown_kernel(now=True)


class AcpSession:
    """What the agent keeps per ACP session: its blitz session and mode, the running turn."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.mode = "normal"
        self.stream: str | None = None
        self.cancelled = False


class BlitzAgent:
    """The ACP agent (the SDK's `Agent` protocol); each ACP session is a durable blitz session."""

    def __init__(self, link: KernelLink) -> None:
        self.link = link
        self.conn: Any = None
        self.client = "acp:client"
        self.sessions: dict[str, AcpSession] = {}
        self.acks: dict[str, asyncio.Future[str | None]] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, client_info: Any = None, **_: Any) -> Any:
        from acp import PROTOCOL_VERSION
        from acp.schema import (
            AgentCapabilities,
            Implementation,
            InitializeResponse,
            SessionCapabilities,
            SessionResumeCapabilities,
        )

        from .. import __version__

        self.client = f"acp:{safe_name(getattr(client_info, 'name', None))}"
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True, session_capabilities=SessionCapabilities(resume=SessionResumeCapabilities())
            ),
            agent_info=Implementation(name="blitz", title="Blitz", version=__version__),
        )

    async def authenticate(self, method_id: str, **_: Any) -> None:
        return None

    async def new_session(self, cwd: str, **_: Any) -> Any:
        from acp.schema import NewSessionResponse

        name = f"acp-{uuid.uuid4().hex[:12]}"
        self.sessions[name] = AcpSession(name)
        return NewSessionResponse(session_id=name, modes=modes("normal"))

    async def load_session(self, cwd: str, session_id: str, **_: Any) -> Any:
        """Attach to a blitz session (an earlier ACP session, or a notebook's, e.g. "default")
        and replay its conversation as message chunks."""
        from acp import update_agent_message_text, update_agent_thought_text, update_user_message_text
        from acp.schema import LoadSessionResponse

        reply = await self._ask(OutsideRequest(kind="history", client=self.client, session=session_id))
        state = self.sessions.setdefault(session_id, AcpSession(session_id))
        for message in reply.history:
            if message.role == "user":
                update: Any = update_user_message_text(message.text)
            elif message.role == "thought":
                update = update_agent_thought_text(message.text)
            else:
                update = update_agent_message_text(message.text)
            await self.conn.session_update(session_id=session_id, update=update)
        return LoadSessionResponse(modes=modes(state.mode))

    async def resume_session(self, session_id: str, cwd: str, **_: Any) -> Any:
        from acp.schema import ResumeSessionResponse

        await self._ask(OutsideRequest(kind="history", client=self.client, session=session_id))  # the name is valid
        state = self.sessions.setdefault(session_id, AcpSession(session_id))
        return ResumeSessionResponse(modes=modes(state.mode))

    async def set_session_mode(self, session_id: str, mode_id: str, **_: Any) -> Any:
        from acp import RequestError
        from acp.helpers import update_current_mode
        from acp.schema import SetSessionModeResponse

        if mode_id not in MODES:
            raise RequestError.invalid_params({"modeId": f"unknown mode {mode_id!r}: one of {', '.join(MODES)}"})
        self._session(session_id).mode = mode_id
        await self.conn.session_update(session_id=session_id, update=update_current_mode(mode_id))
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **_: Any) -> Any:
        from acp import RequestError, update_agent_message_text
        from acp.schema import PromptResponse

        state = self._session(session_id)
        if state.stream is not None:
            raise RequestError.invalid_request({"sessionId": "a prompt of this session is still running"})
        text = prompt_text(prompt)
        if not text.strip():
            raise RequestError.invalid_params({"prompt": "the prompt has no text"})
        state.stream, state.cancelled = uuid.uuid4().hex, False
        request = OutsideRequest(
            kind="prompt",
            client=self.client,
            prompt=text,
            session=state.name,
            stream=state.stream,
            plan=state.mode == "plan",
        )
        events: asyncio.Queue[OutsideEvent | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        shown = EventMapper(self, session_id)
        consumer = asyncio.create_task(self._consume(events, shown))

        def deliver(event: OutsideEvent) -> None:  # on the link's thread: in order, onto this loop
            if event.acked is not None:
                loop.call_soon_threadsafe(self._acked, event.acked, event.refused)
            elif event.settled is not None:  # answered in the notebook first: stop asking here
                loop.call_soon_threadsafe(shown.settle, event.settled)
            else:
                loop.call_soon_threadsafe(events.put_nowait, event)

        try:
            reply = await asyncio.to_thread(self.link.ask, request, deliver)
        except KernelLinkError as error:
            raise RequestError.internal_error({"message": str(error)}) from None
        finally:
            loop.call_soon_threadsafe(events.put_nowait, None)
            await consumer
            state.stream = None
        if reply.status != "ok" and reply.text and not shown.shown:  # a turn shows its own error
            await self.conn.session_update(session_id=session_id, update=update_agent_message_text(reply.text))
        if state.cancelled:
            return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason=STOP_REASONS.get(reply.stop_reason or "", "end_turn"))

    async def cancel(self, session_id: str, **_: Any) -> None:
        """`session/cancel` is Stop: the turn stops after its current step."""
        state = self.sessions.get(session_id)
        if state is not None and state.stream is not None:
            state.cancelled = True
            await self._control(OutsideControl(stream=state.stream, kind="stop"))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The `_blitz/…` extension methods (docs/acp.md): steer a running turn, ask a side
        question, undo the session's newest turn."""
        from acp import RequestError

        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RequestError.invalid_params({"sessionId": "a string is required"})
        state = self._session(session_id)
        text = params.get("text") if method == "blitz/steer" else params.get("question")
        if method == "blitz/undo":
            reply = await self._ask(OutsideRequest(kind="undo", client=self.client, session=state.name))
            return {"text": reply.text}
        if method not in ("blitz/steer", "blitz/aside"):
            raise RequestError.method_not_found(f"_{method}")
        if not isinstance(text, str) or not text.strip():
            raise RequestError.invalid_params({"text" if method == "blitz/steer" else "question": "non-empty text"})
        if method == "blitz/aside":
            reply = await self._ask(OutsideRequest(kind="aside", client=self.client, session=state.name, prompt=text))
            return {"text": reply.text}
        if state.stream is None:
            raise RequestError.invalid_request({"sessionId": "no prompt is running: send it as a prompt"})
        refused = await self._control(OutsideControl(stream=state.stream, kind="steer", text=text))
        if refused is not None:
            raise RequestError.invalid_request({"message": f"not steered: {refused}"})
        return {"queued": True}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def _control(self, control: OutsideControl, timeout_s: float = 10.0) -> str | None:
        """Send a steer or a stop and wait until the turn has answered it: None when it took
        it, else why not (it refused, or said nothing in `timeout_s`: the turn ended)."""
        control = control.model_copy(update={"id": uuid.uuid4().hex})
        assert control.id is not None
        taken = self.acks[control.id] = asyncio.get_running_loop().create_future()
        try:
            await asyncio.to_thread(self.link.control, control)
            return await asyncio.wait_for(taken, timeout_s)
        except TimeoutError:
            return "the turn did not answer (it has ended)"
        finally:
            self.acks.pop(control.id, None)

    def _acked(self, control_id: str, refused: str | None) -> None:
        taken = self.acks.get(control_id)
        if taken is not None and not taken.done():
            taken.set_result(refused)

    def stop_running(self) -> None:
        """Stop every running prompt: its client is gone, so a permission request it waits for
        is denied (decided by "stop") and the kernel is free again; the history stays valid."""
        for state in self.sessions.values():
            if state.stream is not None:
                self.link.control(OutsideControl(stream=state.stream, kind="stop"))

    def _session(self, session_id: str) -> AcpSession:
        from acp import RequestError

        state = self.sessions.get(session_id)
        if state is None:
            raise RequestError.invalid_params({"sessionId": f"unknown session {session_id!r}: new or load it first"})
        return state

    async def _ask(self, request: OutsideRequest) -> OutsideReply:
        from acp import RequestError

        try:
            reply = await asyncio.to_thread(self.link.ask, request)
        except KernelLinkError as error:
            raise RequestError.internal_error({"message": str(error)}) from None
        if reply.status != "ok":
            raise RequestError.invalid_params({"message": reply.text})
        return reply

    async def _consume(self, events: asyncio.Queue[OutsideEvent | None], shown: EventMapper) -> None:
        while (event := await events.get()) is not None:
            try:
                await shown.show(event)
            except Exception as error:  # noqa: BLE001 - the client went away or sent garbage: the turn must not hang
                print(f"blitz acp: could not show an event to the client: {error}", file=sys.stderr)
                shown.fail_open_request(event)


def modes(current: str) -> Any:
    from acp.schema import SessionMode, SessionModeState

    described = {"normal": "tools run, mutating ones after approval", "plan": "read only, ends with a plan to review"}
    return SessionModeState(
        current_mode_id=current,
        available_modes=[SessionMode(id=key, name=name, description=described[key]) for key, name in MODES.items()],
    )


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's text: text blocks, and embedded text resources as fenced attachments."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and hasattr(block.resource, "text"):
            parts.append(f"\n{block.resource.uri}:\n```\n{block.resource.text}\n```")
        elif kind == "resource_link":
            parts.append(f"({block.uri})")
    return "\n".join(parts)


def safe_name(name: object) -> str:
    """The ACP client's own name (Jupyter AI, Zed), for the audit trail."""
    text = "".join(c for c in str(name or "client") if c.isalnum() or c in "-_.")[:60]
    return text or "client"
