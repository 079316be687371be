"""`%blitz_skills`: the skills the agent can load (docs/skills.md), one line each: its name,
description, where it came from, its size, and whether this session's agent loaded it. A
SKILL.md that was skipped is named with its reason first, so a broken file is never silent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .magics import name_option, usage_errors, usage_line

if TYPE_CHECKING:
    from .magics import BlitzMagics


@magics_class
class SkillsMagics(Magics):
    """Skills, on the main magics' workspace."""

    def __init__(self, shell: Any, main: BlitzMagics) -> None:
        super().__init__(shell)
        self.main = main

    @magic_arguments()
    @argument("-s", "--session", help="session whose loads are shown (default: the notebook's)")
    @line_magic
    def blitz_skills(self, line: str) -> None:
        """List the skills: .blitz/skills, skills/ and ~/.blitz/skills (*/SKILL.md)."""
        try:
            args = parse_argstring(self.blitz_skills, line)
        except (UsageError, ValueError) as exc:
            raise UsageError(f"{exc}\n{usage_line(self.blitz_skills)}") from None
        workspace = self.main.workspace()
        with usage_errors():
            book = workspace.builder.skills()
        session = name_option(args.session, "--session", self.blitz_skills) or self.main._current_session()
        loaded = loaded_skills(workspace, session)
        for problem in book.skipped:
            print(f"⚠ {problem}")
        if not book.skills:
            print("no skills (add one as skills/NAME/SKILL.md with name and description in its front matter)")
            return
        for skill in book.skills.values():
            mark = "loaded" if skill.name in loaded else "not loaded"
            print(f"{skill.name}: {skill.description}")
            print(f"    {skill.source}, {skill.size:,} bytes, {mark} in session {session!r}")


def loaded_skills(workspace: Any, session: str) -> set[str]:
    """Names `load_skill` was called with in the session's transcript (asking creates nothing)."""
    from ..core.history import AssistantMessage

    if session not in workspace.sessions.names():
        return set()
    state = workspace.session(session)
    names: set[str] = set()
    for message in [*state.archive, *state.history]:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.name == "load_skill":
                    name = call.parsed_arguments().get("name")
                    if isinstance(name, str):
                        names.add(name)
    return names
