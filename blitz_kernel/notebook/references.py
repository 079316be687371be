"""`@` references in a `%%blitz` prompt: point the agent at a variable, a cell, the last
error, a file or the last figure, and it arrives as an attachment ahead of the prompt text
(`core/attachments.py`; for users: docs/magics.md). The grammar is `parse_references`'s.

Resolving needs the kernel: `PromptReferences` reads the shell's namespace and history, the
cell log (`cell_log.py`: errors and the last image), the notebook bridge when a front end is
connected (a cell's live outputs), and the workspace for files. Descriptions and file reads
are the tools' own (`describe_variable`, `read_file`), so the agent sees an attachment exactly
as it would see the tool's answer, confinement to the workspace included.
"""

from __future__ import annotations

import asyncio
import difflib
import math
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.attachments import Attachment, AttachmentKind
from ..core.history import ImagePart
from ..errors import BlitzError

KEYWORDS = ("cell", "err", "fig", "file:", "var:")
TRAILING_PUNCTUATION = ".,;:!?)]}>'\"`"
_IDENT = r"[^\W\d]\w*"
_NAME = rf"{_IDENT}(?:\.{_IDENT})*"
_REFERENCE = re.compile(
    rf"""
    (?<![\w.@]) @ (?:
        (?P<escape>@)
      | cell (?: : (?P<cell>-?\d+) )? (?! \w | :[^\s.,;!?)\]}}>'"`] )
      | cell : (?P<badcell>\S+)
      | (?P<word>err|fig) (?!\w)
      | file: (?: "(?P<quoted>[^"\n]+)" | (?P<path>\S*) )
      | var: (?P<var>{_NAME})
      | (?P<name>{_NAME})
    )
    """,
    re.VERBOSE,
)
_CODE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`", re.DOTALL)
"""Fenced blocks (to their closing fence, or the end) and inline code spans: left alone."""


REFERENCE_BUDGET_S = 10.0
"""How long resolving a prompt's references may take (less when the turn's --timeout is
shorter): a slow disk or a huge variable must not hold the cell before the turn starts."""
MAX_FILE_BYTES = 10_000_000
"""A larger `@file:` is refused: an attachment shows at most the first 100,000 characters, and
streaming the rest only to count its lines cost 30 s for a 200 MB file."""
BAD_CELL = "bad"


class UnknownReferenceError(BlitzError):
    """A reference in the prompt names nothing; the cell fails before any model call."""


class ReferenceTimeoutError(BlitzError):
    """Resolving the references took longer than their budget; nothing was sent."""


@dataclass(frozen=True)
class Reference:
    """One reference as written: `kind` and `target` say what to fetch, `name` is the chip."""

    kind: AttachmentKind
    name: str
    """As the prompt wrote it, without the `@`: `df`, `cell:-2`, `err`, `file:a.csv`."""
    target: str
    """The variable's name, the file's path, or the cell's count (`-1` relative, `7` absolute)."""


@dataclass(frozen=True)
class ParsedPrompt:
    text: str
    """The prompt as the model reads it: references kept, each `@@` made a single `@`."""
    references: list[Reference]


def parse_references(prompt: str) -> ParsedPrompt:
    """Split `prompt` into its text and its references.

    Grammar (everything else is prompt text):

        reference := "@" target
        target    := "cell" [":" ["-"] DIGITS]     previous code cell | execution count N | N back
                   | "err"                         the last exception's traceback
                   | "fig"                         the last image a cell displayed
                   | "file:" PATH                  a workspace file, as read_file reads it
                   | "var:" NAME                   a variable, also one called cell/err/fig
                   | NAME                          a variable (describe_variable's description)
        NAME      := IDENT ("." IDENT)*            Python identifiers; `df.columns` is an attribute
        PATH      := '"' any but '"' '"' | non-space characters, without trailing . , ; : ! ? ) ] } > ' " `

    - An `@` starts a reference only at the start of the prompt or after a character that is not
      a word character, `.` or `@`. So `me@example.com` and `x.@y` are text; `(@df)`, `@df,`
      and `@df.` are the reference `df` followed by punctuation.
    - `cell`, `err` and `fig` are words of the grammar and win over variables of those names
      (`@cells` or `@error` are ordinary names); `@var:fig` names the variable `fig`.
    - `@cell` is the code cell run just before this one (execution count one less), `@cell:-2`
      two before, `@cell:7` the cell run as In[7]. Counts, not positions: in a notebook run top
      to bottom they agree.
    - `@cell:` followed by anything but a count (`@cell:abc`) names nothing: the cell fails.
    - `@@` where a reference could start is a literal `@` and starts nothing: `@@property`
      sends `@property`. (Elsewhere, as in `a@@b`, it is left as written.)
    - Inside `code spans` and ``` fenced blocks nothing is a reference and nothing is changed, so
      pasted code with decorators needs no escaping.
    - The same reference twice attaches once. A reference that names nothing fails the cell with
      one `UsageError` line that lists what could be meant, before any model is called.
    """
    pieces: list[str] = []
    references: dict[str, Reference] = {}
    position = 0
    for code in _CODE.finditer(prompt):
        pieces.append(_scan(prompt[position : code.start()], references))
        pieces.append(code.group())
        position = code.end()
    pieces.append(_scan(prompt[position:], references))
    return ParsedPrompt("".join(pieces), list(references.values()))


def _scan(text: str, found: dict[str, Reference]) -> str:
    """Collect the references in `text` (outside code); returns it with `@@` made `@`."""
    out: list[str] = []
    position = 0
    for match in _REFERENCE.finditer(text):
        if match.group("escape"):
            out.append(text[position : match.start()] + "@")
            position = match.end()
            continue
        reference, end = _reference(match)
        out.append(text[position:end])
        position = end
        found.setdefault(reference.name, reference)
    out.append(text[position:])
    return "".join(out)


def _reference(match: re.Match[str]) -> tuple[Reference, int]:
    """The reference a match stands for, and where its text ends (a path gives back trailing
    punctuation to the sentence)."""
    groups = match.groupdict()
    if groups["word"]:
        kind: AttachmentKind = "error" if groups["word"] == "err" else "figure"
        return Reference(kind, groups["word"], groups["word"]), match.end()
    if groups["quoted"]:
        return Reference("file", f"file:{groups['quoted']}", groups["quoted"]), match.end()
    if groups["path"] is not None:
        path = groups["path"].rstrip(TRAILING_PUNCTUATION)
        end = match.start("path") + len(path)
        if path:
            return Reference("file", f"file:{path}", path), end
        return Reference("file", "file:", ""), end
    if groups["var"]:
        return Reference("variable", f"var:{groups['var']}", groups["var"]), match.end()
    if groups["name"]:
        return Reference("variable", groups["name"], groups["name"]), match.end()
    if groups["badcell"] is not None:
        return Reference("cell", f"cell:{groups['badcell']}", BAD_CELL), match.end()
    count = groups["cell"] or "-1"
    return Reference("cell", f"cell:{groups['cell']}" if groups["cell"] else "cell", count), match.end()


# -- resolving against the kernel ---------------------------------------------------------


class _Unresolved(Exception):
    """One reference that names nothing; the message says why and what could be meant."""


@dataclass
class PromptReferences:
    """Resolves references against an IPython shell and a workspace directory."""

    shell: Any
    workspace: Path
    variable_values: bool = True
    """`privacy.variables = "full"`; "schema" describes `@name` without its values."""
    timeout_s: float | None = None
    """The turn's --timeout: references get the sooner of it and REFERENCE_BUDGET_S."""
    _deadline: float | None = field(default=None, init=False, repr=False)

    async def resolve(self, prompt: str) -> tuple[str, list[Attachment]]:
        """The prompt text for the model and its attachments, in the order written.
        Raises UnknownReferenceError naming every reference that names nothing, and
        ReferenceTimeoutError when they cannot be resolved in time (the file reads stop)."""
        parsed = parse_references(prompt)
        if not parsed.references:
            return parsed.text, []
        budget = REFERENCE_BUDGET_S
        if self.timeout_s is not None and math.isfinite(self.timeout_s):
            budget = min(budget, self.timeout_s)
        self._deadline = time.monotonic() + budget
        try:
            async with asyncio.timeout(budget):
                return await self._resolve(parsed)
        except TimeoutError:
            raise ReferenceTimeoutError(
                f"the @ references took longer than {budget:g} s to resolve (the budget for references, "
                "or the turn's --timeout); nothing was sent"
            ) from None

    async def _resolve(self, parsed: ParsedPrompt) -> tuple[str, list[Attachment]]:
        attachments: list[Attachment] = []
        problems: list[str] = []
        for reference in parsed.references:
            try:
                attachments.append(await self._attachment(reference))
            except _Unresolved as problem:
                problems.append(f"@{reference.name}: {problem}")
        if problems:
            raise UnknownReferenceError(
                "; ".join(problems) + " (write @@ for a literal @; references: @name, @cell, "
                "@cell:N, @cell:-N, @err, @fig, @file:path, @var:name)"
            )
        return parsed.text, attachments

    async def _attachment(self, reference: Reference) -> Attachment:
        if reference.kind == "variable":
            return Attachment(kind="variable", name=reference.name, text=await self._variable(reference.target))
        if reference.kind == "cell":
            return Attachment(kind="cell", name=reference.name, text=await self._cell(reference.target))
        if reference.kind == "error":
            return Attachment(kind="error", name=reference.name, text=self._error())
        if reference.kind == "file":
            return Attachment(kind="file", name=reference.name, text=await self._file(reference.target))
        caption, image = self._figure()
        return Attachment(kind="figure", name=reference.name, text=caption, image=image)

    # -- variables ---------------------------------------------------------------------------

    def _tool_context(self) -> Any:
        from ..tools.registry import ToolContext
        from .kernel_context import IPythonKernelContext

        return ToolContext(
            workspace=self.workspace,
            kernel=IPythonKernelContext(self.shell),
            variable_values=self.variable_values,
            deadline=self._deadline,
        )

    def _visible_names(self) -> list[str]:
        hidden = getattr(self.shell, "user_ns_hidden", {})
        ns = self.shell.user_ns
        return sorted(n for n in ns if not n.startswith("_") and (n not in hidden or ns[n] is not hidden[n]))

    async def _variable(self, name: str) -> str:
        from ..tools.registry import ToolError
        from ..tools.variables import DescribeVariableArgs, describe_variable

        root = name.split(".")[0]
        if root not in self._visible_names():
            raise _Unresolved(f"no variable named {root!r}" + _close(root, self._visible_names()))
        try:
            return str(await describe_variable.func(DescribeVariableArgs(name=name), self._tool_context()))
        except ToolError as error:
            raise _Unresolved(str(error)) from None

    # -- cells ---------------------------------------------------------------------------------

    def _count_of(self, spec: int) -> int:
        """The execution count a `@cell` spec means. While a cell runs, IPython has already
        counted it: the running `%%blitz` cell is In[execution_count - 1]."""
        now = int(self.shell.execution_count) - 1
        count = now + spec if spec < 0 else spec
        if spec == 0 or not 1 <= count < now:
            ran = f"cells run so far are In[1]..In[{now - 1}]" if now > 1 else "no cell has run before this one"
            raise _Unresolved(f"no such cell ({ran})")
        return count

    async def _cell(self, spec: str) -> str:
        if spec == BAD_CELL:
            raise _Unresolved("expected @cell, @cell:N or @cell:-N (N a number)")
        count = self._count_of(int(spec))
        live = await self._live_cell(count)
        if live is not None:
            return live
        history = self.shell.user_ns.get("_ih") or []
        if count >= len(history):
            raise _Unresolved(f"In[{count}] is not in the kernel's history")
        return self._history_cell(count, str(history[count]))

    async def _live_cell(self, count: int) -> str | None:
        """The cell with execution count `count` as the open notebook shows it, outputs and
        all; None without a connected front end or when no cell shows that count."""
        from ..tools.notebook import (
            OUTPUT_CHARS_SENT,
            NotebookRequestError,
            NotebookUnavailableError,
        )
        from .bridge import current

        bridge = current()
        if bridge is None or not bridge.connected:
            return None
        try:
            listing = await bridge.request("list_cells", {})
            indices = [c["index"] for c in listing.get("cells", []) if c.get("execution_count") == count]
            if not indices:
                return None
            result = await bridge.request(
                "read_cells",
                {
                    "indices": indices[-1:],
                    "include_outputs": True,
                    "include_images": False,
                    "max_output_chars": OUTPUT_CHARS_SENT,
                },
            )
        except (NotebookUnavailableError, NotebookRequestError):
            return None
        cells = result.get("cells") or []
        return _format_cell(cells[0], "live from the open notebook") if cells else None

    def _history_cell(self, count: int, source: str) -> str:
        """Without a front end: the source, its result (`Out`) and its error (cell log); what
        it printed or displayed is not kept anywhere in the kernel, and the text says so."""
        from . import cell_log

        outputs: list[dict[str, Any]] = []
        out = self.shell.user_ns.get("Out", {})
        if count in out:
            outputs.append(
                {
                    "output_type": "execute_result",
                    "text": _safe_repr(out[count]),
                    "mime_types": ["text/plain"],
                    "images": [],
                }
            )
        log = cell_log.current()
        error = log.errors.get(count) if log is not None else None
        if error is not None:
            outputs.append(
                {"output_type": "error", "ename": error.ename, "evalue": error.evalue, "traceback": error.traceback}
            )
        cell = {"index": None, "cell_type": "code", "source": source, "execution_count": count, "outputs": outputs}
        return _format_cell(cell, "from the kernel's history: printed output and displays are not kept")

    # -- the last error, files, the last figure --------------------------------------------------

    def _error(self) -> str:
        from . import cell_log

        log = cell_log.current()
        if log is not None and log.last_error is not None:
            where = f"In[{log.last_error.execution_count}]" if log.last_error.execution_count else "a cell"
            return f"the last error, raised in {where}:\n{log.last_error.traceback}"
        error = getattr(sys, "last_value", None)
        if isinstance(error, BaseException):
            return f"the last error:\n{cell_log.format_error(self.shell, error)}"
        raise _Unresolved("no cell has raised an error in this kernel yet")

    async def _file(self, path: str) -> str:
        from ..tools.files import ReadFileArgs, read_file
        from ..tools.registry import ToolError

        if not path:
            raise _Unresolved('give a path: @file:data/input.csv or @file:"name with spaces.txt"')
        size = _file_size(self.workspace, path)
        if size is not None and size > MAX_FILE_BYTES:
            raise _Unresolved(
                f"{size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit for an attachment; "
                "ask the agent to read it (read_file pages through a file)"
            )
        try:
            return str(await read_file.func(ReadFileArgs(path=path), self._tool_context()))
        except ToolError as error:
            raise _Unresolved(str(error)) from None

    def _figure(self) -> tuple[str, ImagePart]:
        from ..tools.images import MAX_IMAGE_BYTES
        from . import cell_log

        log = cell_log.current()
        shown = log.last_image if log is not None else None
        if shown is None:
            raise _Unresolved("no figure or image has been shown since blitz_kernel was loaded")
        size = len(shown.data_base64) * 3 // 4
        if size > MAX_IMAGE_BYTES:
            raise _Unresolved(f"the last image is {size:,} bytes, over the {MAX_IMAGE_BYTES:,}-byte limit")
        where = f"In[{shown.execution_count}]" if shown.execution_count else "a cell"
        caption = f"the last figure shown ({shown.media_type}, displayed by {where})"
        return caption, ImagePart(media_type=shown.media_type, data_base64=shown.data_base64)


def _file_size(workspace: Path, path: str) -> int | None:
    """The size of the workspace file `path` names; None when it is not one (read_file then
    says why, confinement to the workspace included)."""
    from ..tools.paths import resolve_in_workspace
    from ..tools.registry import ToolError

    try:
        target = resolve_in_workspace(workspace.resolve(), path)
        return target.stat().st_size if target.is_file() else None
    except (OSError, ValueError, ToolError):
        return None


def _close(word: str, names: list[str]) -> str:
    """`; did you mean …` from the variables and the grammar's own words."""
    words = [*names, "cell", "err", "fig"]
    close = difflib.get_close_matches(word, words, n=5, cutoff=0.6)
    if close:
        return "; did you mean " + ", ".join(f"@{c}" for c in close) + "?"
    some = ", ".join(names[:8])
    return f"; variables: {some}" if some else "; no user variables yet"


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as error:
        return f"<repr failed: {type(error).__name__}: {error}>"


def _format_cell(cell: dict[str, Any], origin: str) -> str:
    """A cell as notebook_read shows one (same caps, same output lines), with where it came from."""
    # The notebook tool's formatting helpers: an attachment must read like the tool's answer.
    from ..tools.notebook import MAX_SOURCE_CHARS, agent_note, cap_cell_text, output_lines

    count = cell.get("execution_count")
    index = cell.get("index")
    header = f"In[{count}]" + (f" (cell {index} of the notebook)" if index is not None else "") + f", {origin}"
    if agent_note(cell):
        header += f"; {agent_note(cell)}"
    return "\n".join(
        [
            header,
            cap_cell_text(str(cell.get("source", "")), MAX_SOURCE_CHARS),
            *output_lines(index if index is not None else 0, cell.get("outputs", [])),
        ]
    )
