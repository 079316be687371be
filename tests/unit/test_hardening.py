"""Regression tests: secrets on screen, broken agent files, a model that cannot be built
(records nothing), malformed scripted files (one line)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.notebook.magics import BlitzMagics


@pytest.fixture
def magics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlitzMagics]:
    for name in ("BLITZ_MODEL", "BLITZ_API_BASE", "BLITZ_AGENT"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "steps.json").write_text(json.dumps([{"text": "hello"}] * 5), encoding="utf-8")
    monkeypatch.chdir(workspace)
    magics = BlitzMagics(InteractiveShell.instance())
    yield magics
    if magics._workspace is not None:
        magics._workspace.sessions.close()


# -- #7: a password inside api_base never reaches the screen ---------------------------------


def test_model_and_config_confirmation_mask_the_password_in_api_base(magics: BlitzMagics, capsys: Any) -> None:
    magics.blitz_config("api_base=https://user:hunter2@127.0.0.1:9/v1?api_key=k33p")
    confirmation = capsys.readouterr().out
    assert "hunter2" not in confirmation and "k33p" not in confirmation
    assert "set api_base = 'https://user:***@127.0.0.1:9/v1?api_key=***'" in confirmation
    magics.blitz_model("")
    shown = capsys.readouterr().out
    assert "hunter2" not in shown and "user:***@127.0.0.1:9" in shown
    magics.blitz_config("")
    assert "hunter2" not in capsys.readouterr().out


# -- #8: broken agent files ---------------------------------------------------------------


def agents_folder(root: Path) -> Path:
    folder = root / ".blitz" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def agent_file(folder: Path, name: str, description: str, body: str = "Be brief.") -> Path:
    path = folder / f"{name}.md"
    path.write_text(f"---\ndescription: {description}\n---\n{body}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda f: (f / "latin.md").write_bytes(b"---\ndescription: caf\xe9\n---\nhi\n"), "not UTF-8 text"),
        (lambda f: (f / "folder.md").mkdir(), "not a regular file"),
        (lambda f: os.mkfifo(f / "pipe.md"), "not a regular file"),
        (
            lambda f: (f / "open.md").write_text("---\nname: x\n", encoding="utf-8"),
            "front matter opened with --- is never closed",
        ),
        (
            lambda f: (f / "odd.md").write_text("---\ncolour: red\n---\nhi", encoding="utf-8"),
            "colour: unknown agent field (name, description, model, tools)",
        ),
    ],
)
def test_a_broken_agent_file_is_skipped_with_one_warning_and_the_others_work(
    tmp_path: Path, make: Any, why: str
) -> None:
    folder = agents_folder(tmp_path)
    agent_file(folder, "good", "a good one")
    make(folder)
    model = ScriptedModel([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    ws = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "home", durable=False)
    assert "good" in ws.agents.names()
    [problem] = ws.agents.skipped.values()
    assert problem.startswith("skipped agent file .blitz/agents/") and problem.endswith(why)
    first = asyncio.run(ws.run("hi", session="s"))
    assert first.stop_reason == "end_turn"
    assert [e.message for e in first.events if e.type == "notice"] == [problem]
    second = asyncio.run(ws.run("again", session="s", agent="good"))
    assert second.stop_reason == "end_turn"
    assert not [e for e in second.events if e.type == "notice"]  # one warning, not one per turn


def test_choosing_a_skipped_agent_names_its_file(tmp_path: Path) -> None:
    (agents_folder(tmp_path) / "latin.md").write_bytes(b"\xff\xfe")
    ws = Workspace.open(tmp_path, model=ScriptedModel([]), environ={}, home=tmp_path / "home", durable=False)
    with pytest.raises(
        Exception, match=r"agent 'latin' is not available: skipped agent file .blitz/agents/latin.md: not UTF-8 text"
    ):
        asyncio.run(ws.run("hi", agent="latin"))
    assert ws.sessions.names() == []


def test_an_edited_agent_file_is_noticed_at_the_next_turn(tmp_path: Path) -> None:
    """Also for a per-run `-a NAME` that the registry already knows."""
    folder = agents_folder(tmp_path)
    path = agent_file(folder, "helper", "first", body="FIRST INSTRUCTIONS")
    model = ScriptedModel([{"text": "a"}, {"text": "b"}])
    ws = Workspace.open(tmp_path, model=model, environ={}, home=tmp_path / "home", durable=False)
    asyncio.run(ws.run("hi", session="s", agent="helper"))
    agent_file(folder, "helper", "second", body="SECOND INSTRUCTIONS")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a coarse clock still sees it
    asyncio.run(ws.run("again", session="s", agent="helper"))
    assert "FIRST INSTRUCTIONS" in model.requests[0].system
    assert "SECOND INSTRUCTIONS" in model.requests[1].system
    assert ws.agents.get("helper").description == "second"


def test_agents_magic_lists_the_others_and_warns_about_the_broken_one(magics: BlitzMagics, capsys: Any) -> None:
    folder = agents_folder(Path.cwd())
    agent_file(folder, "good", "a good one")
    (folder / "dir.md").mkdir()
    magics.blitz_agents("")
    out = capsys.readouterr().out
    assert "⚠ skipped agent file .blitz/agents/dir.md: not a regular file" in out
    assert "good: a good one" in out


# -- #12: a model that cannot be built records nothing; bad scripted files are one line ---------


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("nosuchprovider/x", "model 'nosuchprovider/x': litellm knows no provider for this name"),
        ("scripted:missing.json", "cannot load the scripted model 'scripted:missing.json': no such file"),
        ("scripted:broken.json", "cannot load the scripted model 'scripted:broken.json': broken.json is not JSON"),
    ],
)
def test_a_model_that_cannot_be_built_records_nothing(tmp_path: Path, model: str, message: str) -> None:
    (tmp_path / "ok.json").write_text(json.dumps([{"text": "fine"}]), encoding="utf-8")
    (tmp_path / "broken.json").write_text("[{", encoding="utf-8")
    ws = Workspace.open(tmp_path, model="scripted:ok.json", environ={}, home=tmp_path / "home", durable=False)
    result = asyncio.run(ws.run("hi", session="s", model=model))
    assert result.stop_reason == "error" and result.error is not None
    assert result.error.startswith(message) and "\n" not in result.error
    assert ws.sessions.names() == []  # no session, no prompt, no turn
    after = asyncio.run(ws.run("and now", session="s"))
    assert after.stop_reason == "end_turn" and after.turn_index == 0
    assert [m.kind for m in ws.session("s").history] == ["user", "assistant"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", 'bad.json: an object needs a "steps" list'),
        ('{"steps": 3}', "bad.json: a scripted model file holds a list of steps"),
        ("[1]", "bad.json: step 1: expected an object, got int"),
        ('[{"txt": "hi"}]', "bad.json: step 1: unknown key 'txt'"),
        ('[{"text": 5}]', "bad.json: step 1: 'text' must be a string"),
        ('[{"tool_calls": [{}]}]', 'bad.json: step 1: tool call 1 needs a "name" string'),
        ('[{"tool_calls": {"name": "x"}}]', "bad.json: step 1: 'tool_calls' must be a list"),
        ('[{"text": "a"}, {"usage": {"prompt_tokens": -1}}]', "bad.json: step 2: 'usage' must map"),
        ('[{"error": "melted"}]', "bad.json: step 1: unknown error 'melted'"),
        (
            '[{"tool_calls": [{"name": "x", "arguments": 3}]}]',
            'bad.json: step 1: tool call 1: "arguments" must be an object',
        ),
    ],
)
def test_a_malformed_scripted_file_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        ScriptedModel.from_file(path)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_malformed_scripted_model_is_a_one_line_usage_error(magics: BlitzMagics) -> None:
    Path("bad.json").write_text('[{"tool_calls": [{"arguments": {}}]}]', encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        magics.blitz_model("scripted:bad.json")
    assert "\n" not in str(caught.value)
    assert str(caught.value).endswith(
        "cannot load the scripted model 'scripted:bad.json': bad.json: step 1: tool call 1 needs a \"name\" string"
    )


# -- #13: a failed automatic compaction does not fail the turn --------------------------------


async def test_a_failed_automatic_compaction_goes_on_without_it_and_says_so(tmp_path: Path) -> None:
    steps = [{"text": "a"}, {"error": "unavailable", "message": "summariser down"}, {"text": "b"}]
    model = ScriptedModel(steps)
    ws = Workspace.open(
        tmp_path,
        model=model,
        environ={},
        home=tmp_path / "home",
        durable=False,
        overrides={"context.token_threshold": 1000, "context.retain_events": 1},
    )
    await ws.run("short", session="s")
    before = list(ws.session("s").history)
    result = await ws.run("again", session="s")
    assert model.requests[1].system.startswith("You summarise")
    assert result.stop_reason == "end_turn" and result.text == "b"
    [notice] = [e.message for e in result.events if e.type == "notice"]
    assert notice.startswith("automatic compaction failed, going on without it: summarising failed")
    assert ws.session("s").history[: len(before)] == before  # nothing was summarised away
    model.assert_complete()


def test_a_huge_prompt_is_capped_in_the_cell_record_and_says_so() -> None:
    from blitz_kernel.engine.events import TurnStarted
    from blitz_kernel.notebook.widgets.state import TurnState
    from blitz_kernel.notebook.widgets.static import RECORD_TEXT_CHARS, turn_record

    prompt = "p" * 1_000_000
    state = TurnState(turn_id="t1", prompt="", session="")
    state.apply(TurnStarted(session="s", turn_index=0, prompt=prompt, agent="blitz", model="m"))
    record = turn_record(state, "short answer")
    assert record["prompt_chars"] == 1_000_000
    assert record["prompt"].endswith("[… 980,000 more characters not kept in the notebook]")
    assert len(record["prompt"]) < RECORD_TEXT_CHARS + 100
    assert record["text"] == "short answer" and "text_chars" not in record
    assert len(json.dumps(record)) < 25_000
