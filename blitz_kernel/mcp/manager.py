"""One connection per MCP server for the kernel's life.

A server starts when a turn first offers its tools (the turn's setup awaits it, bounded by the
server's `timeout_s`), then stays up. Each connection is an asyncio task that holds the SDK's
`Client` open: the SDK's transports are anyio task groups, which must be entered and left in
one task, while tool calls come from the turns' tasks. A server that dies is started again on
its next use; one that fails to start waits out a backoff (1, 2, 4 … 60 s) before the next try,
and `%blitz_mcp restart NAME` skips the wait.

Servers defined in the workspace's own files are commands (or endpoints) the repository chose:
they start only once the user trusts the workspace. A stdio server starts in a private, empty
temporary folder unless its `cwd` says otherwise, never in the workspace by default: there the
repository's own `node_modules` or packages would choose what `npx pkg` or `python -m pkg`
runs. The workspace's path is in the server's environment as BLITZ_WORKSPACE.

The `mcp` SDK is imported when the first server starts, never before.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import signal
import tempfile
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from ..config.loading import config_source_paths, file_values
from ..config.mcp_servers import McpConfig, McpServerConfig

if TYPE_CHECKING:
    from mcp import Client

Origin = Literal["user", "workspace"]
Status = Literal["not started", "starting", "ready", "failed", "stopped", "refused", "disabled"]

MAX_BACKOFF_S = 60.0
STDERR_TAIL_CHARS = 400
CLIENT_NAME = "blitz_kernel"
WORKSPACE_ENV = "BLITZ_WORKSPACE"
"""Set for every stdio server: the workspace's path (servers start outside it, see
`_working_directory`)."""


class McpUnavailable(Exception):
    """A server cannot be used now; the message names it and says why."""


class MalformedMessage(Exception):
    """The server wrote a line that is not JSON-RPC while a call waited for its answer."""


MALFORMED_CHARS = 160


def untrusted_text(name: str, source: str) -> str:
    return (
        f"MCP server {name!r} is defined in this workspace's own {source}, so it starts only once "
        "you trust the workspace: run %blitz_trust, or move the server to ~/.blitz/config.toml"
    )


@dataclass(frozen=True)
class ServerEntry:
    """A configured server and where it was defined."""

    name: str
    config: McpServerConfig
    origin: Origin
    """"workspace" when the workspace's blitz.toml / pyproject.toml sets any of its keys."""
    source: str
    """The file that defines it (the workspace file when that sets any key)."""


def server_entries(config: McpConfig, workspace: Path, home: Path | None = None) -> dict[str, ServerEntry]:
    """The configured servers with their origin. A workspace file that sets even one key of a
    server (its `args`, say) makes the server the workspace's: that key may change what runs."""
    workspace = Path(workspace).resolve()
    defined_here: dict[str, str] = {}
    for path in config_source_paths(workspace, home):
        if path.resolve().parent != workspace:
            continue  # the user's ~/.blitz/config.toml
        mcp = file_values(path).get("mcp")
        servers = mcp.get("servers") if isinstance(mcp, Mapping) else None
        if isinstance(servers, Mapping):
            defined_here.update({name: path.name for name in servers})
    return {
        name: ServerEntry(
            name=name,
            config=server,
            origin="workspace" if name in defined_here else "user",
            source=defined_here.get(name, "~/.blitz/config.toml or %blitz_config"),
        )
        for name, server in config.servers.items()
    }


def trusted_by_environment(workspace: Path, environ: Mapping[str, str] | None = None) -> bool:
    """`BLITZ_TRUST_WORKSPACE=<path>` (docs/interface.md) trusts that workspace; `%blitz_trust`
    is wired in by the workspace-trust work."""
    value = (os.environ if environ is None else environ).get("BLITZ_TRUST_WORKSPACE", "").strip()
    if not value or not Path(value).expanduser().is_absolute():  # `.` is whatever folder this is
        return False
    try:
        return Path(value).expanduser().resolve() == Path(workspace).resolve()
    except OSError:
        return False


class ServerConnection:
    """One server: its status, its tools, and the task that holds its client open."""

    def __init__(self, entry: ServerEntry, workspace: Path) -> None:
        self.entry = entry
        self.workspace = workspace
        self.status: Status = "not started" if entry.config.enabled else "disabled"
        self.tools: list[Any] = []
        """The server's tools (`mcp.types.Tool`) as it listed them at start."""
        self.last_error: str | None = None
        self.pid: int | None = None
        self.starts = 0
        self.failures = 0
        """Failed starts in a row: the backoff grows with them."""
        self.retry_at = 0.0
        self.lock = asyncio.Lock()
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._errlog: IO[str] | None = None
        self.names_noticed = False
        """The notices about its tool names were given (once per start)."""
        self.malformed: str | None = None
        """The last unreadable message, in one line."""
        self._waiting: set[asyncio.Event] = set()

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def alive(self) -> bool:
        """Connected and usable from the running loop."""
        client = self._client
        if client is None or self.status != "ready" or self._task is None or self._task.done():
            return False
        try:
            if asyncio.get_running_loop() is not self._loop:
                return False
        except RuntimeError:
            return False
        # The SDK marks its dispatcher closed when the transport ends (a stdio server that
        # exited, an HTTP session that went away); there is no public flag for it.
        dispatcher = getattr(client.session, "_dispatcher", None)
        return not getattr(dispatcher, "_closed", False)

    def client(self) -> Client:
        if self._client is None or not self.alive:
            raise McpUnavailable(f"MCP server {self.name!r} is not connected")
        return self._client

    # -- starting and stopping ----------------------------------------------------------------

    async def start(self) -> None:
        """Connect and list the tools within `timeout_s`; McpUnavailable says why not."""
        timeout = self.entry.config.timeout_s
        self.status, self.starts = "starting", self.starts + 1
        self.names_noticed = False
        self._loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = self._loop.create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._hold(ready, self._stop), name=f"blitz-mcp-{self.name}")
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(ready)
        except TimeoutError:
            await self.stop()
            raise self._failed(f"it did not answer within {timeout:g} s (timeout_s)") from None
        except asyncio.CancelledError:
            self._task.cancel()  # the SDK's shutdown is shielded: the process still goes
            self.status = "not started"
            raise
        except Exception as exc:
            await self.stop()
            raise self._failed(describe_error(exc)) from None
        self.status, self.failures, self.last_error = "ready", 0, None

    def _failed(self, cause: str) -> McpUnavailable:
        stderr = self._stderr_tail()
        self.failures += 1
        self.retry_at = time.monotonic() + min(2.0 ** (self.failures - 1), MAX_BACKOFF_S)
        self.status = "failed"
        self.last_error = cause + (f"; its stderr ends: {stderr}" if stderr else "")
        return McpUnavailable(f"MCP server {self.name!r} failed to start: {self.last_error}")

    async def _hold(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """The connection's own task: enter the client, list the tools, wait for stop."""
        try:
            async with self._open() as client:
                self.tools = await _list_tools(client)
                self._client = client
                if not ready.done():
                    ready.set_result(None)
                await stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
        except Exception as exc:  # reported through `ready`, or as the reason it stopped
            if not ready.done():
                ready.set_exception(exc)
            elif self.status == "ready":
                self.status, self.last_error = "stopped", describe_error(exc)
        finally:
            self._client = None

    async def answer_or_malformed(self, request: Any) -> Any:
        """Await an SDK request, or raise MalformedMessage as soon as the server writes
        something that is not JSON-RPC (its answer will never be read)."""
        malformed = asyncio.Event()
        self._waiting.add(malformed)
        call = asyncio.ensure_future(request)
        watch = asyncio.ensure_future(malformed.wait())
        try:
            done, _ = await asyncio.wait({call, watch}, return_when=asyncio.FIRST_COMPLETED)
            if call in done:
                return call.result()
            call.cancel()
            raise MalformedMessage(self.malformed or "an unreadable message")
        finally:
            self._waiting.discard(malformed)
            watch.cancel()
            if not call.done():
                call.cancel()  # cancelled with its caller: the SDK tells the server

    async def _on_message(self, message: Any) -> None:
        """The SDK's message handler: a transport fault (an unparsable line) arrives here."""
        if isinstance(message, Exception):
            lines = describe_error(message).splitlines() or [type(message).__name__]
            self.malformed = lines[0][:MALFORMED_CHARS]
            for waiter in list(self._waiting):
                waiter.set()

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[Client]:
        from mcp import Client

        from .sdk_log import route_sdk_log

        route_sdk_log()
        config = self.entry.config
        common: dict[str, Any] = {
            "read_timeout_seconds": config.timeout_s,
            "cache": None,
            "message_handler": self._on_message,
        }
        if config.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            env = {WORKSPACE_ENV: str(self.workspace)}
            env.update({name: _expand(value, name) for name, value in config.env.items()})
            # The server's stderr goes to a file, not the cell: its log lines would flood the
            # notebook; the end of it is quoted when the server fails.
            if self._errlog is not None:
                self._errlog.close()
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            with _working_directory(self.workspace, config.cwd) as cwd:
                params = StdioServerParameters(command=config.command, args=list(config.args), env=env, cwd=cwd)
                async with Client(self._spawned(stdio_client(params, errlog=self._errlog)), **common) as client:
                    yield client
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {}
            for header, variable in config.headers.items():
                value = os.environ.get(variable)
                if value is None:
                    raise McpUnavailable(
                        f"header {header!r} needs the environment variable {variable}, which is not set"
                    )
                headers[header] = value
            timeout = httpx2.Timeout(30.0, read=300.0)
            async with (
                httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
                Client(streamable_http_client(str(config.url), http_client=http), **common) as client,
            ):
                yield client

    @contextlib.asynccontextmanager
    async def _spawned(self, transport: Any) -> AsyncIterator[Any]:
        """The SDK's stdio transport, noting the server's pid: the new child of this process.
        Spawns are one at a time so that two servers starting together are told apart."""
        lock = _spawn_lock()
        await lock.acquire()
        held = True
        try:
            before = _child_pids()
            async with transport as streams:
                new = _child_pids() - before
                self.pid = min(new) if len(new) == 1 else None
                lock.release()
                held = False
                try:
                    yield streams
                finally:
                    self.pid = None
        finally:
            if held:
                lock.release()

    def _stderr_tail(self) -> str:
        errlog = self._errlog
        if errlog is None or errlog.closed:
            return ""
        with contextlib.suppress(OSError, ValueError):
            errlog.flush()
            errlog.seek(0)
            text = " ".join(errlog.read().split())
            errlog.seek(0, os.SEEK_END)
            return text[-STDERR_TAIL_CHARS:]
        return ""

    async def stop(self) -> None:
        """Close the client (a stdio server gets its stdin closed, then SIGTERM, then SIGKILL)."""
        task, self._task = self._task, None
        if self._stop is not None:
            self._stop.set()
        if task is not None and not task.done():
            if self._loop is not asyncio.get_running_loop():
                self.kill()
            else:
                if self._client is None:
                    task.cancel()  # still connecting: nothing waits for the stop event yet
                # Bounded: the SDK closes stdin, then SIGTERMs and SIGKILLs within seconds.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(task), timeout=15)
        self._client = None
        if self.status in ("ready", "starting"):
            self.status = "stopped"

    def kill(self) -> None:
        """Without an event loop (interpreter exit): signal the server's process group."""
        pid = self.pid
        if pid is not None:
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGTERM)

    def mark_dead(self, cause: str) -> None:
        stderr = self._stderr_tail()
        self.status, self.last_error = "stopped", cause + (f"; its stderr ends: {stderr}" if stderr else "")


class McpManager:
    """The kernel's MCP servers: configured, started on demand, kept, restarted, closed."""

    def __init__(
        self,
        workspace: Path,
        *,
        trusted: Callable[[], bool],
        admin_refusal: Callable[[str, McpServerConfig], str | None] | None = None,
    ) -> None:
        self.workspace = workspace
        self._trusted = trusted
        self._admin_refusal = admin_refusal
        """The admin policy's allowlist of server commands and URLs (config/policy.py)."""
        self.connections: dict[str, ServerConnection] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        _MANAGERS.add(self)

    def configure(self, entries: Mapping[str, ServerEntry]) -> None:
        """The servers as the configuration says now; a server whose settings changed is
        stopped, and starts with the new ones on its next use. A running server the workspace
        defined is stopped too once the workspace is no longer trusted (`%blitz_trust
        --revoke`): trust is what let it start."""
        for name, connection in list(self.connections.items()):
            entry = entries.get(name)
            held_back = entry is not None and entry.origin == "workspace" and not self._trusted()
            if entry != connection.entry or (held_back and connection.status in ("ready", "starting")):
                del self.connections[name]
                self._retire(connection)
        for name, entry in entries.items():
            if name not in self.connections:
                self.connections[name] = ServerConnection(entry, self.workspace)

    def enabled(self) -> list[str]:
        return [name for name, c in self.connections.items() if c.entry.config.enabled]

    def refusal(self, name: str) -> str | None:
        """Why `name` may not start: not on the admin policy's allowlist, or a workspace-defined
        server in an untrusted workspace."""
        entry = self.connections[name].entry
        refused = self._admin_refusal(name, entry.config) if self._admin_refusal is not None else None
        if refused is not None:
            return refused
        if entry.origin == "workspace" and not self._trusted():
            return untrusted_text(name, entry.source)
        return None

    def to_start(self, names: list[str]) -> list[str]:
        """The named servers `ensure` would launch now: not running, allowed to start, and not
        waiting out a failed start's back-off (a first `npx` start can take many seconds)."""
        now = time.monotonic()
        return [
            name
            for name in names
            if not self.connections[name].alive
            and self.refusal(name) is None
            and not (self.connections[name].status == "failed" and self.connections[name].retry_at > now)
        ]

    async def ensure(self, names: list[str]) -> dict[str, str]:
        """Start every named server that is not running, concurrently; the problems of those
        that cannot be used, by name."""
        problems = await asyncio.gather(*(self._ensure_one(name) for name in names))
        return {name: problem for name, problem in zip(names, problems, strict=True) if problem}

    async def _ensure_one(self, name: str) -> str | None:
        connection = self.connections[name]
        refused = self.refusal(name)
        if refused is not None:
            connection.status, connection.last_error = "refused", refused
            return refused
        if connection.alive:
            return None
        async with connection.lock:
            if connection.alive:
                return None
            if connection.status in ("ready", "stopped"):
                await connection.stop()  # it died: clean up what is left before the restart
            wait = connection.retry_at - time.monotonic()
            if connection.status == "failed" and wait > 0:
                return (
                    f"MCP server {name!r} failed to start ({connection.last_error}); "
                    f"next try in {wait:.0f} s, or run %blitz_mcp restart {name}"
                )
            try:
                await connection.start()
            except McpUnavailable as exc:
                return str(exc)
        return None

    async def connection(self, name: str) -> ServerConnection:
        """The running connection to `name`, started (again) if need be."""
        if name not in self.connections:
            raise McpUnavailable(f"no MCP server named {name!r} is configured")
        problem = await self._ensure_one(name)
        if problem is not None:
            raise McpUnavailable(problem)
        return self.connections[name]

    async def restart(self, name: str) -> ServerConnection:
        """Stop `name` and start it now, skipping any backoff (`%blitz_mcp restart`)."""
        if name not in self.connections:
            known = ", ".join(self.connections) or "none"
            raise McpUnavailable(f"no MCP server named {name!r} is configured (configured: {known})")
        connection = self.connections[name]
        async with connection.lock:
            await connection.stop()
            connection.failures, connection.retry_at = 0, 0.0
            connection.status = "not started" if connection.entry.config.enabled else "disabled"
        if not connection.entry.config.enabled:
            raise McpUnavailable(f"MCP server {name!r} is disabled (enabled = false)")
        return await self.connection(name)

    def _retire(self, connection: ServerConnection) -> None:
        try:
            task = asyncio.get_running_loop().create_task(connection.stop())
        except RuntimeError:
            connection.kill()
            return
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)

    async def aclose(self) -> None:
        """Stop every server (the extension unloads, the workspace closes)."""
        connections = list(self.connections.values())
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)
        for connection in connections:
            if connection.status not in ("disabled", "refused"):
                connection.status = "not started"

    def close_soon(self) -> None:
        """Stop every server from sync code (`%unload_ext`): on the running loop when there is
        one, else by signalling the processes."""
        for connection in list(self.connections.values()):
            self._retire(connection)

    def kill_all(self) -> None:
        for connection in self.connections.values():
            connection.kill()


_MANAGERS: weakref.WeakSet[McpManager] = weakref.WeakSet()


_SPAWN_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


def _spawn_lock() -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    if loop not in _SPAWN_LOCKS:
        _SPAWN_LOCKS[loop] = asyncio.Lock()
    return _SPAWN_LOCKS[loop]


def _child_pids() -> set[int]:
    """Our direct children that lead their own session (the SDK starts stdio servers with
    `start_new_session`), so that interpreter exit can signal their process groups."""
    me, found = os.getpid(), set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as file:
                    fields = file.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == me and int(fields[3]) == int(entry.name):
                    found.add(int(entry.name))
    return found


def _kill_at_exit() -> None:
    """Interpreter exit with servers still running (a kernel shutdown): the loop is gone, so
    signal their process groups rather than leave orphans."""
    for manager in list(_MANAGERS):
        manager.kill_all()


_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@contextlib.contextmanager
def _working_directory(workspace: Path, cwd: str | None) -> Iterator[str]:
    """Where a stdio server starts: its `cwd` (relative to the workspace) when one is set,
    else a private, empty temporary folder, removed when the server stops. Not the workspace:
    `npx pkg` runs the copy of `pkg` in the folder's `node_modules`, `python -m pkg` the
    folder's `pkg`, so a cloned repository would choose the code a user's own server runs.
    The server finds the workspace in the environment variable BLITZ_WORKSPACE."""
    if cwd:
        yield str(workspace / cwd)
        return
    with tempfile.TemporaryDirectory(prefix="blitz-mcp-", ignore_cleanup_errors=True) as neutral:
        yield neutral


def _expand(value: str, name: str) -> str:
    """`${VAR}` in an `env` value is read from the kernel's environment when the server
    starts, so a token need not be written into a config file."""

    def lookup(match: re.Match[str]) -> str:
        found = os.environ.get(match.group(1))
        if found is None:
            raise McpUnavailable(f"env {name!r} needs the environment variable {match.group(1)}, which is not set")
        return found

    return _REFERENCE.sub(lookup, value)


def describe_error(exc: BaseException) -> str:
    """The innermost cause, once: anyio wraps transport failures in exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    if isinstance(exc, McpUnavailable):
        return text
    kind = type(exc).__name__
    return f"{kind}: {text}" if text else kind


async def _list_tools(client: Client) -> list[Any]:
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):  # a server that pages forever does not hang the start
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


atexit.register(_kill_at_exit)
