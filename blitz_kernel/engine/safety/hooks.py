"""Hooks: the user's own checks around prompts and tool calls.

- `prompt_submit` may block a prompt: nothing is recorded, the turn ends `blocked`.
- `pre_tool` may block a call: the model reads "blocked by pre_tool hook: <reason>".
- `post_tool` observes a finished call and never delays the turn.

A hook is a shell command or a Python callable. A command gets one JSON object on stdin
(event, session, turn, tool, arguments, and for post_tool the status and a preview): exit 0
lets it through, exit 2 blocks with stderr as the reason, and anything else — another exit
code, a crash, a timeout — blocks `prompt_submit`/`pre_tool` with "hook failed: …". That is
fail-closed on purpose: a safety check that cannot run must not wave things through. A
callable returns None to allow or a string to block, and may be async.

A command's verdict is its exit, not the end of its output: a hook that leaves a background
child holding stderr open is done when it exits. Of stderr only the first STDERR_BYTES are
kept (the rest is read and dropped, so a chatty hook neither blocks on a full pipe nor fills
the kernel's memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import importlib
import inspect
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...config.settings import HookPoint, HooksConfig, HookSpec
from ...core.text import one_line
from ..tracing import Telemetry

BLOCK_EXIT = 2
REASON_CHARS = 300
STDERR_BYTES = 4096
STDERR_AFTER_EXIT_S = 0.2
"""How long stderr may still be read after the hook exited (what it wrote just before)."""


class HookRunner:
    """Runs the configured hooks of one workspace."""

    def __init__(self, config: HooksConfig, workspace: Path, telemetry: Telemetry | None = None) -> None:
        self.config = config
        self.workspace = workspace
        self.telemetry = telemetry or Telemetry(enabled=False)
        self._observers: set[asyncio.Task[str | None]] = set()
        """post_tool hooks still running (kept so none is garbage-collected mid-run)."""

    def __bool__(self) -> bool:
        return bool(self.config.prompt_submit or self.config.pre_tool or self.config.post_tool)

    async def prompt_submit(self, payload: dict[str, Any]) -> str | None:
        """The reason the first blocking prompt_submit hook gave, or None to go on."""
        return await self._first_block("prompt_submit", self.config.prompt_submit, payload)

    async def pre_tool(self, tool: str, payload: dict[str, Any]) -> str | None:
        hooks = [hook for hook in self.config.pre_tool if _matches(hook, tool)]
        return await self._first_block("pre_tool", hooks, payload)

    def post_tool(self, tool: str, payload: dict[str, Any]) -> None:
        """Start the matching post_tool hooks without waiting for them."""
        for hook in self.config.post_tool:
            if _matches(hook, tool):
                task = asyncio.ensure_future(self._run("post_tool", hook, payload))
                self._observers.add(task)
                task.add_done_callback(self._observers.discard)

    async def _first_block(self, point: HookPoint, hooks: list[HookSpec], payload: dict[str, Any]) -> str | None:
        for hook in hooks:
            reason = await self._run(point, hook, payload)
            if reason is not None:
                return reason
        return None

    async def _run(self, point: HookPoint, hook: HookSpec, payload: dict[str, Any]) -> str | None:
        """One hook: None lets the thing through, a string blocks it (fail-closed)."""
        attributes = {"blitz.hook.point": point, "blitz.hook": hook.command or hook.callable or ""}
        with self.telemetry.child_span("blitz.hook", attributes) as span:
            try:
                async with asyncio.timeout(hook.timeout_s):
                    if hook.command is not None:
                        reason = await self._command(hook.command, {"event": point, **payload})
                    else:
                        reason = await _call(_load(hook.callable or ""), {"event": point, **payload})
            except TimeoutError:
                reason = f"hook failed: timed out after {hook.timeout_s:g} s"
            except HookFailed as exc:
                reason = f"hook failed: {exc}"
            except Exception as exc:  # a broken hook blocks, never waves through
                reason = f"hook failed: {type(exc).__name__}: {exc}"
            span.set_attribute("blitz.hook.decision", "block" if reason is not None else "allow")
            return one_line(reason, REASON_CHARS) if reason is not None else None

    async def _command(self, command: str, payload: dict[str, Any]) -> str | None:
        process = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.workspace,
            start_new_session=True,  # so a timeout can end the hook and everything it started
        )
        kept = bytearray()
        assert process.stderr is not None
        reader = asyncio.ensure_future(_read_capped(process.stderr, kept))
        try:
            await _feed(process, json.dumps(payload, default=str).encode())
            await _exited(process)  # its exit decides; a child of its own may hold stderr open
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), STDERR_AFTER_EXIT_S)
        except BaseException:  # timed out or cancelled: end the hook and what it started
            _kill_group(process)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 2)  # reap it, so its pipes close now
            raise
        finally:
            reader.cancel()
            _close_pipes(process)
        detail = bytes(kept).decode(errors="replace").strip()
        if process.returncode == 0:
            return None
        if process.returncode == BLOCK_EXIT:
            return detail or "blocked (no reason given)"
        raise HookFailed(f"exit {process.returncode}" + (f": {detail}" if detail else ""))

    async def close(self) -> None:
        """Wait briefly for post_tool hooks still running (the kernel is going away)."""
        if self._observers:
            await asyncio.wait(self._observers, timeout=2)


async def _exited(process: asyncio.subprocess.Process) -> int:
    """The exit status, as soon as the process exits. `process.wait()` (Python 3.11) also
    waits for its pipes to close, which a background child of the hook can hold for ever; a
    pidfd says when the process itself ended."""
    if process.returncode is None:
        with contextlib.suppress(AttributeError, OSError):  # no pidfd: poll below
            pidfd = os.pidfd_open(process.pid)
            loop = asyncio.get_running_loop()
            ended = loop.create_future()
            loop.add_reader(pidfd, _set_once, ended)
            try:
                await ended
            finally:
                loop.remove_reader(pidfd)
                os.close(pidfd)
    # the child watcher reaps it a moment after; asyncio signals that only with the pipes
    while process.returncode is None:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    return process.returncode


def _set_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _close_pipes(process: asyncio.subprocess.Process) -> None:
    """Close our ends of the pipes (a background child may hold the others): the transport
    must not outlive the call. asyncio exposes no public way; the process has exited."""
    transport = getattr(process, "_transport", None)
    if transport is not None and process.returncode is not None:
        transport.close()


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the payload and close stdin; a hook that exits without reading it is fine."""
    stdin = process.stdin
    assert stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()


async def _read_capped(stream: asyncio.StreamReader, kept: bytearray) -> None:
    """Read `stream` to its end, keeping its first STDERR_BYTES in `kept`."""
    while chunk := await stream.read(65536):
        if len(kept) < STDERR_BYTES:
            kept.extend(chunk[: STDERR_BYTES - len(kept)])


class HookFailed(Exception):
    """A command hook ended with an exit code that is neither allow (0) nor block (2)."""


def _matches(hook: HookSpec, tool: str) -> bool:
    return hook.match is None or fnmatch.fnmatchcase(tool, hook.match)


def _load(path: str) -> Callable[[dict[str, Any]], Any]:
    module_name, _, name = path.partition(":")
    function = getattr(importlib.import_module(module_name), name)
    if not callable(function):
        raise HookFailed(f"{path} is not callable")
    return function  # type: ignore[no-any-return]


async def _call(function: Callable[[dict[str, Any]], Any], payload: dict[str, Any]) -> str | None:
    outcome = function(payload)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    if outcome is None:
        return None
    if not isinstance(outcome, str):
        raise HookFailed(f"returned {type(outcome).__name__}, expected None or a reason string")
    return outcome or "blocked (no reason given)"


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
