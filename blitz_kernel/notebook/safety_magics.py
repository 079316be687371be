"""The safety magics: `%blitz_trust` and `%blitz_audit`.

They share the main `BlitzMagics`' workspace (one Workspace per kernel), so trusting here
applies to the next `%%blitz` there. Kept apart from magics.py so that module stays about
turns and sessions.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from .magics import name_option, positive_option, usage_line

if TYPE_CHECKING:
    from ..engine.safety.audit import AuditRecord
    from .magics import BlitzMagics

ARGUMENT_COLUMN = 60
"""Characters of a call's arguments shown in the audit table (the record keeps up to 200)."""


@magics_class
class SafetyMagics(Magics):
    """`%blitz_trust` and `%blitz_audit`, on the workspace of `main`."""

    def __init__(self, shell: Any, main: BlitzMagics) -> None:
        super().__init__(shell)
        self._main = main

    @magic_arguments()
    @argument("--revoke", action="store_true", help="hold this workspace's settings back again")
    @line_magic
    def blitz_trust(self, line: str) -> None:
        """Show what this workspace's own config file asks for (permissive approvals,
        api_base, hooks, MCP servers) and trust it; `--revoke` undoes that. Trust is kept in
        ~/.blitz/trusted.toml with a hash of exactly these settings: a change needs trust again."""
        from ..config.loading import flatten_held, redact_url

        args = self._main._parse(self.blitz_trust, line)
        workspace = self._main.workspace()
        if args.revoke:
            removed = workspace.revoke_trust()
            state = workspace.trust
            if removed:
                print(f"trust revoked for {workspace.root}: its own settings are held back from the next turn")
            else:
                print(f"{workspace.root} was not trusted in ~/.blitz/trusted.toml; nothing to revoke")
            if state.trusted:  # e.g. BLITZ_TRUST_WORKSPACE still names it
                print(f"it is still trusted through the {state.via}")
            return
        state = workspace.trust
        if not state.held:
            source = state.source or "no blitz.toml or [tool.blitz]"
            print(f"{workspace.root} ({source}) asks for nothing that needs trust; nothing to do")
            return
        print(f"{state.source} asks for:")
        for key, value in flatten_held(state.held).items():
            shown = redact_url(value) if key.endswith("api_base") and isinstance(value, str) else value
            print(f"  {key} = {json.dumps(shown, default=str)}")
        if state.trusted:
            print(f"already trusted (through the {state.via})")
            return
        workspace.trust_workspace()
        print(f"trusted {workspace.root}: these apply from the next turn (undo with %blitz_trust --revoke)")

    @magic_arguments()
    @argument("-s", "--session", help="session (default: the notebook's)")
    @argument("--last", help="only the last N calls")
    @argument("--tool", help="only calls of this tool")
    @line_magic
    def blitz_audit(self, line: str) -> None:
        """Every tool call of a session, its sub-agents' included: time, turn, agent, tool,
        arguments (shortened), the decision, who made it (user, policy, always, headless
        default, hook, mode…) and how it ended."""
        args = self._main._parse(self.blitz_audit, line)
        session = name_option(args.session, "--session", self.blitz_audit) or self._main._current_session()
        tool = name_option(args.tool, "--tool", self.blitz_audit)
        last = positive_option(int, args.last, "--last") if args.last is not None else None
        workspace = self._main.workspace()
        if tool is not None and tool not in workspace.tools and not tool.startswith("mcp__"):
            raise UsageError(f"--tool: no tool named {tool!r}\n{usage_line(self.blitz_audit)}")
        if session not in workspace.sessions.names():  # asking must not create it
            print(f"session {session!r}: no tool calls yet")
            return
        rows = [r for r in workspace.audit(session) if tool is None or r.tool == tool]
        if last is not None:
            rows = rows[-last:]
        if not rows:
            print(f"session {session!r}: no tool calls yet" + (f" of {tool}" if tool else ""))
            return
        print(audit_table(rows))


def audit_table(rows: list[AuditRecord]) -> str:
    """The audit rows as an aligned text table (local time)."""
    header = ("time", "turn", "agent", "tool", "arguments", "decision", "decided by", "status")
    lines = [
        (
            row.time.astimezone().strftime("%H:%M:%S"),
            str(row.turn + 1),
            row.agent or "-",  # a sub-agent's calls are in its caller's trail, by its name
            row.tool,
            _shorten(row.arguments, ARGUMENT_COLUMN),
            row.decision,
            row.decided_by + (f" ({row.caller})" if row.caller else ""),
            row.status,
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [header, *lines]
    )


def _shorten(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"
