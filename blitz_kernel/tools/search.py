"""Search tools: glob (files by name) and grep (lines by content) inside the workspace.

Both walk the workspace below a folder through directory descriptors (paths.walk: never
following a symlinked folder, skipping `SKIPPED_DIRS`, noting what they skip) and cap their
answers: a model that asks for every line matching `.` should learn to narrow the search,
not receive the whole workspace.

Patterns run on the `regex` package, not `re`, for two reasons measured on the pattern
`^(\\w+\\s?)*$` against prose: `re` backtracks for seconds to minutes and
holds the GIL the whole time, so the kernel's event loop, ■ and --timeout all freeze with it;
`regex` releases the GIL while matching and takes a `timeout=`, so a catastrophic pattern ends
with a clear error when the call's budget (the sooner of SEARCH_BUDGET_S and the turn's
deadline) runs out, and the loop keeps ticking meanwhile. It accepts Python's `re` syntax.

A pattern longer than MAX_PATTERN_CHARS is refused, and a pattern without regex syntax (a
literal, however long) is searched with `str.find`: `regex` searches a long literal in time
that grows with the cube of its length (a 2,000-character run of one letter: 5 s on 200 KB of
prose) and in a fast path that its timeout does not reach.

Each line is matched without its newline, like grep. `regex` pays a few microseconds per call
for its timeout, so grep searches blocks of lines with one call per match rather than one per
line wherever that cannot change the answer (`_search_block`): 200,000 lines with one match
take 0.04 s instead of 1.4 s.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import regex
from pydantic import BaseModel, Field

from .files import SNIFF_BYTES, is_binary
from .io import Budget, run_io
from .paths import (
    Folder,
    WalkNotes,
    open_in_workspace,
    relative_name,
    resolve_in_workspace,
    walk,
)
from .registry import Tool, ToolContext, ToolError, ToolKind, tool

__all__ = ["SEARCH_BUDGET_S", "SEARCH_TOOLS", "glob_files", "grep"]

MAX_GLOB_RESULTS = 500
MAX_GREP_MATCHES = 200
MAX_GREP_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024
GREP_CHUNK_BYTES = 256 * 1024
"""Lines are searched this many bytes at a time (see _search_block)."""
SEARCH_BUDGET_S = 20.0
"""How long one glob or grep may run before it answers with what it found so far."""
MAX_PATTERN_CHARS = 1000
"""The longest grep or glob pattern: longer ones are pasted text, not a search."""
REGEX_SYNTAX = frozenset(".^$*+?{}[]|()")
MATCH_BUDGET_S = 2.0
"""How long one match on one line may take. Ordinary patterns take microseconds; past this a
pattern is backtracking catastrophically. It also bounds how long a worker runs on after ■:
a match cannot be stopped from outside, only by its own timeout."""


def check_pattern_length(pattern: str, what: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(
            f"the {what} is {len(pattern):,} characters; the limit is {MAX_PATTERN_CHARS:,}: "
            "search for a shorter, distinctive part of it"
        )


def literal_text(pattern: str) -> str | None:
    """The text a pattern without regex syntax matches (`a\\.b` is `a.b`), else None."""
    out: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            if char.isalnum() or char == "_":  # \d, \b, \1 ...: regex syntax
                return None
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in REGEX_SYNTAX:
            return None
        else:
            out.append(char)
    return None if escaped or not out else "".join(out)


class _PatternTimeoutError(Exception):
    """One match took the rest of the budget: the pattern backtracks catastrophically."""


# -- glob patterns ---------------------------------------------------------------------------


def _glob_to_regex(pattern: str) -> regex.Pattern[str]:
    """Translate a glob with `**` into a regex over slash-separated relative paths.

    `*` and `?` stay within one path segment; `**/` matches any number of directories
    (including none). Python 3.11's pathlib cannot match `**` against a path, hence this.
    """
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        else:
            token, index = _glob_token(pattern, index)
            out.append(token)
    try:
        return regex.compile("".join(out), regex.DOTALL)
    except regex.error as error:
        raise ToolError(f"invalid glob pattern {pattern!r}: {error}") from None


def _glob_token(pattern: str, index: int) -> tuple[str, int]:
    char = pattern[index]
    if char == "*":
        return "[^/]*", index + 1
    if char == "?":
        return "[^/]", index + 1
    if char == "[":
        end = pattern.find("]", index + 2)
        if end != -1:
            body = pattern[index + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            return f"[{body.replace(chr(92), chr(92) * 2)}]", end + 1
    return regex.escape(char), index + 1


def _full_match(matcher: regex.Pattern[str], subject: str, budget: Budget) -> bool:
    """`matcher.fullmatch` within the budget (a glob like `*a*a*a*a*b` backtracks too)."""
    try:
        return matcher.fullmatch(subject, timeout=_match_timeout(budget)) is not None
    except TimeoutError:
        raise _PatternTimeoutError(subject) from None


def _match_timeout(budget: Budget) -> float:
    return max(min(budget.remaining(), MATCH_BUDGET_S), 0.001)


def _literal_prefix(pattern: str) -> tuple[str, str]:
    """Split `src/pkg/**/*.py` into the folder to walk (`src/pkg`) and the rest (`**/*.py`)."""
    parts = pattern.split("/")
    fixed: list[str] = []
    for part in parts[:-1]:
        if any(ch in part for ch in "*?["):
            break
        fixed.append(part)
    return "/".join(fixed) or ".", "/".join(parts[len(fixed) :])


def _budget_note(budget: Budget) -> str:
    if budget.stopped:
        return "[stopped: the turn was cancelled]"
    return (
        f"[search stopped early: out of time (the call's {budget.seconds:g} s budget or the "
        "turn's --timeout); what it found so far is above; narrow the path or pattern]"
    )


# -- glob ------------------------------------------------------------------------------------


class GlobArgs(BaseModel):
    pattern: str = Field(
        description=(
            "Glob pattern relative to the workspace root, e.g. '*.csv' (top folder only), "
            "'**/*.py' (any depth) or 'data/**/2024-*.parquet'."
        )
    )


def _glob_sync(workspace: Path, args: GlobArgs, budget: Budget) -> str:
    root = workspace.resolve()
    pattern = args.pattern.strip().removeprefix("./")
    if not pattern:
        raise ToolError("pattern is empty; try '**/*' to list everything")
    check_pattern_length(pattern, "glob pattern")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError("pattern must be relative to the workspace, without '..'")
    base_name, rest = _literal_prefix(pattern)
    base = resolve_in_workspace(root, base_name)
    if not base.is_dir():
        return f"no matches for {args.pattern} ({base_name} is not a folder)"
    # Without '**' a pattern has a fixed depth: `*.csv` need not walk the whole tree.
    depth = None if "**" in rest else rest.count("/")
    notes = WalkNotes()
    matcher = _glob_to_regex(rest)
    try:
        matches = sorted(_glob_matches(root, base, matcher, depth, notes, budget))
    except _PatternTimeoutError:
        raise ToolError(
            f"glob pattern {args.pattern!r} ran out of time matching one path; use fewer '*' in one segment"
        ) from None
    text = _render_glob(args.pattern, matches, root)
    extra = [note for note in (notes.render(), _budget_note(budget) if budget.exhausted() else "") if note]
    return "\n".join([text, *extra])


def _glob_matches(
    root: Path, base: Path, matcher: regex.Pattern[str], depth: int | None, notes: WalkNotes, budget: Budget
) -> Iterator[tuple[Path, bool]]:
    """(path, is a real folder) for each match."""
    for folder in walk(root, base, notes, budget):
        candidates = _listed(folder)  # before pruning: this folder's sub-folders may match
        if depth is not None and len(folder.path.relative_to(base).parts) >= depth:
            folder.dirs[:] = []  # the walk descends no further
        for name, is_dir in candidates:
            if budget.exhausted():
                return
            if _full_match(matcher, relative_name(folder.path / name, base), budget):
                yield folder.path / name, is_dir


def _listed(folder: Folder) -> list[tuple[str, bool]]:
    """Sub-folders (real ones count as folders) then files; captured before any pruning."""
    dirs = [(name, name not in folder.links) for name in folder.dirs]
    return [*dirs, *((name, False) for name in folder.files)]


def _render_glob(pattern: str, matches: list[tuple[Path, bool]], root: Path) -> str:
    if not matches:
        hint = "" if "/" in pattern else f"; '**/{pattern}' searches sub-folders too"
        return f"no matches for {pattern}{hint}"
    shown = [relative_name(p, root) + ("/" if is_dir else "") for p, is_dir in matches[:MAX_GLOB_RESULTS]]
    lines = [f"{len(matches)} matches for {pattern}:", *shown]
    if len(matches) > MAX_GLOB_RESULTS:
        lines.append(f"[... {len(matches) - MAX_GLOB_RESULTS} more matches not shown; narrow the pattern]")
    return "\n".join(lines)


@tool("glob", ToolKind.READ_ONLY, GlobArgs)
async def glob_files(args: GlobArgs, ctx: ToolContext) -> str:
    """Find files and folders in the workspace by glob pattern ('**' for any depth), sorted by
    path. Skips .git, .venv, __pycache__, node_modules, .ipynb_checkpoints and .blitz unless
    the pattern starts inside one of them; symlink loops, dangling links and pipes are skipped
    with a note."""
    budget = Budget(SEARCH_BUDGET_S, ctx.deadline)
    return await run_io(_glob_sync, ctx.workspace, args, budget, budget=budget)


# -- grep ------------------------------------------------------------------------------------


class GrepArgs(BaseModel):
    pattern: str = Field(description="Python regular expression searched in each line.")
    path: str = Field(
        default=".",
        description="File or folder to search, relative to the workspace root (default: all).",
    )
    glob: str | None = Field(
        default=None,
        description=(
            "Only search files matching this glob: a name pattern like '*.py', or a path "
            "pattern relative to the workspace like 'src/**/*.py' when it contains '/'."
        ),
    )


@dataclass
class _GrepResult:
    lines: list[str] = field(default_factory=list)
    matches: int = 0
    files_with_matches: int = 0
    files_searched: int = 0
    files_skipped: int = 0


@dataclass
class _Search:
    """One grep call's fixed inputs."""

    root: Path
    pattern: regex.Pattern[str] | None
    """None for a literal (`literal` holds it)."""
    budget: Budget
    literal: str | None = None
    block_pattern: regex.Pattern[str] | None = None
    """`pattern` with MULTILINE when `_block_safe`: searched over many lines at once."""
    result: _GrepResult = field(default_factory=_GrepResult)
    notes: WalkNotes = field(default_factory=WalkNotes)


def _grep_files(search: _Search, start: Path, glob: str | None) -> Iterator[tuple[Path, int | None]]:
    """(path, descriptor of its folder or None for a symlink) for each file to search."""
    glob = (glob or "").removeprefix("./")
    matcher = _glob_to_regex(glob) if glob else None
    by_path = "/" in glob
    for folder in walk(search.root, start, search.notes, search.budget):
        for name in folder.files:
            path = folder.path / name
            subject = relative_name(path, search.root) if by_path else name
            if matcher is None or _full_match(matcher, subject, search.budget):
                yield path, None if name in folder.links else folder.fd


def _open_for_grep(search: _Search, path: Path, folder: int | None) -> int | None:
    """A descriptor for a regular file, or None (counted as skipped). Files listed by the walk
    are opened relative to their folder without following links; a symlinked file goes
    through the full check, so a link swapped to point outside is refused."""
    try:
        if folder is None:
            fd, _ = open_in_workspace(search.root, relative_name(path, search.root))
            return fd
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    except (OSError, ToolError):
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # swapped for a pipe after the walk listed it
        os.close(fd)
        return None
    return fd


def _grep_file(search: _Search, path: Path, folder: int | None) -> None:
    result = search.result
    fd = _open_for_grep(search, path, folder)
    if fd is None:
        result.files_skipped += 1
        return
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(fd).st_size > MAX_GREP_FILE_BYTES or is_binary(handle.read(SNIFF_BYTES)):
            result.files_skipped += 1
            return
        handle.seek(0)
        result.files_searched += 1
        name = relative_name(path, search.root)
        before = result.matches
        first = 1
        for text, lines in _chunks(handle):
            if search.budget.exhausted():
                break
            if search.literal is not None:
                _search_literal(search, name, text, first)
            elif search.block_pattern is not None:
                _search_block(search, name, text, first)
            else:
                _search_lines(search, name, text, first)
            first += lines
        result.files_with_matches += result.matches > before


def _chunks(handle: BinaryIO) -> Iterator[tuple[str, int]]:
    """The file as text in pieces of whole lines (about GREP_CHUNK_BYTES each; a longer line
    is one piece), with how many lines each holds."""
    lines: list[str] = []
    size = 0
    for raw in handle:
        lines.append(raw.decode("utf-8", errors="replace"))
        size += len(raw)
        if size >= GREP_CHUNK_BYTES:
            yield "".join(lines), len(lines)
            lines, size = [], 0
    if lines:
        yield "".join(lines), len(lines)


def _search_block(search: _Search, name: str, text: str, first: int) -> None:
    """Lines of `text` that match, with one search per match instead of one per line.

    `block_pattern` is the pattern with MULTILINE, used only for patterns where a match in a
    line implies a match in the joined text at the same place (no lookaround, no \\A or \\Z,
    no inline flags that turn MULTILINE off: `_block_safe`). The leftmost match in the text
    then names the first candidate line; a match that stays inside its line is a match of that
    line, one that runs past its end is checked on the line alone."""
    assert search.block_pattern is not None
    pos = 0
    number = first
    while pos < len(text) and not search.budget.exhausted():
        hit = _timed(search.block_pattern.search, text, pos, search, name, number)
        if hit is None or hit.start() >= len(text):
            return
        line_start = text.rfind("\n", 0, hit.start()) + 1
        line_end = text.find("\n", hit.start())
        line_end = len(text) if line_end == -1 else line_end
        number += text.count("\n", pos, line_start)
        line = text[line_start:line_end]
        assert search.pattern is not None
        if hit.end() <= line_end or _timed(search.pattern.search, line, 0, search, name, number):
            _record(search.result, name, number, line)
        pos = line_end + 1
        number += 1


def _search_literal(search: _Search, name: str, text: str, first: int) -> None:
    """Lines of `text` that hold `search.literal`, found with `str.find` (linear time)."""
    literal = search.literal
    assert literal is not None
    if "\n" in literal:  # lines are matched one at a time, like grep: never within one
        return
    pos = 0
    number = first
    while not search.budget.exhausted():
        hit = text.find(literal, pos)
        if hit < 0:
            return
        line_start = text.rfind("\n", 0, hit) + 1
        line_end = text.find("\n", hit)
        line_end = len(text) if line_end == -1 else line_end
        number += text.count("\n", pos, line_start)
        _record(search.result, name, number, text[line_start:line_end])
        pos = line_end + 1
        number += 1


def _search_lines(search: _Search, name: str, text: str, first: int) -> None:
    """One search per line: for patterns `_search_block` cannot take."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()  # the "line" after the final newline
    for number, line in enumerate(lines, start=first):
        if search.budget.exhausted():
            return
        assert search.pattern is not None
        if _timed(search.pattern.search, line, 0, search, name, number):
            _record(search.result, name, number, line)


def _timed(
    method: Callable[..., regex.Match[str] | None], text: str, pos: int, search: _Search, name: str, number: int
) -> regex.Match[str] | None:
    try:
        return method(text, pos, timeout=_match_timeout(search.budget))
    except TimeoutError:
        raise _PatternTimeoutError(f"{name}:{number}") from None


def _record(result: _GrepResult, name: str, number: int, line: str) -> None:
    result.matches += 1
    if len(result.lines) < MAX_GREP_MATCHES:
        text = line.rstrip("\r")
        if len(text) > MAX_GREP_LINE_CHARS:
            text = text[:MAX_GREP_LINE_CHARS] + " [...]"
        result.lines.append(f"{name}:{number}: {text}")


_BLOCK_UNSAFE = regex.compile(r"\\[AZzG]|\(\?(?!:|P<|P=|[imsx]+\)|[imsx]+:)")
"""Syntax after which a line's match might not be a match in the joined text: string anchors,
lookaround, and inline groups other than plain ones and the harmless flags i, m, s, x."""


def _block_safe(pattern: str) -> bool:
    return _BLOCK_UNSAFE.search(pattern) is None


def _grep_sync(workspace: Path, args: GrepArgs, budget: Budget) -> str:
    root = workspace.resolve()
    check_pattern_length(args.pattern, "pattern")
    literal = literal_text(args.pattern)
    pattern = block = None
    if literal is None:
        try:
            pattern = regex.compile(args.pattern)
        except (regex.error, OverflowError, ValueError) as error:
            raise ToolError(f"invalid regular expression {args.pattern!r}: {error}") from None
        block = regex.compile(args.pattern, regex.MULTILINE) if _block_safe(args.pattern) else None
    search = _Search(root=root, pattern=pattern, budget=budget, block_pattern=block, literal=literal)
    start = resolve_in_workspace(root, args.path)
    try:
        if start.is_dir():
            for path, folder in _grep_files(search, start, args.glob):
                if budget.exhausted():
                    break
                _grep_file(search, path, folder)
        else:
            fd, _ = open_in_workspace(root, args.path)  # the clear error for a missing or odd file
            os.close(fd)
            _grep_file(search, start, None)
    except _PatternTimeoutError as error:
        if budget.stopped:
            raise
        raise ToolError(
            f"the pattern /{args.pattern}/ was stopped on one line ({error}) when it ran out of "
            "time: it backtracks catastrophically (nested repetition like (\\w+\\s?)* or "
            "(a|a)*); simplify it"
        ) from None
    return _render_grep(args, search, budget)


def _render_grep(args: GrepArgs, search: _Search, budget: Budget) -> str:
    result = search.result
    skipped = f"; {result.files_skipped} binary, large or unreadable files skipped" if result.files_skipped else ""
    extra = [note for note in (search.notes.render(), _budget_note(budget) if budget.exhausted() else "") if note]
    if not result.matches:
        text = f"no matches for /{args.pattern}/ in {args.path} ({result.files_searched} files searched{skipped})"
        return "\n".join([text, *extra])
    lines = list(result.lines)
    if result.matches > len(result.lines):
        lines.append(
            f"[... {result.matches - len(result.lines)} more matches not shown "
            f"({result.matches} in {result.files_with_matches} files); "
            "narrow the pattern, path or glob]"
        )
    elif skipped:
        lines.append(f"[{skipped.removeprefix('; ')}]")
    return "\n".join([*lines, *extra])


@tool("grep", ToolKind.READ_ONLY, GrepArgs)
async def grep(args: GrepArgs, ctx: ToolContext) -> str:
    """Search file contents with a regular expression (Python syntax); prints
    `path:line: text` per matching line. Searches the whole workspace by default (skipping
    .git, .venv, __pycache__, node_modules, .ipynb_checkpoints, .blitz, binary files, pipes and
    broken links); narrow it with `path` and `glob`. A pattern that backtracks
    catastrophically is stopped with an error."""
    budget = Budget(SEARCH_BUDGET_S, ctx.deadline)
    return await run_io(_grep_sync, ctx.workspace, args, budget, budget=budget)


SEARCH_TOOLS: list[Tool] = [glob_files, grep]
"""The workspace search tools, in the order they are offered to the model."""
