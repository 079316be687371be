"""`%blitz_undo` and `%blitz_rewind N` (docs/interface.md): undo what the last turn(s) did.

Their own magics class, sharing the workspace (and the current session) of the main
`BlitzMagics`. Both are async (notebook/transform.py awaits them): an undo of a cell edited
through the labextension asks the front end over the bridge, which needs the kernel's loop.
The report is one short block; a wrong option is a UsageError with the usage line.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .magics import BlitzCellError, interrupt_is_one_line, name_option, usage_line

if TYPE_CHECKING:
    from .magics import BlitzMagics


def _options(magic: Any) -> Any:
    """The options both magics share."""
    for decorate in (
        argument("-s", "--session", help="session (default: the notebook's)"),
        argument("--force", action="store_true", help="restore items changed again since the agent changed them"),
        argument(
            "--conversation-only", action="store_true", help="roll back the conversation; leave files, cells, variables"
        ),
        argument("--files-only", action="store_true", help="restore files, cells and variables; keep the conversation"),
    ):
        magic = decorate(magic)
    return magic


@magics_class
class UndoMagics(Magics):
    """Undo and rewind, on the main magics' workspace."""

    def __init__(self, shell: Any, main: BlitzMagics) -> None:
        super().__init__(shell)
        self.main = main

    def _parse(self, magic: Any, line: str) -> Any:
        try:
            args = parse_argstring(magic, line)
        except (UsageError, ValueError) as exc:
            raise UsageError(f"{exc}\n{usage_line(magic)}") from None
        if args.files_only and args.conversation_only:
            raise UsageError(f"--files-only and --conversation-only exclude each other\n{usage_line(magic)}")
        args.session = name_option(args.session, "--session", magic)
        return args

    @magic_arguments()
    @_options
    @line_magic
    def blitz_undo(self, line: str) -> Coroutine[Any, Any, None]:
        """Undo the last turn: files, notebook cells and variables as they were before it, and
        (unless --files-only) the turn's part of the conversation."""
        args = self._parse(self.blitz_undo, line)
        return self._undo(args, 1)

    @magic_arguments()
    @argument("turns", help="how many of the last turns to undo, newest first")
    @_options
    @line_magic
    def blitz_rewind(self, line: str) -> Coroutine[Any, Any, None]:
        """Undo the last N turns, newest first (options as %blitz_undo)."""
        args = self._parse(self.blitz_rewind, line)
        try:
            turns = int(args.turns)
        except ValueError:
            turns = 0
        if turns < 1:
            raise UsageError(
                f"N must be a whole number of turns, 1 or more; got {args.turns!r}\n{usage_line(self.blitz_rewind)}"
            )
        return self._undo(args, turns)

    async def _undo(self, args: Any, turns: int) -> None:
        from ..errors import BlitzError

        workspace = self.main.workspace()
        session = args.session or self.main._current_session()
        if session not in workspace.sessions.names():  # asking must not create it
            print(f"nothing to undo in session {session!r}: it has no turns")
            return
        try:
            with interrupt_is_one_line(f"the undo of session {session!r} stopped part-way"):
                report = await workspace.undo(
                    session,
                    turns=turns,
                    files=not args.conversation_only,
                    conversation=not args.files_only,
                    force=args.force,
                )
        except BlitzError as exc:
            raise BlitzCellError(str(exc)) from None
        print(report.text())
