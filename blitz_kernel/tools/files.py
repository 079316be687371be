"""File tools: read, write, edit and list files inside the workspace.

Every path goes through `paths.resolve_in_workspace`. Outputs are capped and say how to get
the rest, because a model that receives a 2 GB log in one tool result learns nothing and
pays for all of it.

The read-only tools read in a worker thread, so a large file does not stall the kernel's
event loop (widget clicks, the interrupt ticker). The two writing tools run inline: they are
quick, and a write should not land after its turn was cancelled.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from .media import describe_binary_kind
from .paths import SKIPPED_DIRS, missing_file_error, relative_name, resolve_in_workspace
from .registry import Tool, ToolContext, ToolError, ToolKind, tool

__all__ = [
    "FILE_TOOLS",
    "edit_file",
    "list_files",
    "read_file",
    "write_file",
]

DEFAULT_LINE_LIMIT = 2000
MAX_OUTPUT_CHARS = 100_000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 500
SNIFF_BYTES = 8192


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


def read_head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(SNIFF_BYTES)


def is_binary(head: bytes) -> bool:
    return b"\x00" in head


def _describe_binary(path: Path, root: Path, head: bytes, reason: str) -> str:
    kind = describe_binary_kind(path.name, head)
    size = path.stat().st_size
    hint = (
        "use view_image to look at it"
        if kind.endswith("image") or kind.startswith("image/")
        else "load it with a suitable library in run_python"
    )
    return (
        f"{relative_name(path, root)} is a binary file ({size:,} bytes, {kind}; {reason}); "
        f"its bytes are not shown: {hint}."
    )



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
        raise missing_file_error(path, args.path)
    head = read_head(path)
    if is_binary(head):
        return _describe_binary(path, root, head, "it contains NUL bytes")
    try:
        page = _read_page(path, args.offset, args.limit or DEFAULT_LINE_LIMIT)
    except UnicodeDecodeError as error:
        return _describe_binary(path, root, head, f"not UTF-8 text at byte {error.start}")
    return _render_page(page, args.offset, relative_name(path, root))


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
        raise missing_file_error(path, args.path)
    if not path.is_dir():
        raise ToolError(f"{args.path} is a file, not a directory; use read_file to read it")
    with os.scandir(path) as scan:
        entries = list(scan)
    skipped = sorted(e.name for e in entries if e.name in SKIPPED_DIRS)
    shown = [e for e in entries if e.name not in SKIPPED_DIRS]
    # Directories first, then files; each group by name, ignoring case.
    shown.sort(key=lambda e: (not e.is_dir(follow_symlinks=False), e.name.lower(), e.name))
    lines = [_list_entry(e) for e in shown[:MAX_LIST_ENTRIES]]
    header = f"{relative_name(path, root)}/ ({len(shown)} entries)"
    if not shown:
        header = f"{relative_name(path, root)}/ is empty"
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
    name = relative_name(path, root)
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
        raise missing_file_error(path, given)
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
        f"edited {relative_name(path, root)}: replaced {replaced} (first at line {first_line})\n"
        f"{_snippet(edited, first_line, new.count(chr(10)))}"
    )


@tool("edit_file", ToolKind.MUTATING, EditFileArgs)
async def edit_file(args: EditFileArgs, ctx: ToolContext) -> str:
    """Replace exact text in a file: `old` must occur exactly once (or set replace_all=true).
    Read the file first and copy `old` from it character for character. Answers with the
    edited lines."""
    return _edit_file_sync(ctx.workspace, args)


FILE_TOOLS: list[Tool] = [read_file, list_files, write_file, edit_file]
"""The workspace file tools that read and change files (search.py has glob and grep)."""
