"""The root agent's instructions (ENG-02, ENG-03): the agent's prompt, then project memory,
then the reply language and what the model can see.

Project memory is what a team writes down once instead of repeating in every prompt:
`~/.blitz/AGENTS.md` (the user's own habits), then `AGENTS.md` and `BLITZ.md` at the workspace
root (the project's). Each is marked with where it came from, in that fixed order, so the most
specific comes last and a reader (the model, or the user in `%blitz_session show`) can tell
which said what. Files are read at every turn: an edit counts from the next turn (ENG-06).
Sub-agents get their own instructions only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...core.text import shorten

MEMORY_FILES = ("AGENTS.md", "BLITZ.md")
"""Project memory at the workspace root, in the order they are added."""
MAX_MEMORY_CHARS = 20_000
"""Per file: a memory file is guidance, not a data dump; a longer one is cut with a note."""

VISION_NOTE = "## Images\nYou can see images: `view_image` shows you an image file or a figure a tool produced."


@dataclass(frozen=True)
class MemoryFile:
    """One project-memory file that was added to the instructions."""

    label: str
    """Where it came from, as the instructions and `%blitz_session show` name it."""
    text: str


def memory_files(workspace: Path, home: Path | None) -> list[MemoryFile]:
    """The memory files that exist and are readable, in their fixed order. A file that cannot
    be read as UTF-8 text is skipped (it would make every turn fail otherwise)."""
    candidates = [((home if home is not None else Path.home()) / ".blitz" / "AGENTS.md", "~/.blitz/AGENTS.md")]
    candidates += [(workspace / name, name) for name in MEMORY_FILES]
    found = []
    for path, label in candidates:
        try:
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text:
            found.append(MemoryFile(label, shorten(text, MAX_MEMORY_CHARS)))
    return found


def root_instructions(agent_prompt: str, memory: list[MemoryFile], *, language: str | None, vision: bool) -> str:
    """ENG-02/03: the agent's prompt + project memory + reply language + the image note."""
    parts = [agent_prompt.rstrip()]
    for item in memory:
        parts.append(f"## Project memory (from {item.label})\n{item.text}")
    if language:
        parts.append(f"## Language\nReply in {language}, whatever language the data or the code is in.")
    if vision:
        parts.append(VISION_NOTE)
    return "\n\n".join(parts)
