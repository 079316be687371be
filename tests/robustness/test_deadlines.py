"""Work that must stay inside the turn's deadline: a long literal grep pattern and a huge
`@file:` reference. Each ends within its budget with one clear line, the event loop keeps
turning meanwhile, and the user's own `asyncio.to_thread` still answers.

Run alone: `pytest tests/robustness/test_deadlines.py` (about 10 s).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from blitz_kernel.notebook import cell_log
from blitz_kernel.notebook.references import (
    MAX_FILE_BYTES,
    PromptReferences,
    ReferenceTimeoutError,
    UnknownReferenceError,
)
from blitz_kernel.tools import search
from blitz_kernel.tools.registry import ToolError

from .test_hostile_workspace import LoopTicker, call, user_to_thread_still_runs

PROSE = "a banana and a papaya are at a table in a cabana, and a llama waits\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


# -- grep ------------------------------------------------------------------------------------


async def test_a_long_literal_is_searched_in_linear_time_within_the_deadline(ws: Path) -> None:
    """`regex` took 5 s per 200 KB for a 2,000-letter run of `a` against prose, out of reach
    of its timeout; as a literal it is one `str.find` per block."""
    (ws / "prose.txt").write_text(PROSE * 40_000)  # 2.7 MB, full of a's
    literal = "a" * search.MAX_PATTERN_CHARS
    started = time.monotonic()
    text = await asyncio.wait_for(call(ws, "grep", deadline=time.monotonic() + 2, pattern=literal), timeout=4)
    assert text.startswith(f"no matches for /{literal}/ in . (1 files searched")
    assert time.monotonic() - started < 2
    await user_to_thread_still_runs()


async def test_a_literal_finds_what_the_regex_would(ws: Path) -> None:
    (ws / "a.txt").write_text("one a.b\ntwo axb\nthree a.b a.b\n")
    assert search.literal_text(r"a\.b") == "a.b"
    assert search.literal_text(r"a\db") is None and search.literal_text("a.b") is None
    text = await call(ws, "grep", pattern=r"a\.b")
    assert text.splitlines() == ["a.txt:1: one a.b", "a.txt:3: three a.b a.b"]
    text = await call(ws, "grep", pattern="two")
    assert text.splitlines() == ["a.txt:2: two axb"]


@pytest.mark.parametrize("size", [search.MAX_PATTERN_CHARS + 1, 5_000, 100_000])
async def test_a_pattern_over_the_length_cap_is_one_line(ws: Path, size: int) -> None:
    (ws / "a.txt").write_text(PROSE)
    started = time.monotonic()
    with pytest.raises(ToolError) as caught:
        await call(ws, "grep", pattern="a" * size)
    assert str(caught.value) == (
        f"the pattern is {size:,} characters; the limit is {search.MAX_PATTERN_CHARS:,}: "
        "search for a shorter, distinctive part of it"
    )
    with pytest.raises(ToolError, match="the glob pattern is"):
        await call(ws, "glob", pattern="*" + "a" * size)
    assert time.monotonic() - started < 1


# -- @file: references ----------------------------------------------------------------------


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    shell.execution_count = 2
    cell_log.install(shell)
    yield shell
    cell_log.uninstall(shell)
    shell.reset(new_session=True)


def _big_text_file(path: Path, size: int) -> None:
    """A text file of `size` bytes (short lines), written in pieces."""
    line = b"x" * 99 + b"\n"
    piece = line * 10_000
    with path.open("wb") as handle:
        written = 0
        while written < size:
            handle.write(piece)
            written += len(piece)


async def test_a_200_mb_file_reference_is_refused_at_once(shell: InteractiveShell, ws: Path) -> None:
    path = ws / "big.log"
    with path.open("wb") as handle:  # sparse: 200 MB without writing them
        handle.truncate(200_000_000)
    started = time.monotonic()
    with LoopTicker(), pytest.raises(UnknownReferenceError) as caught:
        await PromptReferences(shell, ws, timeout_s=3).resolve("look at @file:big.log")
    assert str(caught.value).startswith(
        f"@file:big.log: 200,000,000 bytes, over the {MAX_FILE_BYTES:,}-byte limit for an attachment;"
    )
    assert "\n" not in str(caught.value)
    assert time.monotonic() - started < 1
    await user_to_thread_still_runs()


async def test_a_reference_that_outlives_the_turns_timeout_is_stopped(shell: InteractiveShell, ws: Path) -> None:
    """Under the size cap the read streams the file to count its lines; the turn's --timeout
    bounds it (the worker stops at its next check) and the cell gets one line."""
    _big_text_file(ws / "big.log", MAX_FILE_BYTES - 200_000)
    os.sync()
    started = time.monotonic()
    with LoopTicker():
        try:
            _, attachments = await asyncio.wait_for(
                PromptReferences(shell, ws, timeout_s=0.05).resolve("look at @file:big.log"), timeout=3
            )
        except ReferenceTimeoutError as error:
            assert str(error) == (
                "the @ references took longer than 0.05 s to resolve (the budget for references, "
                "or the turn's --timeout); nothing was sent"
            )
        else:  # the read answered within its budget: with what it read, saying it stopped
            assert "counting stopped at the time budget" in attachments[0].text
    assert time.monotonic() - started < 2
    await user_to_thread_still_runs()


async def test_privacy_schema_keeps_variable_values_out_of_a_reference(shell: InteractiveShell, ws: Path) -> None:
    shell.user_ns["token_table"] = {"owner": "Ada Lovelace", "count": 3}
    _, [full] = await PromptReferences(shell, ws).resolve("see @token_table")
    _, [schema] = await PromptReferences(shell, ws, variable_values=False).resolve("see @token_table")
    assert "Ada Lovelace" in full.text
    assert "Ada Lovelace" not in schema.text and "dict" in schema.text


async def test_a_cell_reference_with_a_word_for_a_count_is_an_error(shell: InteractiveShell, ws: Path) -> None:
    with pytest.raises(UnknownReferenceError) as caught:
        await PromptReferences(shell, ws).resolve("fix @cell:abc please")
    assert str(caught.value).startswith("@cell:abc: expected @cell, @cell:N or @cell:-N (N a number) (write @@")
