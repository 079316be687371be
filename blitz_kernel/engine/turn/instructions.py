"""The root agent's instructions: the agent's prompt, then project memory,
then the reply language and what the model can see.

Project memory is what a team writes down once instead of repeating in every prompt:
`~/.blitz/AGENTS.md` (the user's own habits), then `AGENTS.md` and `BLITZ.md` at the workspace
root (the project's). Each is marked with where it came from, in that fixed order, so the most
specific comes last and a reader (the model, or the user in `%blitz_session show`) can tell
which said what. Files are read at every turn: an edit counts from the next turn.
Sub-agents get their own instructions only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...core.text import shorten
from ...tools.confined import read_capped, read_regular
from ...tools.registry import ToolError

MEMORY_FILES = ("AGENTS.md", "BLITZ.md")
"""Project memory at the workspace root, in the order they are added."""
MAX_MEMORY_CHARS = 20_000
"""Per file: a memory file is guidance, not a data dump; a longer one is cut with a note."""
MAX_MEMORY_BYTES = 1024 * 1024
"""A memory file larger than this is not read at all (it is skipped and named)."""

VISION_NOTE = "## Images\nYou can see images: `view_image` shows you an image file or a figure a tool produced."


@dataclass(frozen=True)
class MemoryFile:
    """One project-memory file that was added to the instructions."""

    label: str
    """Where it came from, as the instructions and `%blitz_session show` name it."""
    text: str


def memory_files(workspace: Path, home: Path | None) -> list[MemoryFile]:
    """The memory files that exist and can be read, in their fixed order."""
    return load_memory(workspace, home)[0]


def load_memory(workspace: Path, home: Path | None) -> tuple[list[MemoryFile], list[str]]:
    """The memory files read, and the ones skipped. A workspace's files are read with the file
    tools' confinement: a symlink out of the workspace (`AGENTS.md -> ~/.aws/credentials`),
    a FIFO, a file over MAX_MEMORY_BYTES or one that is not UTF-8 text is skipped, named,
    and never sent to the model. The user's own `~/.blitz/AGENTS.md` is theirs to link."""
    user_folder = (home if home is not None else Path.home()) / ".blitz"
    candidates = [(user_folder, "AGENTS.md", "~/.blitz/AGENTS.md"), *((workspace, n, n) for n in MEMORY_FILES)]
    found: list[MemoryFile] = []
    skipped: list[str] = []
    for folder, name, label in candidates:
        try:
            os.lstat(folder / name)
        except OSError:
            continue  # not there: nothing to say
        try:
            if folder == user_folder:
                text = read_regular(folder / name, MAX_MEMORY_BYTES).strip()
            else:
                text = read_capped(folder, name, MAX_MEMORY_BYTES).strip()
        except ToolError as error:
            skipped.append(f"skipped project memory {label}: {error}")
            continue
        if text:
            found.append(MemoryFile(label, shorten(text, MAX_MEMORY_CHARS)))
    return found, skipped


def root_instructions(
    agent_prompt: str, memory: list[MemoryFile], *, language: str | None, vision: bool, skills: str = ""
) -> str:
    """The agent's prompt + project memory + the skills (one line each: name and description;
    a body is sent only when `load_skill` reads it) + reply language + the image note."""
    parts = [agent_prompt.rstrip()]
    for item in memory:
        parts.append(f"## Project memory (from {item.label})\n{item.text}")
    if skills:
        parts.append(skills)
    if language:
        parts.append(f"## Language\nReply in {language}, whatever language the data or the code is in.")
    if vision:
        parts.append(VISION_NOTE)
    return "\n\n".join(parts)
