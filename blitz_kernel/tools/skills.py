"""Skills: folders of know-how (`SKILL.md` with a name and a description in its front matter,
plus the files it refers to) that the agent reads only when a task needs them.

Where they are found, first one of a name wins: `<workspace>/.blitz/skills/*/SKILL.md`,
`<workspace>/skills/*/SKILL.md`, then the user's own `~/.blitz/skills/*/SKILL.md`. A
workspace's skills are prompt text its repository ships, like `AGENTS.md`: they are read with
the file tools' confinement (regular files only, size-capped, no symlink out of the
workspace), and a skill can only say things: it never changes approvals, tools or models
(docs/skills.md). The instructions carry one line per skill; `load_skill` returns the body
and the files of its folder when the model decides it needs them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from ..core.text import shorten
from .confined import read_capped, read_regular
from .paths import WalkNotes, open_in_workspace, relative_name, resolve_in_workspace, walk
from .registry import Tool, ToolContext, ToolError, ToolKind, tool

WORKSPACE_FOLDERS = (".blitz/skills", "skills")
"""Skill folders of a workspace, in the order they are searched."""
USER_FOLDER = "~/.blitz/skills"
SKILL_FILE = "SKILL.md"
SKILL_TOOL = "load_skill"
MAX_SKILL_BYTES = 100_000
"""A SKILL.md larger than this is skipped: its body goes to the model whole when loaded."""
MAX_DESCRIPTION_CHARS = 300
"""The one line per skill the instructions carry is cut here."""
MAX_LISTED_FILES = 200
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Skill:
    """One skill that was read: what the instructions list, and where its files are."""

    name: str
    description: str
    body: str
    folder: Path
    """The skill's folder (a real path); `load_skill` reads only inside it."""
    source: str
    """Where it came from, as shown: `.blitz/skills/forecast/SKILL.md`, `~/.blitz/skills/...`."""
    size: int
    tools: tuple[str, ...] = ()
    """Tools the skill says it needs (informational: a skill grants nothing)."""


@dataclass
class SkillBook:
    """The skills found, by name, and one line for each SKILL.md that was skipped."""

    skills: dict[str, Skill] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def listing(self) -> str:
        """The instructions' section: one line per skill, nothing of its body."""
        if not self.skills:
            return ""
        lines = [f"- {skill.name}: {skill.description}" for skill in self.skills.values()]
        return (
            "## Skills\nSkills hold know-how for particular tasks. When a task matches one, call "
            "load_skill with its name first and follow it.\n" + "\n".join(lines)
        )


def find_skills(workspace: Path, home: Path | None = None) -> SkillBook:
    """Every readable skill, in search order; a later skill of a taken name is skipped."""
    book = SkillBook()
    for folder in WORKSPACE_FOLDERS:
        for entry in _workspace_entries(workspace, folder, book):
            shown = f"{folder}/{entry}/{SKILL_FILE}"
            try:
                os.lstat(workspace / shown)
            except OSError:
                continue  # a folder without SKILL.md is not a skill: nothing to say
            try:
                text = read_capped(workspace, shown, MAX_SKILL_BYTES)
                real = resolve_in_workspace(workspace, f"{folder}/{entry}")
            except ToolError as error:
                book.skipped.append(f"skipped skill {shown}: {str(error).removeprefix(f'{shown} ')}")
                continue
            _add(book, text, real, shown)
    user_root = (home if home is not None else Path.home()) / ".blitz" / "skills"
    try:
        entries = sorted(os.listdir(user_root))
    except OSError:
        entries = []
    for entry in entries:
        path = user_root / entry / SKILL_FILE
        shown = f"{USER_FOLDER}/{entry}/{SKILL_FILE}"
        if not path.exists():
            continue
        try:
            text = read_regular(path, MAX_SKILL_BYTES)
        except ToolError as error:
            book.skipped.append(f"skipped skill {shown}: {error}")
            continue
        _add(book, text, (user_root / entry).resolve(), shown)
    return book


def _workspace_entries(workspace: Path, folder: str, book: SkillBook) -> list[str]:
    """The entries of a workspace skill folder, opened with the confinement: a skills folder
    that is a symlink out of the workspace is skipped and named."""
    try:
        os.lstat(workspace / folder)
    except OSError:
        return []
    try:
        fd, _path = open_in_workspace(workspace, folder, directory=True)
    except ToolError as error:
        book.skipped.append(f"skipped the skill folder {folder}: {error}")
        return []
    try:
        return sorted(os.listdir(fd))
    except OSError:
        return []
    finally:
        os.close(fd)


def _add(book: SkillBook, text: str, folder: Path, shown: str) -> None:
    try:
        fields, body = parse_skill(text)
    except ValueError as error:
        book.skipped.append(f"skipped skill {shown}: {error}")
        return
    name = fields["name"]
    if name in book.skills:
        book.skipped.append(f"skipped skill {shown}: the name {name!r} is taken by {book.skills[name].source}")
        return
    tools = tuple(t.strip() for t in fields.get("tools", "").strip("[]").split(",") if t.strip())
    description = shorten(" ".join(fields["description"].split()), MAX_DESCRIPTION_CHARS)
    book.skills[name] = Skill(name, description, body, folder, shown, len(text.encode()), tools)


def parse_skill(text: str) -> tuple[dict[str, str], str]:
    """`---` front matter of `key: value` lines (an indented line continues the value before
    it; other keys are ignored), then the body. `name` and `description` are required. A
    small parser on purpose: no YAML dependency for two keys. ValueError says what is wrong."""
    if "\x00" in text:
        raise ValueError("the file holds NUL bytes")
    if not text.startswith("---"):
        raise ValueError("no front matter (a --- block with name and description)")
    header, separator, rest = text[3:].partition("\n---")
    if not separator:
        raise ValueError("front matter opened with --- is never closed")
    fields: dict[str, str] = {}
    last: str | None = None
    for line in header.strip("\n").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t" and last is not None:
            fields[last] = f"{fields[last]} {line.strip()}".strip()
            continue
        key, colon, value = line.partition(":")
        if not colon:
            raise ValueError(f"expected `key: value` in the front matter, got {shorten(line, 60)!r}")
        last = key.strip()
        value = value.strip()
        if value in (">", "|", ">-", "|-"):
            value = ""
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        fields[last] = value
    for required in ("name", "description"):
        if not fields.get(required):
            raise ValueError(f"the front matter has no {required}")
    if not _NAME.fullmatch(fields["name"]):
        raise ValueError(f"the name {shorten(fields['name'], 40)!r} is not a short name (letters, digits, . _ -)")
    return fields, rest.partition("\n")[2].strip()


def skill_files(skill: Skill) -> tuple[list[str], str]:
    """The files of the skill's folder (relative to it, SKILL.md left out) and a note of what
    the walk skipped (symlinks out of the folder, pipes)."""
    notes = WalkNotes()
    files: list[str] = []
    try:
        for folder in walk(skill.folder, skill.folder, notes):
            for name in folder.files:
                relative = relative_name(folder.path / name, skill.folder)
                if relative != SKILL_FILE:
                    files.append(relative)
            if len(files) >= MAX_LISTED_FILES:
                break
    except ToolError as error:
        return [], str(error)
    return sorted(files)[:MAX_LISTED_FILES], notes.render()


def skill_home(ctx: ToolContext) -> Path | None:
    return ctx.home


class LoadSkillArgs(BaseModel):
    name: str = Field(description="the skill's name, as the instructions list it")
    file: str | None = Field(
        default=None, description="optional: a file of the skill's folder to read instead of SKILL.md"
    )


@tool(SKILL_TOOL, ToolKind.READ_ONLY, LoadSkillArgs)
async def load_skill(args: LoadSkillArgs, ctx: ToolContext) -> str:
    """Read a skill listed in the instructions: its SKILL.md and the files of its folder. Pass
    `file` to read one of those files."""
    book = find_skills(ctx.workspace, skill_home(ctx))
    skill = book.skills.get(args.name)
    if skill is None:
        known = ", ".join(book.skills) or "none"
        raise ToolError(f"no skill named {args.name!r}; available: {known}")
    if args.file is not None:
        try:
            return read_capped(skill.folder, args.file, MAX_SKILL_BYTES)
        except ToolError as error:
            raise ToolError(f"{args.file} of skill {skill.name}: {error}") from None
    files, note = skill_files(skill)
    listing = "\n".join(f"- {name}" for name in files) or "(none)"
    where = _readable_as(skill, ctx.workspace)
    return (
        f"# Skill {skill.name} (from {skill.source})\n\n{skill.body}\n\n"
        f"## Files of this skill ({where})\n{listing}{chr(10) + note if note else ''}"
    )


def _readable_as(skill: Skill, workspace: Path) -> str:
    """How the model reads the listed files: by workspace path, or through load_skill."""
    root = workspace.resolve()
    if skill.folder == root or root in skill.folder.parents:
        return f"read them with read_file under {relative_name(skill.folder, root)}/"
    return f"read them with load_skill(name={skill.name!r}, file=...)"


SKILL_TOOLS: list[Tool] = [load_skill]
