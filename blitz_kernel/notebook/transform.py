"""The `await` input transformer (docs/architecture.md).

A cell magic cannot be `async def`, but it may return a coroutine. This transformer turns the
line IPython generates for a `%%blitz` cell into `await get_ipython().run_cell_magic(...)`, so
ipykernel (≥ 7.4) runs the cell as top-level async code on its own loop. While the cell awaits,
the kernel still dispatches widget comm messages, which is how clicks reach a running turn.
"""

from __future__ import annotations

import re

ASYNC_MAGICS = (
    "blitz",
    "blitz_btw",
    "blitz_compact",
    "blitz_mcp",
    "blitz_undo",
    "blitz_rewind",
    "blitz_truncate",
    "blitz_review",
    "blitz_replay",
)
_MAGIC_CALL = re.compile(r"^(?P<indent>\s*)get_ipython\(\)\.run_(?:cell|line)_magic\('(?P<name>[A-Za-z_]+)',")


def await_blitz_cells(lines: list[str]) -> list[str]:
    """Prefix each generated call of our async magics with `await`: the cell magic is the
    cell's first line; line magics may stand on any line of their own."""
    return [_awaited(line) for line in lines]


def _awaited(line: str) -> str:
    match = _MAGIC_CALL.match(line)
    if match is None or match.group("name") not in ASYNC_MAGICS:
        return line
    indent = match.group("indent")
    return f"{indent}await {line[len(indent) :]}"


_BTW_LINE = re.compile(r"^(?P<indent>\s*)%blitz_btw(?:\s+(?P<question>.*?))?\s*$")


def keep_btw_questions(lines: list[str]) -> list[str]:
    """A side question naturally ends with "?", which IPython would read as a help request
    (`%blitz_btw what did we pick?` → "Object `pick` not found"). Before IPython's own
    transforms run, turn such a line into the magic call it means. Not inside a cell magic's
    body: there it is text (a `%%blitz` prompt may mention the magic)."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines
    return [_btw_call(line) for line in lines]


def _btw_call(line: str) -> str:
    match = _BTW_LINE.match(line)
    if match is None:
        return line
    question = match.group("question") or ""
    ending = "\n" if line.endswith("\n") else ""
    return f"{match.group('indent')}get_ipython().run_line_magic('blitz_btw', {question!r}){ending}"
