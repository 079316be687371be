"""File tools: read, list, glob, grep, write and edit files inside the workspace.

Every path goes through `resolve_in_workspace`, the one place that decides what "inside the
workspace" means: absolute paths elsewhere, `..` escapes and symlinks that lead out are refused
with a message the model can act on. Outputs are capped and say how to get the rest, because a
model that receives a 2 GB log in one tool result learns nothing and pays for all of it.

The read-only tools walk directories and read files in a worker thread, so a long grep does not
stall the kernel's event loop (widget clicks, the interrupt ticker). The two writing tools run
inline: they are quick, and a write should not land after its turn was cancelled.
"""

from __future__ import annotations

import asyncio
import difflib
import mimetypes
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from .registry import Tool, ToolContext, ToolError, ToolKind, tool

__all__ = [
    "FILE_TOOLS",
    "SKIPPED_DIRS",
    "edit_file",
    "glob_files",
    "grep",
    "list_files",
    "read_file",
    "resolve_in_workspace",
    "write_file",
]

SKIPPED_DIRS = frozenset({".git", ".venv", "__pycache__", "node_modules", ".blitz"})
"""Directory names that listing, glob and grep do not descend into unless asked by name."""

DEFAULT_LINE_LIMIT = 2000
MAX_OUTPUT_CHARS = 100_000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 500
MAX_GLOB_RESULTS = 500
MAX_GREP_MATCHES = 200
MAX_GREP_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024
SNIFF_BYTES = 8192


# -- confinement ---------------------------------------------------------------------------


def resolve_in_workspace(workspace: Path, path: str) -> Path:
    """Resolve `path` (relative to the workspace, or absolute) to a real path inside it.

    Symlinks are resolved before the check, so a link inside the workspace that points outside
    is refused, while links between places inside the workspace work. The message says which
    of the three ways out was taken, so the model can fix the path rather than retry it.
    """
    root = workspace.resolve()
    if "\0" in path:
        raise ToolError(f"path {path!r} contains a NUL character")
    given = Path(path).expanduser()
    candidate = given if given.is_absolute() else root / given
    resolved = candidate.resolve()
    if _is_within(resolved, root):
        return resolved
    if not _is_within(Path(os.path.normpath(candidate)), root):
        if given.is_absolute():
            raise ToolError(
                f"{path} is outside the workspace ({root}); use a path relative to the workspace"
            )
        raise ToolError(f"{path} leads outside the workspace ({root}) through '..'")
    raise ToolError(
        f"{path} is a symlink (or inside one) that leads outside the workspace, to {resolved}"
    )


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _relative(path: Path, root: Path) -> str:
    """The workspace-relative, slash-separated name the model should use for `path`."""
    try:
        name = path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
    return name or "."


# -- shared helpers ------------------------------------------------------------------------


def _format_size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    units = ("KB", "MB", "GB", "TB")
    value = size / 1024
    index = 0
    while value >= 1024 and index < len(units) - 1:
        value /= 1024
        index += 1
    return f"{value:.1f} {units[index]}"


_MAGIC_NUMBERS: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "ZIP archive (also .xlsx/.docx/.whl)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"PAR1", "Parquet file"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\x7fELF", "ELF executable"),
    (b"\x93NUMPY", "NumPy .npy array"),
    (b"\x89HDF\r\n\x1a\n", "HDF5 file"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
)


def _guess_binary_type(path: Path, head: bytes) -> str:
    for magic, kind in _MAGIC_NUMBERS:
        if head.startswith(magic):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP image"
    mime, _ = mimetypes.guess_type(path.name)
    return mime or "unknown binary data"


def _read_head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(SNIFF_BYTES)


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


def _describe_binary(path: Path, root: Path, head: bytes, reason: str) -> str:
    kind = _guess_binary_type(path, head)
    size = path.stat().st_size
    hint = (
        "use view_image to look at it"
        if kind.endswith("image") or kind.startswith("image/")
        else "load it with a suitable library in run_python"
    )
    return (
        f"{_relative(path, root)} is a binary file ({size:,} bytes, {kind}; {reason}); "
        f"its bytes are not shown: {hint}."
    )


def _missing_file_error(path: Path, given: str) -> ToolError:
    """Say the file is missing, with the closest names in its folder (typos are common)."""
    parent = path.parent
    close: list[str] = []
    if parent.is_dir():
        close = difflib.get_close_matches(path.name, [p.name for p in parent.iterdir()], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return ToolError(f"no such file: {given}{hint}")


# -- read_file -----------------------------------------------------------------------------


class ReadFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    offset: int = Field(
        default=0,
        ge=0,
        description="Number of lines to skip before the first line shown (0 = from the start).",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description=f"Maximum number of lines to show (default {DEFAULT_LINE_LIMIT}).",
    )


@dataclass
class _Page:
    """The lines of a text file that fit one read_file answer, and where they stopped."""

    lines: list[str]
    first: int
    total: int
    cut_by_size: bool


def _read_page(path: Path, offset: int, limit: int) -> _Page:
    """Stream the file once: keep the requested lines, count the rest.

    Raises UnicodeDecodeError for files that are not UTF-8 text.
    """
    kept: list[str] = []
    size = 0
    total = 0
    cut_by_size = False
    with path.open(encoding="utf-8") as handle:
        for total, line in enumerate(handle, start=1):  # noqa: B007 - total counts lines
            if total <= offset or len(kept) >= limit or cut_by_size:
                continue
            text = _cap_line(line.rstrip("\n"))
            numbered = f"{total:>6}\t{text}"
            if kept and size + len(numbered) > MAX_OUTPUT_CHARS:
                cut_by_size = True
                continue
            kept.append(numbered)
            size += len(numbered) + 1
    return _Page(lines=kept, first=offset + 1, total=total, cut_by_size=cut_by_size)


def _cap_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]} [... {len(line) - MAX_LINE_CHARS} more characters cut]"


def _render_page(page: _Page, offset: int, name: str) -> str:
    if page.total == 0:
        return f"{name} is empty (0 lines)."
    if not page.lines:
        raise ToolError(f"offset {offset} is past the end of {name}, which has {page.total} lines")
    last = page.first + len(page.lines) - 1
    body = "\n".join(page.lines)
    if page.first == 1 and last == page.total:
        return body
    note = f"[lines {page.first}–{last} of {page.total}"
    if last < page.total:
        reason = "; output size cap reached" if page.cut_by_size else ""
        note += f"{reason}; call again with offset={last} to continue"
    return f"{body}\n{note}]"


def _read_file_sync(workspace: Path, args: ReadFileArgs) -> str:
    root = workspace.resolve()
    path = resolve_in_workspace(root, args.path)
    if path.is_dir():
        raise ToolError(f"{args.path} is a directory; use list_files to see what it holds")
    if not path.exists():
        raise _missing_file_error(path, args.path)
    head = _read_head(path)
    if _is_binary(head):
        return _describe_binary(path, root, head, "it contains NUL bytes")
    try:
        page = _read_page(path, args.offset, args.limit or DEFAULT_LINE_LIMIT)
    except UnicodeDecodeError as error:
        return _describe_binary(path, root, head, f"not UTF-8 text at byte {error.start}")
    return _render_page(page, args.offset, _relative(path, root))


@tool("read_file", ToolKind.READ_ONLY, ReadFileArgs)
async def read_file(args: ReadFileArgs, ctx: ToolContext) -> str:
    """Read a UTF-8 text file from the workspace, with line numbers (a tab follows each).
    Long files come in pages of `limit` lines: the answer ends with "lines X–Y of N; call again
    with offset=..." when there is more. Binary files are described (size, type), not shown."""
    return await asyncio.to_thread(_read_file_sync, ctx.workspace, args)


# -- list_files ----------------------------------------------------------------------------


class ListFilesArgs(BaseModel):
    path: str = Field(default=".", description="Directory to list, relative to the workspace root.")


def _list_entry(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name} -> {os.readlink(entry.path)}"
    if entry.is_dir():
        return f"{entry.name}/"
    try:
        size = entry.stat().st_size
    except OSError:
        return f"{entry.name}  (unreadable)"
    return f"{entry.name}  {_format_size(size)}"


def _list_files_sync(workspace: Path, args: ListFilesArgs) -> str:
    root = workspace.resolve()
    path = resolve_in_workspace(root, args.path)
    if not path.exists():
        raise _missing_file_error(path, args.path)
    if not path.is_dir():
        raise ToolError(f"{args.path} is a file, not a directory; use read_file to read it")
    with os.scandir(path) as scan:
        entries = list(scan)
    skipped = sorted(e.name for e in entries if e.name in SKIPPED_DIRS)
    shown = [e for e in entries if e.name not in SKIPPED_DIRS]
    # Directories first, then files; each group by name, ignoring case.
    shown.sort(key=lambda e: (not e.is_dir(follow_symlinks=False), e.name.lower(), e.name))
    lines = [_list_entry(e) for e in shown[:MAX_LIST_ENTRIES]]
    header = f"{_relative(path, root)}/ ({len(shown)} entries)"
    if not shown:
        header = f"{_relative(path, root)}/ is empty"
    notes = []
    if len(shown) > MAX_LIST_ENTRIES:
        notes.append(f"[... {len(shown) - MAX_LIST_ENTRIES} more entries not shown; use glob]")
    if skipped:
        notes.append(f"[not listed: {', '.join(skipped)}]")
    return "\n".join([header, *lines, *notes])


@tool("list_files", ToolKind.READ_ONLY, ListFilesArgs)
async def list_files(args: ListFilesArgs, ctx: ToolContext) -> str:
    """List one directory of the workspace: sub-directories (marked with "/") first, then files
    with their sizes, sorted by name. Skips .git, .venv, __pycache__, node_modules and .blitz.
    Use glob to search deeper."""
    return await asyncio.to_thread(_list_files_sync, ctx.workspace, args)


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


def _walk(start: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    """os.walk below `start`, not following symlinked folders and pruning SKIPPED_DIRS.

    A skipped folder is still walked when `start` itself is inside it: asking for
    `.venv/lib/**` by name means the model wants it.
    """
    for folder, dirs, files in os.walk(start, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        yield Path(folder), dirs, sorted(files)


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
    for folder, dirs, files in _walk(base):
        if depth is not None and len(folder.relative_to(base).parts) >= depth:
            dirs_to_match = list(dirs)
            dirs.clear()  # os.walk descends no further
        else:
            dirs_to_match = dirs
        for name in dirs_to_match:
            if matcher.fullmatch(_relative(folder / name, base)):
                yield folder / name
        for name in files:
            if matcher.fullmatch(_relative(folder / name, base)):
                yield folder / name


def _render_glob(pattern: str, matches: list[Path], root: Path) -> str:
    if not matches:
        hint = "" if "/" in pattern else f"; '**/{pattern}' searches sub-folders too"
        return f"no matches for {pattern}{hint}"
    shown = [
        _relative(p, root) + ("/" if p.is_dir() and not p.is_symlink() else "")
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
    for folder, _dirs, files in _walk(start):
        for name in files:
            path = folder / name
            subject = _relative(path, root) if by_path else name
            if matcher is None or matcher.fullmatch(subject):
                yield path


def _grep_file(path: Path, root: Path, regex: re.Pattern[str], result: _GrepResult) -> None:
    try:
        if path.is_symlink() and not _is_within(path.resolve(), root):
            result.files_skipped += 1
            return
        if path.stat().st_size > MAX_GREP_FILE_BYTES or _is_binary(_read_head(path)):
            result.files_skipped += 1
            return
        handle = path.open(encoding="utf-8", errors="replace")
    except OSError:
        result.files_skipped += 1
        return
    result.files_searched += 1
    found = False
    name = _relative(path, root)
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
        raise _missing_file_error(start, args.path)
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


# -- write_file and edit_file --------------------------------------------------------------


class WriteFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    content: str = Field(description="The complete new content of the file (UTF-8 text).")


def _write_file_sync(workspace: Path, args: WriteFileArgs) -> str:
    root = workspace.resolve()
    path = resolve_in_workspace(root, args.path)
    if path.is_dir():
        raise ToolError(f"{args.path} is a directory; give a file path")
    existed = path.exists()
    old_size = path.stat().st_size if existed else 0
    data = args.content.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    name = _relative(path, root)
    if existed:
        return f"overwrote {name} ({len(data):,} bytes written; it had {old_size:,} bytes)"
    return f"created {name} ({len(data):,} bytes written)"


@tool("write_file", ToolKind.MUTATING, WriteFileArgs)
async def write_file(args: WriteFileArgs, ctx: ToolContext) -> str:
    """Create a file or replace its whole content; missing parent folders are created. To
    change part of an existing file, prefer edit_file."""
    return _write_file_sync(ctx.workspace, args)


class EditFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    old: str = Field(
        description=(
            "Exact text to replace, including whitespace and indentation. It must occur exactly "
            "once unless replace_all is true; include surrounding lines to make it unique."
        )
    )
    new: str = Field(description="Text that replaces `old`.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence of `old` instead of exactly one."
    )


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _read_text_for_edit(path: Path, given: str) -> str:
    if path.is_dir():
        raise ToolError(f"{given} is a directory; give a file path")
    if not path.exists():
        raise _missing_file_error(path, given)
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except UnicodeDecodeError:
        raise ToolError(f"{given} is not UTF-8 text; edit_file only edits text files") from None


def _match_line_endings(text: str, args: EditFileArgs) -> tuple[str, str]:
    """Let a model that writes `\\n` edit a file that uses `\\r\\n`."""
    if "\r\n" in text and "\r\n" not in args.old and args.old not in text:
        return args.old.replace("\n", "\r\n"), args.new.replace("\n", "\r\n")
    return args.old, args.new


def _count_error(text: str, old: str, count: int, given: str) -> ToolError:
    if count == 0:
        hint = ""
        stripped = old.strip()
        if stripped and stripped in text:
            line = _line_of(text, text.index(stripped))
            hint = f" (the text without its leading/trailing whitespace occurs at line {line})"
        return ToolError(
            f"old text not found in {given}{hint}; read the file and copy the text exactly"
        )
    lines: list[int] = []
    start = text.find(old)
    while start != -1 and len(lines) < 10:
        lines.append(_line_of(text, start))
        start = text.find(old, start + len(old))
    return ToolError(
        f"old text matches {count} times in {given} (lines {', '.join(map(str, lines))}); "
        "include more surrounding text to make it unique, or set replace_all=true"
    )


def _snippet(text: str, line: int, count: int) -> str:
    """A few numbered lines around the first change, so the model can check the result."""
    lines = text.splitlines()
    first = max(line - 3, 1)
    last = min(line + count + 2, len(lines), first + 15)
    return "\n".join(f"{n:>6}\t{_cap_line(lines[n - 1])}" for n in range(first, last + 1))


def _edit_file_sync(workspace: Path, args: EditFileArgs) -> str:
    root = workspace.resolve()
    if not args.old:
        raise ToolError("old is empty; use write_file to create or replace a whole file")
    if args.old == args.new:
        raise ToolError("old and new are the same; nothing to change")
    path = resolve_in_workspace(root, args.path)
    text = _read_text_for_edit(path, args.path)
    old, new = _match_line_endings(text, args)
    count = text.count(old)
    if count == 0 or (count > 1 and not args.replace_all):
        raise _count_error(text, old, count, args.path)
    first_line = _line_of(text, text.index(old))
    edited = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
    path.write_bytes(edited.encode("utf-8"))
    replaced = f"{count} occurrences" if count > 1 else "1 occurrence"
    return (
        f"edited {_relative(path, root)}: replaced {replaced} (first at line {first_line})\n"
        f"{_snippet(edited, first_line, new.count(chr(10)))}"
    )


@tool("edit_file", ToolKind.MUTATING, EditFileArgs)
async def edit_file(args: EditFileArgs, ctx: ToolContext) -> str:
    """Replace exact text in a file: `old` must occur exactly once (or set replace_all=true).
    Read the file first and copy `old` from it character for character. Answers with the
    edited lines."""
    return _edit_file_sync(ctx.workspace, args)


FILE_TOOLS: list[Tool] = [read_file, list_files, glob_files, grep, write_file, edit_file]
"""The workspace file tools, in the order they are offered to the model."""
