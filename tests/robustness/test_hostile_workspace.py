"""Hostile workspaces: nothing in the files can freeze the kernel or lead a file
tool out of the workspace.

Real FIFOs, symlink loops, dangling links, a swap race and huge files in tmp_path, driven
through the tools the way the engine calls them (JSON arguments → tool). Each case must end
within its budget with a clear result, and the user's own `asyncio.to_thread` must still run.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import threading
import time
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from blitz_kernel.tools import builtin_tools, search
from blitz_kernel.tools.registry import ToolContext, ToolError

TOOLS = {t.name: t for t in builtin_tools()}
CATASTROPHIC = r"^(a|a)*$"
"""Exponential even for the `regex` engine (which handles the issue's `^(\\w+\\s?)*$` itself)."""


async def call(workspace: Path, name: str, deadline: float | None = None, **arguments: Any) -> str:
    tool = TOOLS[name]
    result = await tool.func(tool.parse_arguments(json.dumps(arguments)), ToolContext(workspace, deadline=deadline))
    assert isinstance(result, str)
    return result


async def user_to_thread_still_runs() -> None:
    """The user's own code: the loop's default executor must be free."""
    assert await asyncio.wait_for(asyncio.to_thread(lambda: 42), timeout=5) == 42


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("OUTSIDE secret\n")
    return folder


class LoopTicker:
    """Counts event-loop turns while something runs: a frozen loop (GIL held) counts none."""

    def __init__(self, signal_at: int = 3) -> None:
        self.ticks = 0
        self.reached = asyncio.Event()
        """Set after `signal_at` ticks: whatever started before is under way."""
        self._signal_at = signal_at
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.02)
            self.ticks += 1
            if self.ticks >= self._signal_at:
                self.reached.set()

    def __enter__(self) -> LoopTicker:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


# -- finding 1: catastrophic regexes ---------------------------------------------------------


async def test_issue_pattern_on_prose_answers_at_once(ws: Path) -> None:
    (ws / "prose.txt").write_text(
        "The quick brown fox jumps over the lazy dog.\nThe quick brown fox jumps over the lazy dog again.\n" * 50
    )
    text = await asyncio.wait_for(call(ws, "grep", pattern=r"^(\w+\s?)*$"), timeout=10)
    assert text.startswith("no matches for /^(\\w+\\s?)*$/ in . (1 files searched")


async def test_catastrophic_pattern_ends_with_a_clear_error_and_the_loop_keeps_running(ws: Path) -> None:
    (ws / "a.txt").write_text("a" * 40 + "!\n")
    # CPU time, not wall time: a loaded machine stretches the wall clock, while a match that
    # its budget did not stop would burn minutes of CPU (n³ backtracking)
    started = time.process_time()
    with LoopTicker() as ticker, pytest.raises(ToolError) as caught:
        await asyncio.wait_for(call(ws, "grep", pattern=CATASTROPHIC), timeout=60)
    spent = time.process_time() - started
    assert "backtracks catastrophically" in str(caught.value) and "a.txt:1" in str(caught.value)
    assert spent < search.MATCH_BUDGET_S + 5
    # re would hold the GIL for the whole match: the loop would not have turned at all.
    assert ticker.ticks >= 10
    await user_to_thread_still_runs()


async def test_catastrophic_pattern_obeys_the_turn_deadline(ws: Path) -> None:
    (ws / "a.txt").write_text("a" * 40 + "!\n")
    started = time.monotonic()
    with pytest.raises(ToolError, match="backtracks catastrophically"):
        await call(ws, "grep", deadline=time.monotonic() + 0.3, pattern=CATASTROPHIC)
    assert time.monotonic() - started < search.MATCH_BUDGET_S


async def test_cancelling_a_catastrophic_grep_returns_at_once(ws: Path) -> None:
    (ws / "a.txt").write_text("a" * 40 + "!\n")
    with LoopTicker() as ticker:
        task = asyncio.ensure_future(call(ws, "grep", pattern=CATASTROPHIC))
        await asyncio.wait_for(ticker.reached.wait(), timeout=10)  # the search is under way
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert time.monotonic() - started < 1
    await user_to_thread_still_runs()


async def test_a_walk_out_of_time_answers_with_what_it_found_and_says_so(ws: Path) -> None:
    for n in range(3):
        (ws / f"d{n}").mkdir()
        (ws / f"d{n}" / "f.txt").write_text("needle\n")
    for name, arguments in [("glob", {"pattern": "**/*.txt"}), ("grep", {"pattern": "needle"})]:
        text = await call(ws, name, deadline=time.monotonic(), **arguments)
        assert text.splitlines()[-1].startswith("[search stopped early: out of time")
        assert "d2/f.txt" not in text


# -- finding 2: FIFOs and other non-regular files --------------------------------------------


@pytest.fixture
def fifos(ws: Path) -> list[Path]:
    paths = [ws / f"pipe{n}" for n in range(6)]
    for path in paths:
        os.mkfifo(path)
    (ws / "real.txt").write_text("needle\n")
    return paths


async def test_six_fifos_in_one_batch_are_refused_and_the_users_to_thread_still_runs(
    ws: Path, fifos: list[Path]
) -> None:
    results = await asyncio.wait_for(
        asyncio.gather(*(call(ws, "read_file", path=p.name) for p in fifos), return_exceptions=True),
        timeout=10,
    )
    assert all(isinstance(r, ToolError) for r in results), results
    assert str(results[0]) == (
        "pipe0 is a named pipe (FIFO), not a regular file; file tools read and write only regular files"
    )
    await user_to_thread_still_runs()


async def test_walks_skip_fifos_with_a_note(ws: Path, fifos: list[Path]) -> None:
    text = await asyncio.wait_for(call(ws, "grep", pattern="needle"), timeout=10)
    assert text.splitlines() == ["real.txt:1: needle", "[skipped: 6 named pipes (FIFO) (pipe0)]"]
    globbed = await asyncio.wait_for(call(ws, "glob", pattern="*"), timeout=10)
    assert globbed.splitlines() == ["1 matches for *:", "real.txt", "[skipped: 6 named pipes (FIFO) (pipe0)]"]
    listed = await call(ws, "list_files")
    assert "pipe0  (a named pipe (FIFO); not read by file tools)" in listed.splitlines()


async def test_writing_or_editing_a_fifo_is_refused_without_blocking(ws: Path, fifos: list[Path]) -> None:
    for name, arguments in [
        ("write_file", {"content": "x"}),
        ("edit_file", {"old": "a", "new": "b"}),
        ("grep", {"pattern": "x"}),
    ]:
        with pytest.raises(ToolError, match="named pipe"):
            await asyncio.wait_for(call(ws, name, path="pipe1", **arguments), timeout=10)


async def test_tool_io_does_not_use_the_loops_default_executor(ws: Path) -> None:
    (ws / "f.txt").write_text("needle\n")
    loop = asyncio.get_running_loop()
    users_pool = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(users_pool)
    release = threading.Event()
    try:
        busy = asyncio.ensure_future(asyncio.to_thread(release.wait, 30))  # the user's pool, full
        assert await asyncio.wait_for(call(ws, "read_file", path="f.txt"), timeout=10) == "     1\tneedle"
        assert await asyncio.wait_for(call(ws, "grep", pattern="needle"), timeout=10) == "f.txt:1: needle"
        assert not busy.done()
    finally:
        release.set()
    assert await busy is True


async def test_a_device_node_in_the_workspace_is_refused_and_skipped(ws: Path) -> None:
    try:
        os.mknod(ws / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    (ws / "real.txt").write_text("needle\n")
    with pytest.raises(ToolError, match="null is a character device, not a regular file"):
        await asyncio.wait_for(call(ws, "read_file", path="null"), timeout=10)
    text = await asyncio.wait_for(call(ws, "grep", pattern="needle"), timeout=10)
    assert text.splitlines() == ["real.txt:1: needle", "[skipped: 1 character devices (null)]"]
    assert "null  (a character device; not read by file tools)" in await call(ws, "list_files")


async def test_a_link_to_a_device_is_refused(ws: Path) -> None:
    (ws / "zero").symlink_to("/dev/zero")
    with pytest.raises(ToolError, match="leads outside the workspace"):
        await asyncio.wait_for(call(ws, "read_file", path="zero"), timeout=10)
    text = await asyncio.wait_for(call(ws, "grep", pattern="x"), timeout=10)
    assert text.endswith("[skipped: 1 symlinks leading outside the workspace (zero)]")


# -- finding 11: symlink loops, dangling links, checkpoints ----------------------------------


@pytest.fixture
def tangled(ws: Path) -> Path:
    (ws / "sub").mkdir()
    (ws / "sub" / "notes.txt").write_text("needle in sub\n")
    (ws / "top.txt").write_text("needle on top\n")
    (ws / "self").symlink_to("self")
    (ws / "ping").symlink_to("pong")
    (ws / "pong").symlink_to("ping")
    (ws / "sub" / "up").symlink_to("..", target_is_directory=True)  # a folder loop
    (ws / "gone.txt").symlink_to("nowhere.txt")
    (ws / "alias.txt").symlink_to("top.txt")
    (ws / ".ipynb_checkpoints").mkdir()
    (ws / ".ipynb_checkpoints" / "top-checkpoint.txt").write_text("needle in a checkpoint\n")
    return ws


async def test_grep_skips_symlink_loops_and_dangling_links_with_a_note(tangled: Path) -> None:
    text = await asyncio.wait_for(call(tangled, "grep", pattern="needle"), timeout=10)
    assert text.splitlines() == [
        "alias.txt:1: needle on top",
        "top.txt:1: needle on top",
        "sub/notes.txt:1: needle in sub",
        "[skipped: 1 dangling symlinks (gone.txt); 3 symlink loops (ping)]",
    ]


async def test_glob_skips_symlink_loops_and_checkpoints(tangled: Path) -> None:
    text = await asyncio.wait_for(call(tangled, "glob", pattern="**/*"), timeout=10)
    assert text.splitlines() == [
        "5 matches for **/*:",
        "alias.txt",
        "sub/",
        "sub/notes.txt",
        "sub/up",  # a symlinked folder: listed, never entered
        "top.txt",
        "[skipped: 1 dangling symlinks (gone.txt); 3 symlink loops (ping)]",
    ]
    assert "checkpoint" not in text and "sub/up/" not in text


async def test_reading_a_symlink_loop_is_a_clear_error(tangled: Path) -> None:
    with pytest.raises(ToolError, match="self cannot be resolved \\(it is a symlink loop\\)"):
        await call(tangled, "read_file", path="self")


# -- finding 6: the symlink swap race --------------------------------------------------------


class Swapper:
    """Swaps `ws/d` between a real folder and a symlink to `outside`, as fast as it can."""

    def __init__(self, ws: Path, outside: Path) -> None:
        self.folder = ws / "d"
        self.away = ws / "d-away"
        self.outside = outside
        self.swaps = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                os.rename(self.folder, self.away)
                os.symlink(self.outside, self.folder)
                os.unlink(self.folder)
                os.rename(self.away, self.folder)
                self.swaps += 1
            except OSError:
                self._repair()

    def _repair(self) -> None:
        """A write may have re-created `d` as a folder while it was away: put things back."""
        try:
            if self.folder.is_symlink():
                self.folder.unlink()
            elif self.folder.is_dir() and self.away.is_dir():
                shutil.rmtree(self.folder, ignore_errors=True)
            if self.away.is_dir() and not self.folder.exists():
                os.rename(self.away, self.folder)
        except OSError:
            pass  # the next round repairs what this one could not

    def __enter__(self) -> Swapper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


async def test_swap_race_never_reads_or_writes_outside(ws: Path, outside: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "secret.txt").write_text("inside\n")
    reads = refusals = 0
    deadline = time.monotonic() + 15
    with Swapper(ws, outside) as swapper:
        for attempt in range(3000):
            if time.monotonic() > deadline:
                break
            try:
                text = await call(ws, "read_file", path="d/secret.txt")
                assert "OUTSIDE" not in text
                reads += 1
            except ToolError:
                refusals += 1
            if attempt % 3 == 0:
                with _tool_errors_allowed():
                    await call(ws, "write_file", path=f"d/new{attempt}.txt", content="x")
    assert swapper.swaps > 50 and reads > 0, (swapper.swaps, reads, refusals)
    assert_untouched(outside)


def assert_untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "OUTSIDE secret\n"


class _tool_errors_allowed:  # noqa: N801 - reads like contextlib.suppress
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, ToolError)


async def test_walks_never_list_through_a_swapped_in_symlink(ws: Path, outside: Path) -> None:
    (ws / "d").mkdir()
    (ws / "d" / "inner.txt").write_text("inside\n")
    deadline = time.monotonic() + 10
    with Swapper(ws, outside):
        for _ in range(300):
            if time.monotonic() > deadline:
                break
            assert "secret.txt" not in await call(ws, "glob", pattern="**/*")
            assert "OUTSIDE" not in await call(ws, "grep", pattern="secret|inside")


# -- finding 13: huge single-line files ------------------------------------------------------


def _write_one_line(path: Path, size: int) -> None:
    block = b"x" * (1024 * 1024)
    with path.open("wb") as handle:
        for _ in range(size // len(block)):
            handle.write(block)


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


async def test_a_100_mb_line_is_read_in_bounded_memory(ws: Path, traced: None) -> None:
    _write_one_line(ws / "one-line.txt", 100 * 1024 * 1024)
    tracemalloc.reset_peak()
    text = await asyncio.wait_for(call(ws, "read_file", path="one-line.txt"), timeout=60)
    _, peak = tracemalloc.get_traced_memory()
    assert text == "     1\t" + "x" * 2000 + f" [... {100 * 1024 * 1024 - 2000} more characters cut]"
    assert peak < 10 * 1024 * 1024, f"peak {peak:,} bytes"


async def test_view_image_refuses_a_fifo_named_like_an_image(ws: Path) -> None:
    os.mkfifo(ws / "plot.png")
    tool = TOOLS["view_image"]
    with pytest.raises(ToolError, match="plot.png is a named pipe \\(FIFO\\), not a regular file"):
        await asyncio.wait_for(tool.func(tool.parse_arguments('{"path": "plot.png"}'), ToolContext(ws)), timeout=10)
    await user_to_thread_still_runs()


async def test_an_unreadable_file_is_a_one_line_error(ws: Path) -> None:
    """Root reads a mode-0 file, so the open error is made the way it happens to anyone: a
    name the file system refuses. It must come back as one clear line, never a traceback."""
    name = "n" * 300
    for tool in ("read_file", "write_file", "edit_file"):
        arguments = {"path": name, "content": "x", "old": "a", "new": "b"}
        with pytest.raises(ToolError, match="^path 'n{59}…' is too long for this file system$"):
            await call(ws, tool, **{k: v for k, v in arguments.items() if k in _fields(tool)})


def _fields(tool_name: str) -> set[str]:
    from blitz_kernel.tools import builtin_tools

    [tool] = [t for t in builtin_tools() if t.name == tool_name]
    return set(tool.args_model.model_fields)
