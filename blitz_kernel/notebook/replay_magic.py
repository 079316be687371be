"""`%blitz_replay [CELL | --turn N | --index I] [--notebook PATH] [-s NAME] [-o NAME]
[--approve allow|ask|deny]`: run a recorded turn's tool calls again with no model call and show,
per call, whether its result is the same, changed (with a short diff) or failed now
(docs/replay.md).

With no argument: the session's last turn. CELL is the execution count of a `%%blitz` cell this
kernel ran; `--turn N` a turn of the session counted from 1. A CELL this kernel did not run, or
`--notebook`/`--index`, replays from the saved notebook's turn record (the cell's output
metadata), so a notebook whose kernel and store are gone can still be replayed. Mutating calls go through the
approval policy; the notebook cannot answer a question mid-replay, so `ask` follows the
headless policy (denied by default, and the report says so) unless `--approve allow` is given.
"""

from __future__ import annotations

import builtins
import json
import keyword
import os
from collections.abc import Coroutine
from pathlib import Path
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
    @argument("cell", nargs="?", help="execution count of a %%%%blitz cell (this kernel's, else the saved notebook's)")
    @argument("--notebook", help="replay from this saved notebook's turn records (default: this kernel's notebook)")
    @argument("--index", help="the cell's position in the saved notebook (from 0), instead of CELL")
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
        notebook = name_option(args.notebook, "--notebook", self.blitz_replay)
        if args.index is not None and (args.cell is not None or args.turn is not None):
            raise UsageError(f"give --index I, CELL or --turn N, one of them\n{usage}")
        if (notebook is not None or args.index is not None) and args.turn is not None:
            raise UsageError(
                f"--turn N replays from the session; --notebook and --index from the saved notebook\n{usage}"
            )
        turn: int | None = None
        if args.turn is not None:
            turn = whole_number(args.turn, "--turn N", usage)
        if args.index is not None:
            if not args.index.isdigit():
                raise UsageError(f"--index must be a cell position, 0 or more; got {args.index!r}\n{usage}")
            return self._from_notebook(saved_notebook(notebook, usage), ("index", int(args.index)), out, args.approve)
        if args.cell is not None:
            count = whole_number(args.cell, "CELL", usage)
            if notebook is not None or count not in self.main.cell_turns:
                why = "" if notebook is not None else f"cell {count} ran no %%blitz turn in this kernel"
                path = saved_notebook(notebook, usage, why)
                return self._from_notebook(path, ("count", count), out, args.approve)
            session, index = self.main.cell_turns[count]
            turn = index + 1
        return self._replay(session, turn, out, args.approve)

    async def _from_notebook(self, path: Path, which: tuple[str, int], out: str | None, approve: Any) -> None:
        """Replay a saved cell's turn records: its kernel and store may be gone."""
        from IPython.display import display

        from ..errors import BlitzError

        records = cell_records(path, which)
        workspace = self.main.workspace()
        reports = []
        for record in records:
            try:
                with interrupt_is_one_line("the replay stopped part-way"):
                    report = await workspace.turns.replay_record(record, approve=approve)
            except BlitzError as exc:
                raise BlitzCellError(str(exc)) from None
            reports.append(report)
            # the report as text, and as data for `blitz run --replay` (it reads the saved outputs)
            display({"text/plain": report.text()}, metadata={REPLAY_KEY: report.model_dump(mode="json")}, raw=True)
        if out is not None:
            self.shell.user_ns[out] = reports[0] if len(reports) == 1 else reports  # type: ignore[union-attr]

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


REPLAY_KEY = "blitz_replay"
"""The output metadata key a replay from a saved notebook puts its `ReplayReport` under."""


def saved_notebook(given: str | None, usage: str, why: str = "") -> Path:
    """The saved notebook to read turn records from: `--notebook`, else the one this kernel
    runs (the front end names it in `JPY_SESSION_NAME`)."""
    lead = f"{why}; " if why else ""
    if given is None:
        named = os.environ.get("JPY_SESSION_NAME", "")
        if not named or not Path(named).is_file():
            raise UsageError(f"{lead}the saved notebook is not known here: use --turn N, or --notebook PATH\n{usage}")
        given = named
    path = Path(given).expanduser()
    if not path.is_file():
        raise UsageError(f"{lead}no notebook at {given}\n{usage}")
    return path


def cell_records(path: Path, which: tuple[str, int]) -> list[dict[str, Any]]:
    """The turn records of one cell of the saved notebook: by position (`index`) or by
    execution count (`count`). What is missing is said in one line."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        raise BlitzCellError(f"{path} is not a notebook that can be read") from None
    if not isinstance(cells, list):
        raise BlitzCellError(f"{path} is not a notebook that can be read")
    kind, number = which
    if kind == "index":
        if number >= len(cells):
            raise BlitzCellError(f"{path} has {len(cells)} cells; there is no cell at index {number}")
        cell, name = cells[number], f"cell {number} of {path.name}"
    else:
        matches = [c for c in cells if isinstance(c, dict) and c.get("execution_count") == number]
        if not matches:
            raise BlitzCellError(f"{path.name} has no cell that ran as In[{number}] (saved with its outputs?)")
        cell, name = matches[0], f"In[{number}] of {path.name}"
    outputs = cell.get("outputs") if isinstance(cell, dict) else None
    records = [
        o["metadata"]["blitz"]
        for o in outputs or []
        if isinstance(o, dict) and isinstance(o.get("metadata"), dict) and isinstance(o["metadata"].get("blitz"), dict)
    ]
    if not records:
        raise BlitzCellError(f"{name} has no turn record in its saved outputs: nothing to replay")
    return records


def whole_number(value: str, what: str, usage: str) -> int:
    """A turn or cell number: a whole number from 1."""
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise UsageError(f"{what} must be a whole number, 1 or more; got {value!r}\n{usage}")
    return number
