"""File tools: read, write, edit and list files inside the workspace.

Every path goes through `paths.open_in_workspace`, which checks it and then opens exactly what
it checked, through directory descriptors, and only if it is a regular file (paths.py says
why). Outputs are capped and say how to get the rest, because a model that receives a 2 GB
log in one tool result learns nothing and pays for all of it; a file over `INLINE_READ_BYTES`
is streamed in bounded pieces, so even a 100 MB file with no newline costs kilobytes of memory,
not the whole line (a smaller one is decoded in one go).
The writing tools replace a file whole through a temporary file and a rename, so a full disk
never leaves half a file, and never write the engine's own `.blitz/` (confined.py).

The read-only tools run on the tool I/O pool (io.py) under a time budget, so a large file
does not stall the kernel's event loop (widget clicks, the interrupt ticker). A small regular
file (`INLINE_READ_BYTES`, by a `stat` that opens nothing) is read inline instead: it takes
microseconds, and the hop to a worker thread and back costs more than the read (about a
millisecond of loop wake-ups a step). The two writing tools run inline: they are quick, and a
write should not land after its turn was cancelled.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, Field

from .confined import refuse_engine_folder, store_content
from .io import Budget, run_io
from .media import describe_binary_kind
from .paths import (
    SKIPPED_DIRS,
    open_for_replace,
    open_in_workspace,
    open_with_folder,
    real_path,
    relative_name,
    resolve_in_workspace,
    special_kind,
)
from .registry import ChangeRecorder, Tool, ToolContext, ToolError, ToolKind, change_recorder, tool

__all__ = [
    "FILE_TOOLS",
    "edit_file",
    "is_binary",
    "list_files",
    "read_file",
    "write_file",
]

DEFAULT_LINE_LIMIT = 2000
MAX_OUTPUT_CHARS = 100_000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 500
SNIFF_BYTES = 8192
READ_PIECE_BYTES = 64 * 1024
"""The most bytes held at once while streaming a file: a line longer than this is read in
pieces, its first MAX_LINE_CHARS characters kept and the rest only counted."""
READ_BUDGET_S = 30.0
INLINE_READ_BYTES = 256 * 1024
"""read_file reads a regular file up to this size on the event loop, without a thread hop."""
"""How long one read_file may stream (a huge file on a slow disk) before it answers."""


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


def is_binary(head: bytes) -> bool:
    """NUL bytes in the first kilobytes: not text, whatever the extension says."""
    return b"\x00" in head


def _describe_binary(name: str, size: int, head: bytes, reason: str) -> str:
    kind = describe_binary_kind(name, head)
    hint = (
        "use view_image to look at it"
        if kind.endswith("image") or kind.startswith("image/")
        else "load it with a suitable library in run_python"
    )
    return f"{name} is a binary file ({size:,} bytes, {kind}; {reason}); its bytes are not shown: {hint}."


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


class _NotTextError(Exception):
    """The file is not UTF-8 text; `position` is the first bad byte."""

    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


@dataclass
class _Line:
    number: int
    text: str
    """At most MAX_LINE_CHARS characters, without the line break."""
    chars: int
    """The whole line's length in characters (without the line break)."""


def _scan_lines(handle: BinaryIO) -> Iterator[_Line]:
    """Every line of a UTF-8 file, in pieces of at most READ_PIECE_BYTES: memory stays bounded
    however long a line is. Raises _NotTextError at the first byte that is not UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    position = number = chars = 0
    kept: list[str] = []
    kept_chars = 0
    previous = ""  # the last character decoded before this piece, to spot a "\r\n" split
    while True:
        piece = handle.readline(READ_PIECE_BYTES)
        buffered = len(decoder.getstate()[0])
        try:
            text = decoder.decode(piece, final=not piece)
        except UnicodeDecodeError as error:
            raise _NotTextError(position - buffered + error.start) from None
        position += len(piece)
        if kept_chars < MAX_LINE_CHARS + 2 and text:
            kept.append(text[: MAX_LINE_CHARS + 2 - kept_chars])
            kept_chars += len(kept[-1])
        chars += len(text)
        ends = text.endswith("\n")
        if ends or (not piece and chars):
            number += 1
            ending = 0
            if ends:
                before = text[-2] if len(text) >= 2 else previous
                ending = 2 if before == "\r" else 1
            length = chars - ending
            yield _Line(number, "".join(kept)[: min(length, MAX_LINE_CHARS)], length)
            kept, kept_chars, chars, previous = [], 0, 0, ""
        elif text:
            previous = text[-1]
        if not piece:
            return


def _split_lines(data: bytes) -> Iterator[_Line]:
    """`_scan_lines` for a file already read whole (at most INLINE_READ_BYTES): one decode and
    one split instead of a decoder call per line; the same lines, lengths and first bad byte."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _NotTextError(error.start) from None
    pieces = text.split("\n")
    last = pieces.pop()  # after the final "\n" (empty) or an unterminated last line
    for number, piece in enumerate(pieces, 1):
        length = len(piece) - 1 if piece.endswith("\r") else len(piece)
        yield _Line(number, piece[: min(length, MAX_LINE_CHARS)], length)
    if last:
        yield _Line(len(pieces) + 1, last[:MAX_LINE_CHARS], len(last))


def _whole_file(data: bytes, offset: int, limit: int) -> str | None:
    """A small text file shown whole, numbered in one pass: what most reads are. None when the
    line-by-line path has something to say (an offset, a page cut, a long line, CRLF line
    ends, bytes that are not UTF-8); its answer for such a file is the same text."""
    if offset or b"\r" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if not lines[-1]:
        lines.pop()  # after the final line break
    if not lines or len(lines) > limit or max(map(len, lines)) > MAX_LINE_CHARS:
        return None
    body = "\n".join([f"{number:>6}\t{line}" for number, line in enumerate(lines, 1)])
    return body if len(body) <= MAX_OUTPUT_CHARS else None


@dataclass
class _Page:
    """The lines of a text file that fit one read_file answer, and where they stopped."""

    lines: list[str]
    first: int
    total: int | None
    """None when counting stopped at the time budget."""
    cut_by_size: bool


def _read_page(lines: Iterator[_Line], offset: int, limit: int, budget: Budget | None) -> _Page:
    """Go through the file's lines once: keep the requested lines, count the rest. `budget`
    None: the lines are in memory already (a small file), so there is no reading to stop."""
    kept: list[str] = []
    size = 0
    total = 0
    cut_by_size = False
    for line in lines:
        total = line.number
        if budget is not None and budget.exhausted() and (len(kept) >= limit or cut_by_size):
            return _Page(lines=kept, first=offset + 1, total=None, cut_by_size=cut_by_size)
        if total <= offset or len(kept) >= limit or cut_by_size:
            continue
        numbered = f"{total:>6}\t{_cap_line(line.text, line.chars)}"
        if kept and size + len(numbered) > MAX_OUTPUT_CHARS:
            cut_by_size = True
            continue
        kept.append(numbered)
        size += len(numbered) + 1
        if budget is not None and budget.exhausted():
            raise ToolError(
                f"reading stopped: out of time (the call's {budget.seconds:g} s budget or the "
                "turn's --timeout); read a smaller part with offset and limit"
            )
    return _Page(lines=kept, first=offset + 1, total=total, cut_by_size=cut_by_size)


def _cap_line(line: str, chars: int | None = None) -> str:
    chars = len(line) if chars is None else chars
    if chars <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]} [... {chars - MAX_LINE_CHARS} more characters cut]"


def _render_page(page: _Page, offset: int, name: str) -> str:
    if page.total == 0:
        return f"{name} is empty (0 lines)."
    if not page.lines:
        raise ToolError(f"offset {offset} is past the end of {name}, which has {page.total} lines")
    last = page.first + len(page.lines) - 1
    body = "\n".join(page.lines)
    if page.first == 1 and last == page.total:
        return body
    of = f"of {page.total}" if page.total is not None else "of more (counting stopped at the time budget)"
    note = f"[lines {page.first}–{last} {of}"
    if page.total is None or last < page.total:
        reason = f" (truncated at {MAX_OUTPUT_CHARS:,} characters); output size cap reached" if page.cut_by_size else ""
        note += f"{reason}; call again with offset={last} to continue"
    return f"{body}\n{note}]"


def _read_opened(fd: int, path: Path, root: Path, args: ReadFileArgs, budget: Budget) -> str:
    """Read the checked, opened regular file `fd` (closed here). `root`: the workspace, resolved."""
    name = relative_name(path, root)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        head = handle.read(SNIFF_BYTES)
        if is_binary(head):
            return _describe_binary(name, size, head, "it contains NUL bytes")
        data = head + handle.read(INLINE_READ_BYTES + 1 - len(head)) if size <= INLINE_READ_BYTES else b""
        if data and len(data) <= INLINE_READ_BYTES:
            whole = _whole_file(data, args.offset, args.limit or DEFAULT_LINE_LIMIT)
            if whole is not None:
                return whole
            lines, watched = _split_lines(data), None
        else:  # a large file (or one that grew past the size since the fstat): streamed
            handle.seek(0)
            lines, watched = _scan_lines(handle), budget
        try:
            page = _read_page(lines, args.offset, args.limit or DEFAULT_LINE_LIMIT, watched)
        except _NotTextError as error:
            return _describe_binary(name, size, head, f"not UTF-8 text at byte {error.position}")
    return _render_page(page, args.offset, name)


def _directory_message(given: str) -> str:
    return f"{given} is a directory; use list_files to see what it holds"


@tool("read_file", ToolKind.READ_ONLY, ReadFileArgs)
async def read_file(args: ReadFileArgs, ctx: ToolContext) -> str:
    """Read a UTF-8 text file from the workspace, with line numbers (a tab follows each).
    Long files come in pages of `limit` lines: the answer ends with "lines X–Y of N; call again
    with offset=..." when there is more. Lines over 2000 characters are cut. Binary files are
    described (size, type), not shown; only regular files are read (not pipes or devices)."""
    budget = Budget(READ_BUDGET_S, ctx.deadline)
    root = real_path(ctx.workspace)
    # The checked open cannot block (a FIFO or a device is refused after a non-blocking open),
    # so it runs here; only reading a large file goes to a worker thread.
    try:
        fd, path = open_in_workspace(root, args.path, real_root=True)
    except ToolError:
        if _is_folder(root, args.path):
            raise ToolError(_directory_message(args.path)) from None
        raise
    try:
        small = os.fstat(fd).st_size <= INLINE_READ_BYTES
    except OSError:
        os.close(fd)
        raise
    if small:
        return _read_opened(fd, path, root, args, budget)
    return await run_io(_read_opened, fd, path, root, args, budget, budget=budget)  # it closes `fd`


def _is_folder(root: Path, given: str) -> bool:
    try:
        return resolve_in_workspace(root, given, real_root=True).is_dir()
    except (OSError, ToolError, ValueError):
        return False


# -- list_files ----------------------------------------------------------------------------


class ListFilesArgs(BaseModel):
    path: str = Field(default=".", description="Directory to list, relative to the workspace root.")


def _list_entry(entry: os.DirEntry[str], folder: int) -> str:
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return f"{entry.name}  (unreadable)"
    if entry.is_symlink():
        try:
            return f"{entry.name} -> {os.readlink(entry.name, dir_fd=folder)}"
        except OSError:
            return f"{entry.name} -> (unreadable link)"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    kind = special_kind(info.st_mode)
    if kind is not None:
        return f"{entry.name}  ({kind}; not read by file tools)"
    return f"{entry.name}  {_format_size(info.st_size)}"


def _list_files_sync(workspace: Path, args: ListFilesArgs) -> str:
    root = workspace.resolve()
    path = resolve_in_workspace(root, args.path)
    if path.exists() and not path.is_dir():
        raise ToolError(f"{args.path} is a file, not a directory; use read_file to read it")
    folder, path = open_in_workspace(root, args.path, directory=True)
    try:
        with os.scandir(folder) as scan:
            entries = list(scan)
        skipped = sorted(e.name for e in entries if e.name in SKIPPED_DIRS)
        shown = [e for e in entries if e.name not in SKIPPED_DIRS]
        # Directories first, then files; each group by name, ignoring case.
        shown.sort(key=lambda e: (not e.is_dir(follow_symlinks=False), e.name.lower(), e.name))
        lines = [_list_entry(e, folder) for e in shown[:MAX_LIST_ENTRIES]]
    finally:
        os.close(folder)
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
    with their sizes, sorted by name. Skips .git, .venv, __pycache__, node_modules,
    .ipynb_checkpoints and .blitz. Use glob to search deeper."""
    return await run_io(_list_files_sync, ctx.workspace, args)


# -- write_file and edit_file --------------------------------------------------------------


class WriteFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    content: str = Field(description="The complete new content of the file (UTF-8 text).")


def _write_file_sync(workspace: Path, args: WriteFileArgs, recorder: ChangeRecorder | None = None) -> str:
    root = workspace.resolve()
    data = args.content.encode("utf-8")
    refuse_engine_folder(root, resolve_in_workspace(root, args.path), args.path)
    fd, folder, path = open_for_replace(root, args.path)
    try:
        old_size = os.fstat(fd).st_size if fd is not None else 0
        written = store_content(folder, path.name, fd, data, _keeper(recorder, path, fd, folder))
    finally:
        if fd is not None:
            os.close(fd)
        os.close(folder)
    if recorder is not None:
        recorder.after_file_change(path, data, written)
    name = relative_name(path, root)
    if fd is not None:
        return f"overwrote {name} ({len(data):,} bytes written; it had {old_size:,} bytes)"
    return f"created {name} ({len(data):,} bytes written)"


def _keeper(recorder: ChangeRecorder | None, path: Path, fd: int | None, folder: int) -> Callable[[], None] | None:
    """The checkpoint's turn, just before the old content is touched: it keeps the file the
    checked descriptor reads (linked aside through the folder's descriptor, or copied)."""
    if recorder is None:
        return None
    return lambda: recorder.before_file_change(path, fd, folder)


@tool("write_file", ToolKind.MUTATING, WriteFileArgs)
async def write_file(args: WriteFileArgs, ctx: ToolContext) -> str:
    """Create a file or replace its whole content; missing parent folders are created. To
    change part of an existing file, prefer edit_file."""
    return _write_file_sync(ctx.workspace, args, change_recorder(ctx))


class EditFileArgs(BaseModel):
    path: str = Field(description="File path relative to the workspace root.")
    old: str = Field(
        description=(
            "Exact text to replace, including whitespace and indentation. It must occur exactly "
            "once unless replace_all is true; include surrounding lines to make it unique."
        )
    )
    new: str = Field(description="Text that replaces `old`.")
    replace_all: bool = Field(default=False, description="Replace every occurrence of `old` instead of exactly one.")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _read_text_for_edit(handle: BinaryIO, given: str) -> str:
    try:
        # newline="" semantics: the text keeps its "\r\n", so edits keep the file's endings.
        return handle.read().decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{given} is not UTF-8 text; edit_file only edits text files") from None


def match_line_endings(text: str, args: EditFileArgs) -> tuple[str, str]:
    """Let a model that writes `\\n` edit a file that uses `\\r\\n`."""
    if "\r\n" in text and "\r\n" not in args.old and args.old not in text:
        return args.old.replace("\n", "\r\n"), args.new.replace("\n", "\r\n")
    return args.old, args.new


def count_error(text: str, old: str, count: int, given: str) -> ToolError:
    if count == 0:
        hint = ""
        stripped = old.strip()
        if stripped and stripped in text:
            line = _line_of(text, text.index(stripped))
            hint = f" (the text without its leading/trailing whitespace occurs at line {line})"
        return ToolError(f"old text not found in {given}{hint}; read the file and copy the text exactly")
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


def _edit_file_sync(workspace: Path, args: EditFileArgs, recorder: ChangeRecorder | None = None) -> str:
    root = workspace.resolve()
    if not args.old:
        raise ToolError("old is empty; use write_file to create or replace a whole file")
    if args.old == args.new:
        raise ToolError("old and new are the same; nothing to change")
    refuse_engine_folder(root, resolve_in_workspace(root, args.path), args.path)
    # One descriptor for the read and the checkpoint: the file edited is the file that was read.
    fd, folder, path = open_with_folder(root, args.path, os.O_RDWR)
    try:
        with os.fdopen(fd, "r+b", closefd=False) as handle:
            text = _read_text_for_edit(handle, args.path)
        old, new = match_line_endings(text, args)
        count = text.count(old)
        if count == 0 or (count > 1 and not args.replace_all):
            raise count_error(text, old, count, args.path)
        first_line = _line_of(text, text.index(old))
        edited = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
        data = edited.encode("utf-8")
        written = store_content(folder, path.name, fd, data, _keeper(recorder, path, fd, folder))
    finally:
        os.close(fd)
        os.close(folder)
    if recorder is not None:
        recorder.after_file_change(path, data, written)
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
    return _edit_file_sync(ctx.workspace, args, change_recorder(ctx))


FILE_TOOLS: list[Tool] = [read_file, list_files, write_file, edit_file]
"""The workspace file tools that read and change files (search.py has glob and grep)."""
