"""The Blitz persona: Jupyter AI's chat talking to `blitz acp` (docs/outside-clients.md).

Jupyter AI and blitz cannot share one Python environment (their pins of `mcp` and of the ACP
SDK do not meet), and need not: this persona runs in Jupyter AI's environment and starts
`blitz acp` from blitz's own, as a subprocess speaking ACP over stdio. So this package never
imports blitz_kernel. `blitz` is BLITZ_EXECUTABLE when set, else the `blitz` on PATH.

Each chat gets its own `blitz acp`, attached to the kernel of the notebook the chat concerns
(kernel_choice.py): the base class shares one agent subprocess among all chats of a persona
class, which would tie every chat to whichever notebook spoke first.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
from asyncio.subprocess import Process
from collections import deque
from pathlib import Path
from typing import Any

from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_persona_manager import PersonaDefaults, PersonaRequirementsUnmet

from .client import BlitzAcpClient
from .kernel_choice import KernelChoice, choose_kernel

INSTALL_HINT = (
    "This persona needs `blitz` (the blitz_kernel package) in an environment of its own: "
    "`python -m venv ~/.blitz && ~/.blitz/bin/pip install /path/to/blitz_kernel`, then start "
    "JupyterLab with BLITZ_EXECUTABLE=~/.blitz/bin/blitz (or with that `blitz` on PATH)."
)
STDERR_LINES = 20
"""How much of `blitz acp`'s stderr is kept to say why it ended."""


def blitz_command() -> list[str]:
    """The command that runs `blitz` (BLITZ_EXECUTABLE may carry arguments, e.g. `python -m
    blitz_kernel`); PersonaRequirementsUnmet with the install line when there is none."""
    configured = os.environ.get("BLITZ_EXECUTABLE", "").strip()
    if configured:
        command = shlex.split(configured)
        command[0] = os.path.expanduser(command[0])
        if shutil.which(command[0]) is None:
            raise PersonaRequirementsUnmet(f"BLITZ_EXECUTABLE={configured!r} is not an executable. {INSTALL_HINT}")
        return command
    found = shutil.which("blitz")
    if found is None:
        raise PersonaRequirementsUnmet(INSTALL_HINT)
    return [found]


blitz_command()  # an entry point whose requirement is unmet is left out quietly, as Jupyter AI's own do


class BlitzAcpPersona(BaseAcpPersona):
    """Blitz in Jupyter AI's chat: each prompt is a blitz turn in the notebook's own kernel,
    with blitz's tools, approvals (asked here, and in the notebook when it is open), audit
    (`acp:JupyterAI`) and undo."""

    # Jupyter AI's note steers agents to its MCP notebook tools; blitz has its own cell tools
    NOTEBOOK_EDITING_GUIDANCE = ""
    acp_client_class = BlitzAcpClient

    def __new__(cls, *args: Any, **kwargs: Any) -> BlitzAcpPersona:
        # one class per chat: the base keeps the agent subprocess and client on the class
        if "_per_chat" not in cls.__dict__:
            metaclass: Any = type(cls)  # traitlets' own, so the subclass sets up its traits
            cls = metaclass(cls.__name__, (cls,), {"_per_chat": True, "__module__": cls.__module__})
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, executable=blitz_command(), **kwargs)
        self._notebook_guidance_sent = True  # never prepend Jupyter AI's guidance (see above)
        self._attached: list[str] = []
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._relay: asyncio.Task[None] | None = None
        self.kernel: KernelChoice | None = None
        """The kernel `blitz acp` attached to; None: it started one of its own."""

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name="Blitz",
            description="blitz's agent in the notebook's own kernel: its variables, cells and files, "
            "with approvals, audit and undo.",
            avatar_path=str(Path(__file__).parent / "static" / "blitz.svg"),
            system_prompt="unused",  # the system prompt is blitz's, in the kernel
        )

    async def on_message(self, message: Any) -> None:
        if self._client_started() and self._kernel_gone():
            await self._detach()
        # a notebook attached to the message that starts `blitz acp` is the one it attaches to
        if not self._client_started():
            self._attached = self._attached_notebooks(message)
        await super().on_message(message)

    def _kernel_gone(self) -> bool:
        """The kernel `blitz acp` attached to was shut down (its notebook closed, or the user
        shut it down): a request to it would wait for its answer until the call timeout."""
        server = self._server_app()
        return self.kernel is not None and server is not None and self.kernel.kernel_id not in server.kernel_manager

    async def _detach(self) -> None:
        """End this chat's `blitz acp`; the next message starts one afresh, choosing again, and
        goes on with the same blitz session (it is durable: `session/load` by its name)."""
        self.log.info("Blitz: the kernel of %s is gone: choosing again", self.kernel.notebook if self.kernel else "?")
        await self._shutdown()
        self._client_session_future = None
        self._prepare_task = None
        self.kernel = None

    async def prepare(self) -> None:
        try:
            await super().prepare()
        except Exception as error:
            why = await self._why_it_ended()
            if why is None:
                raise
            # the base would keep the dead subprocess and its client: the next message starts afresh
            self.__class__._subprocess_future = None
            self.__class__._client_future = None
            self._client_session_future = None
            raise RuntimeError(why) from error

    async def _init_agent_subprocess(self, env: dict[str, str] | None = None) -> Process:
        await self.__class__._before_subprocess_future
        self.kernel = await self._choose_kernel()
        command = [*self._executable, "acp"]
        if self.kernel is not None:
            command += ["--connection-file", self._connection_file(self.kernel.kernel_id)]
            self.log.info("Blitz: attaching to the kernel of %s (%s)", self.kernel.notebook, self.kernel.reason)
        else:
            self.log.info("Blitz: no notebook kernel in this chat's folder: blitz acp starts its own")
        process = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.get_chat_dir(),
            env=env,
            limit=50 * 1024 * 1024,
            start_new_session=True,
        )
        assert process.stderr is not None
        self._relay = self.event_loop.create_task(self._relay_stderr(process.stderr))
        return process

    async def _choose_kernel(self) -> KernelChoice | None:
        server = self._server_app()
        if server is None:
            return None
        sessions = await server.session_manager.list_sessions()
        return choose_kernel(sessions, self.get_chat_path(relative=True), self._attached)

    def _connection_file(self, kernel_id: str) -> str:
        server = self._server_app()
        assert server is not None
        return str(server.kernel_manager.get_kernel(kernel_id).connection_file)

    def _server_app(self) -> Any:
        """The Jupyter server this persona runs in (the persona manager's extension app's)."""
        extension = getattr(self.parent, "parent", None)
        server = getattr(extension, "serverapp", None)
        has_both = hasattr(server, "session_manager") and hasattr(server, "kernel_manager")
        return server if has_both else None

    def _attached_notebooks(self, message: Any) -> list[str]:
        found = []
        attachments = self.chat.get_attachments()
        for attachment_id in getattr(message, "attachments", None) or []:
            attachment = attachments.get(attachment_id)
            path = getattr(attachment, "value", None)
            if isinstance(path, str) and (getattr(attachment, "type", None) == "notebook" or path.endswith(".ipynb")):
                found.append(path)
        return found

    async def _relay_stderr(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            text = line.decode(errors="replace").rstrip()
            self._stderr.append(text)
            self.log.info("blitz acp: %s", text.removeprefix("blitz acp: "))

    async def _why_it_ended(self) -> str | None:
        """`blitz acp`'s own last error line when it exited during startup, else None."""
        future = self.__class__._subprocess_future
        if future is None or not future.done() or future.cancelled() or future.exception() is not None:
            return None
        process = future.result()
        try:  # it exited: its stderr ends, and the relay has its last lines
            await asyncio.wait_for(process.wait(), 5)
            if self._relay is not None:
                await asyncio.wait_for(self._relay, 5)
        except asyncio.TimeoutError:
            return None
        said = [line for line in self._stderr if line.startswith("blitz acp:")]
        return said[-1] if said else f"blitz acp exited with status {process.returncode}"
