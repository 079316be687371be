"""Skills (docs/skills.md): found in the workspace's and the user's skill folders, read with
the file tools' confinement, listed one line each in the instructions, read by `load_skill`."""

from __future__ import annotations

import os
from pathlib import Path

from blitz_kernel.core.history import ToolResultMessage
from blitz_kernel.engine.events import NoticeEvent
from blitz_kernel.models.scripted import Step
from blitz_kernel.tools.registry import ToolContext
from blitz_kernel.tools.skills import LoadSkillArgs, find_skills, load_skill
from tests.helpers.workspaces import scripted_workspace

from .conftest import tool_step

FORECAST = """---
name: sales-forecasting
description: How this team forecasts monthly sales.
  Use it for any forecast.
tools: run_python, read_file
---
# Forecasting
Use a seasonal naive model first; see method.md.
"""


def write_skill(folder: Path, text: str, extra: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)
    for name, content in (extra or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content)
    return folder


def skill_text(name: str, description: str = "does things", body: str = "the body") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


def test_skills_are_found_in_the_three_folders_first_name_wins(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_skill(tmp_path / ".blitz/skills/a", skill_text("alpha", "from .blitz"))
    write_skill(tmp_path / "skills/b", skill_text("beta", "from skills"))
    write_skill(tmp_path / "skills/c", skill_text("alpha", "a second alpha"))
    write_skill(home / ".blitz/skills/d", skill_text("delta", "the user's own"))
    (tmp_path / "skills/not-a-skill").mkdir()
    book = find_skills(tmp_path, home)
    assert {name: skill.source for name, skill in book.skills.items()} == {
        "alpha": ".blitz/skills/a/SKILL.md",
        "beta": "skills/b/SKILL.md",
        "delta": "~/.blitz/skills/d/SKILL.md",
    }
    assert book.skipped == ["skipped skill skills/c/SKILL.md: the name 'alpha' is taken by .blitz/skills/a/SKILL.md"]


def test_front_matter_is_parsed_and_bad_files_are_skipped_with_one_line(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills/forecast", FORECAST)
    write_skill(tmp_path / "skills/plain", "# no front matter\n")
    write_skill(tmp_path / "skills/open", "---\nname: open\n")
    write_skill(tmp_path / "skills/nodesc", "---\nname: nodesc\n---\nbody")
    write_skill(tmp_path / "skills/badname", skill_text("two words"))
    big = tmp_path / "skills/big"
    write_skill(big, skill_text("big", body="x" * 200_000))
    (tmp_path / "skills/binary").mkdir()
    (tmp_path / "skills/binary/SKILL.md").write_bytes(b"---\nname: bin\xff\n---\n")
    book = find_skills(tmp_path, tmp_path / "home")
    skill = book.skills["sales-forecasting"]
    assert skill.description == "How this team forecasts monthly sales. Use it for any forecast."
    assert skill.tools == ("run_python", "read_file")
    assert skill.body.startswith("# Forecasting")
    assert list(book.skills) == ["sales-forecasting"]
    reasons = "\n".join(book.skipped)
    assert "skills/plain/SKILL.md: no front matter" in reasons
    assert "skills/open/SKILL.md: front matter opened with --- is never closed" in reasons
    assert "skills/nodesc/SKILL.md: the front matter has no description" in reasons
    assert "skills/badname/SKILL.md: the name 'two words' is not a short name" in reasons
    assert "skills/big/SKILL.md" in reasons and "limit" in reasons
    assert "skills/binary/SKILL.md" in reasons and "not UTF-8" in reasons
    assert all("\n" not in line for line in book.skipped)


def test_a_symlinked_skill_file_pointing_outside_is_skipped_and_named(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    outside = tmp_path / "secret.md"
    outside.write_text(skill_text("stolen", "reads a file outside", "SECRET CONTENT"))
    (root / "skills/evil").mkdir(parents=True)
    os.symlink(outside, root / "skills/evil/SKILL.md")
    linked_folder = tmp_path / "elsewhere"
    write_skill(linked_folder, skill_text("linked", "a folder outside"))
    (root / ".blitz").mkdir()
    os.symlink(tmp_path, root / ".blitz/skills")
    book = find_skills(root, tmp_path / "home")
    assert book.skills == {}
    assert any(line.startswith("skipped skill skills/evil/SKILL.md:") and "outside" in line for line in book.skipped)
    assert any(line.startswith("skipped the skill folder .blitz/skills:") for line in book.skipped)


async def test_load_skill_returns_the_body_and_the_files_of_its_folder_only(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "skills/forecast", FORECAST, {"method.md": "seasonal", "data/x.csv": "a\n1\n"})
    os.symlink(tmp_path / "home", folder / "out")
    ctx = ToolContext(workspace=tmp_path, home=tmp_path / "home")
    text = await load_skill.func(LoadSkillArgs(name="sales-forecasting"), ctx)
    assert isinstance(text, str)
    assert "Use a seasonal naive model first" in text
    assert "- method.md\n- data/x.csv" in text or "- data/x.csv\n- method.md" in text
    assert "read_file under skills/forecast/" in text
    assert "- out" not in text and "[skipped: 1" in text  # the link out is named, not listed
    assert await load_skill.func(LoadSkillArgs(name="sales-forecasting", file="method.md"), ctx) == "seasonal"


async def test_load_skill_refuses_unknown_names_and_files_outside_its_folder(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "repo"
    write_skill(home / ".blitz/skills/mine", skill_text("mine"), {"notes.md": "user notes"})
    root.mkdir()
    (tmp_path / "other.txt").write_text("not the skill's")
    ctx = ToolContext(workspace=root, home=home)
    text = await load_skill.func(LoadSkillArgs(name="mine"), ctx)
    assert "load_skill(name='mine', file=...)" in str(text)
    assert await load_skill.func(LoadSkillArgs(name="mine", file="notes.md"), ctx) == "user notes"
    for args, expected in [
        (LoadSkillArgs(name="nope"), "no skill named 'nope'; available: mine"),
        (LoadSkillArgs(name="mine", file="../../../../other.txt"), "outside"),
    ]:
        try:
            await load_skill.func(args, ctx)
        except Exception as error:
            assert expected in str(error)
        else:
            raise AssertionError(f"{args} was not refused")


async def test_the_instructions_list_skills_in_one_line_and_load_skill_reads_one(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills/forecast", FORECAST)
    write_skill(tmp_path / "skills/broken", "no front matter")
    steps: list[Step] = [
        tool_step({"name": "load_skill", "arguments": {"name": "sales-forecasting"}}),
        {"text": "done"},
    ]
    workspace, model = scripted_workspace(tmp_path, steps)
    result = await workspace.run("forecast sales")
    system = model.requests[0].system
    assert "- sales-forecasting: How this team forecasts monthly sales. Use it for any forecast." in system
    assert "seasonal naive" not in system  # the body is sent only when loaded
    [loaded] = [m for m in workspace.session().history if isinstance(m, ToolResultMessage)]
    assert loaded.ok and "seasonal naive" in (loaded.output or "")
    notices = [e.message for e in result.events if isinstance(e, NoticeEvent)]
    assert notices == ["skipped skill skills/broken/SKILL.md: no front matter (a --- block with name and description)"]


async def test_skills_are_listed_only_when_the_turn_may_call_load_skill(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills/forecast", FORECAST)
    workspace, model = scripted_workspace(tmp_path, [{"text": "a"}, {"text": "b"}])
    await workspace.run("only reading", tools=["read_file"])
    await workspace.run("with skills", tools=["read_file", "load_skill"])
    without, with_skills = (request.system for request in model.requests)
    assert "sales-forecasting" not in without
    assert "- sales-forecasting: How this team forecasts" in with_skills
