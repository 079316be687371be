"""Search tools: glob (files by name) and grep (lines by content) inside the workspace.

Both walk the workspace below a folder, skipping `paths.SKIPPED_DIRS`, and cap their answers:
a model that asks for every line matching `.` should learn to narrow the search, not receive
the whole workspace. They run in a worker thread so a long walk does not stall the kernel's
event loop.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from .files import is_binary, read_head
from .paths import is_within, missing_file_error, relative_name, resolve_in_workspace, walk
from .registry import Tool, ToolContext, ToolError, ToolKind, tool

__all__ = ["SEARCH_TOOLS", "glob_files", "grep"]

MAX_GLOB_RESULTS = 500
MAX_GREP_MATCHES = 200
MAX_GREP_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024


# -- walking and glob patterns -------------------------------------------------------------


def _glob_to_regex(pattern: str) -> re.Pattern[str]:
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
    return re.compile("".join(out), re.DOTALL)


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
    return re.escape(char), index + 1


def _literal_prefix(pattern: str) -> tuple[str, str]:
    """Split `src/pkg/**/*.py` into the folder to walk (`src/pkg`) and the rest (`**/*.py`)."""
    parts = pattern.split("/")
    fixed: list[str] = []
    for part in parts[:-1]:
        if any(ch in part for ch in "*?["):
            break
        fixed.append(part)
    return "/".join(fixed) or ".", "/".join(parts[len(fixed) :])


class GlobArgs(BaseModel):
    pattern: str = Field(
        description=(
            "Glob pattern relative to the workspace root, e.g. '*.csv' (top folder only), "
            "'**/*.py' (any depth) or 'data/**/2024-*.parquet'."
        )
    )


def _glob_sync(workspace: Path, args: GlobArgs) -> str:
    root = workspace.resolve()
    pattern = args.pattern.strip().removeprefix("./")
    if not pattern:
        raise ToolError("pattern is empty; try '**/*' to list everything")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise ToolError("pattern must be relative to the workspace, without '..'")
    base_name, rest = _literal_prefix(pattern)
    base = resolve_in_workspace(root, base_name)
    if not base.is_dir():
        return f"no matches for {args.pattern} ({base_name} is not a folder)"
    # Without '**' a pattern has a fixed depth: `*.csv` need not walk the whole tree.
    depth = None if "**" in rest else rest.count("/")
    matches = sorted(_glob_matches(base, _glob_to_regex(rest), depth))
    return _render_glob(args.pattern, matches, root)


def _glob_matches(base: Path, matcher: re.Pattern[str], depth: int | None) -> Iterator[Path]:
    for folder, dirs, files in walk(base):
        if depth is not None and len(folder.relative_to(base).parts) >= depth:
            dirs_to_match = list(dirs)
            dirs.clear()  # os.walk descends no further
        else:
            dirs_to_match = dirs
        for name in dirs_to_match:
            if matcher.fullmatch(relative_name(folder / name, base)):
                yield folder / name
        for name in files:
            if matcher.fullmatch(relative_name(folder / name, base)):
                yield folder / name


def _render_glob(pattern: str, matches: list[Path], root: Path) -> str:
    if not matches:
        hint = "" if "/" in pattern else f"; '**/{pattern}' searches sub-folders too"
        return f"no matches for {pattern}{hint}"
    shown = [
        relative_name(p, root) + ("/" if p.is_dir() and not p.is_symlink() else "")
        for p in matches[:MAX_GLOB_RESULTS]
    ]
    lines = [f"{len(matches)} matches for {pattern}:", *shown]
    if len(matches) > MAX_GLOB_RESULTS:
        lines.append(
            f"[... {len(matches) - MAX_GLOB_RESULTS} more matches not shown; narrow the pattern]"
        )
    return "\n".join(lines)


@tool("glob", ToolKind.READ_ONLY, GlobArgs)
async def glob_files(args: GlobArgs, ctx: ToolContext) -> str:
    """Find files and folders in the workspace by glob pattern ('**' for any depth), sorted by
    path. Skips .git, .venv, __pycache__, node_modules and .blitz unless the pattern starts
    inside one of them."""
    return await asyncio.to_thread(_glob_sync, ctx.workspace, args)


# -- grep ----------------------------------------------------------------------------------


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
    lines: list[str]
    matches: int = 0
    files_with_matches: int = 0
    files_searched: int = 0
    files_skipped: int = 0


def _grep_files(root: Path, start: Path, glob: str | None) -> Iterator[Path]:
    if start.is_file():
        yield start
        return
    glob = (glob or "").removeprefix("./")
    matcher = _glob_to_regex(glob) if glob else None
    by_path = "/" in glob
    for folder, _dirs, files in walk(start):
        for name in files:
            path = folder / name
            subject = relative_name(path, root) if by_path else name
            if matcher is None or matcher.fullmatch(subject):
                yield path


def _grep_file(path: Path, root: Path, regex: re.Pattern[str], result: _GrepResult) -> None:
    try:
        if path.is_symlink() and not is_within(path.resolve(), root):
            result.files_skipped += 1
            return
        if path.stat().st_size > MAX_GREP_FILE_BYTES or is_binary(read_head(path)):
            result.files_skipped += 1
            return
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        result.files_skipped += 1
        return
    result.files_searched += 1
    found = False
    name = relative_name(path, root)
    with handle:
        for number, line in enumerate(handle, start=1):
            if not regex.search(line):
                continue
            found = True
            result.matches += 1
            if len(result.lines) < MAX_GREP_MATCHES:
                text = line.rstrip("\r\n")
                if len(text) > MAX_GREP_LINE_CHARS:
                    text = text[:MAX_GREP_LINE_CHARS] + " [...]"
                result.lines.append(f"{name}:{number}: {text}")
    result.files_with_matches += found


def _grep_sync(workspace: Path, args: GrepArgs) -> str:
    root = workspace.resolve()
    try:
        regex = re.compile(args.pattern)
    except re.error as error:
        raise ToolError(f"invalid regular expression {args.pattern!r}: {error}") from None
    start = resolve_in_workspace(root, args.path)
    if not start.exists():
        raise missing_file_error(start, args.path)
    result = _GrepResult(lines=[])
    for path in _grep_files(root, start, args.glob):
        _grep_file(path, root, regex, result)
    return _render_grep(args, result)


def _render_grep(args: GrepArgs, result: _GrepResult) -> str:
    skipped = (
        f"; {result.files_skipped} binary, large or unreadable files skipped"
        if result.files_skipped
        else ""
    )
    if not result.matches:
        return (
            f"no matches for /{args.pattern}/ in {args.path} "
            f"({result.files_searched} files searched{skipped})"
        )
    lines = list(result.lines)
    if result.matches > len(result.lines):
        lines.append(
            f"[... {result.matches - len(result.lines)} more matches not shown "
            f"({result.matches} in {result.files_with_matches} files); "
            "narrow the pattern, path or glob]"
        )
    elif skipped:
        lines.append(f"[{skipped.removeprefix('; ')}]")
    return "\n".join(lines)


@tool("grep", ToolKind.READ_ONLY, GrepArgs)
async def grep(args: GrepArgs, ctx: ToolContext) -> str:
    """Search file contents with a regular expression; prints `path:line: text` per matching
    line. Searches the whole workspace by default (skipping .git, .venv, __pycache__,
    node_modules, .blitz and binary files); narrow it with `path` and `glob`."""
    return await asyncio.to_thread(_grep_sync, ctx.workspace, args)


SEARCH_TOOLS: list[Tool] = [glob_files, grep]
"""The workspace search tools, in the order they are offered to the model."""
