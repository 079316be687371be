"""`%blitz_review`: a turn's changes with short ids, and reverting or keeping them one by one
(docs/undo.md). The same list as the widget's Review changes panel, on the main magics'
workspace. Async (notebook/transform.py awaits it): reverting a cell edited through the
labextension asks the front end over the bridge. A wrong option is a UsageError with the
usage line; an id the session does not have fails the cell with one line, reverting nothing.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .magics import BlitzCellError, interrupt_is_one_line, name_option, usage_line

if TYPE_CHECKING:
    from ..engine.undo.changes import TurnChanges
    from .magics import BlitzMagics

BY = "%blitz_review"


@magics_class
class ReviewMagics(Magics):
    """Review a turn's changes, on the main magics' workspace."""

    def __init__(self, shell: Any, main: BlitzMagics) -> None:
        super().__init__(shell)
        self.main = main

    @magic_arguments()
    @argument("turn", nargs="?", help="the turn to review, counted from 1 (default: the last that changed something)")
    @argument("-s", "--session", help="session (default: the notebook's)")
    @argument("--revert", nargs="+", metavar="ID", help="revert these changes, leaving the others")
    @argument("--keep", nargs="+", metavar="ID", help="keep these changes as the agent made them")
    @argument("--keep-all", action="store_true", help="keep every change still open: the review is closed")
    @argument("--force", action="store_true", help="with --revert: also revert changes edited since the turn")
    @argument("--diff", action="store_true", help="show each file's diff and each cell's sources")
    @line_magic
    def blitz_review(self, line: str) -> Coroutine[Any, Any, None]:
        """List the changes of a turn (files, cells, variables) with their ids, or revert or
        keep some of them."""
        args = self._parse(line)
        return self._review(args)

    def _parse(self, line: str) -> Any:
        magic = self.blitz_review
        try:
            args = parse_argstring(magic, line)
        except (UsageError, ValueError) as exc:
            raise UsageError(f"{exc}\n{usage_line(magic)}") from None
        actions = [name for name in ("revert", "keep", "keep_all") if getattr(args, name)]
        if len(actions) > 1:
            shown = " and ".join("--" + a.replace("_", "-") for a in actions)
            raise UsageError(f"{shown} exclude each other\n{usage_line(magic)}")
        if args.force and not args.revert:
            raise UsageError(f"--force goes with --revert\n{usage_line(magic)}")
        if args.turn is not None and (args.revert or args.keep):
            raise UsageError(f"a change id names its turn already; drop TURN\n{usage_line(magic)}")
        if args.turn is not None:
            try:
                args.turn = int(args.turn)
            except ValueError:
                args.turn = 0
            if args.turn < 1:
                raise UsageError(f"TURN must be a turn number, 1 or more\n{usage_line(magic)}")
        from ..engine.undo.changes import parse_id

        for change_id in (*(args.revert or ()), *(args.keep or ())):
            if parse_id(change_id) is None:
                raise UsageError(f"{change_id!r} is not a change id (like 2f1)\n{usage_line(magic)}")
        args.session = name_option(args.session, "--session", magic)
        return args

    async def _review(self, args: Any) -> None:
        from ..errors import BlitzError

        workspace = self.main.workspace()
        session = args.session or self.main._current_session()
        try:
            if args.revert:
                with interrupt_is_one_line(f"the revert in session {session!r} stopped part-way"):
                    report = await workspace.revert(args.revert, args.force, session=session, by=BY)
                print(report.text())
                return
            if args.keep or args.keep_all:
                listed = workspace.review.keep(args.keep, session=session, turn=args.turn, by=BY)
            else:
                listed = workspace.changes(args.turn, session=session, by=BY)
        except BlitzError as exc:
            raise BlitzCellError(str(exc)) from None
        print(_with_diffs(listed) if args.diff else listed.text())


def _with_diffs(listed: TurnChanges) -> str:
    """The list, then each change's detail: a file's diff, a cell's sources."""
    from ..engine.undo.changes import CellReview, FileReview

    parts = [listed.text()]
    for change in listed.changes:
        if isinstance(change, FileReview) and change.diff:
            parts.append(f"{change.id}:\n{change.diff.rstrip()}")
        elif isinstance(change, CellReview):
            before = change.source_before if change.source_before is not None else "(no cell)"
            after = change.source_after if change.source_after is not None else "(no cell)"
            parts.append(f"{change.id} before:\n{before}\n{change.id} after:\n{after}")
    return "\n\n".join(parts)
