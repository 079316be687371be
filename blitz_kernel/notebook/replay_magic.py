"""`%blitz_replay [CELL | --turn N] [-s NAME] [-o NAME] [--approve allow|ask|deny]`: run a
recorded turn's tool calls again with no model call and show, per call, whether its result is
the same, changed (with a short diff) or failed now (docs/replay.md).

With no argument: the session's last turn. CELL is the execution count of a `%%blitz` cell this
kernel ran; `--turn N` a turn of the session counted from 1. Mutating calls go through the
approval policy; the notebook cannot answer a question mid-replay, so `ask` follows the
headless policy (denied by default, and the report says so) unless `--approve allow` is given.
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .magics import IPYTHON_NAMES, BlitzCellError, interrupt_is_one_line, name_option, usage_line

if TYPE_CHECKING:
    from .magics import BlitzMagics


@magics_class
class ReplayMagics(Magics):
    """Replay, on the main magics' workspace."""

    def __init__(self, shell: Any, main: BlitzMagics) -> None:
        super().__init__(shell)
        self.main = main

    @magic_arguments()
    @argument("cell", nargs="?", help="execution count of a %%%%blitz cell this kernel ran")
    @argument("--turn", help="turn of the session, counted from 1")
    @argument("-s", "--session", help="session (default: the notebook's)")
    @argument("-o", "--out", help="store the ReplayReport in this variable")
    @argument("--approve", choices=["ask", "allow", "deny"], help="approval policy for mutating calls")
    @line_magic
    def blitz_replay(self, line: str) -> Coroutine[Any, Any, None]:
        """Re-run a recorded turn's tool calls (no model call) and compare their results."""
        usage = usage_line(self.blitz_replay)
        try:
            args = parse_argstring(self.blitz_replay, line)
        except (UsageError, ValueError) as exc:
            raise UsageError(f"{exc}\n{usage}") from None
        if args.cell is not None and args.turn is not None:
            raise UsageError(f"give a CELL or --turn N, not both\n{usage}")
        session = name_option(args.session, "--session", self.blitz_replay) or self.main._current_session()
        out = name_option(args.out, "--out", self.blitz_replay)
        if out is not None and (not out.isidentifier() or keyword.iskeyword(out)):
            raise UsageError(f"--out needs a Python variable name, got {out!r}\n{usage}")
        if out is not None and (out in vars(builtins) or IPYTHON_NAMES.fullmatch(out)):
            raise UsageError(f"--out {out!r} would replace a name Python or IPython uses; choose another\n{usage}")
        turn: int | None = None
        if args.turn is not None:
            turn = whole_number(args.turn, "--turn N", usage)
        if args.cell is not None:
            count = whole_number(args.cell, "CELL", usage)
            if count not in self.main.cell_turns:
                raise UsageError(f"cell {count} ran no %%blitz turn in this kernel; use --turn N\n{usage}")
            session, index = self.main.cell_turns[count]
            turn = index + 1
        return self._replay(session, turn, out, args.approve)

    async def _replay(self, session: str, turn: int | None, out: str | None, approve: Any) -> None:
        from ..errors import BlitzError

        workspace = self.main.workspace()
        try:
            with interrupt_is_one_line(f"the replay of session {session!r} stopped part-way"):
                report = await workspace.turns.replay(session, turn, approve=approve)
        except BlitzError as exc:
            raise BlitzCellError(str(exc)) from None
        print(report.text())
        if out is not None:
            self.shell.user_ns[out] = report  # type: ignore[union-attr]


def whole_number(value: str, what: str, usage: str) -> int:
    """A turn or cell number: a whole number from 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise UsageError(f"{what} must be a whole number, 1 or more; got {value!r}\n{usage}")
    return number
