"""The `await` input transformer (KERNEL.md).

A cell magic cannot be `async def`, but it may return a coroutine. This transformer turns the
line IPython generates for a `%%blitz` cell into `await get_ipython().run_cell_magic(...)`, so
ipykernel (≥ 7.4) runs the cell as top-level async code on its own loop. While the cell awaits,
the kernel still dispatches widget comm messages, which is how clicks reach a running turn.
"""

from __future__ import annotations

import re

ASYNC_CELL_MAGICS = ("blitz",)
_CELL_MAGIC_LINE = re.compile(r"^get_ipython\(\)\.run_cell_magic\('(?P<name>[A-Za-z_]+)',")


def await_blitz_cells(lines: list[str]) -> list[str]:
    """Prefix the generated cell-magic call with `await` for our async cell magics."""
    if not lines:
        return lines
    match = _CELL_MAGIC_LINE.match(lines[0])
    if match is None or match.group("name") not in ASYNC_CELL_MAGICS:
        return lines
    return ["await " + lines[0], *lines[1:]]
