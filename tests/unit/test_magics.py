"""The magics on an in-process IPython shell (no kernel): option checks that must be one-line
UsageErrors, `%blitz_model` keeping the previous model when the new one cannot be built
and saying when the active agent's pin wins, and commands that must not create
sessions by asking about them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.notebook.magics import BlitzCellError, BlitzMagics, interrupt_is_one_line


@pytest.fixture
def magics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[BlitzMagics]:
    """The magics of a shell whose working directory (the workspace) is a fresh folder with a
    scripted model file, and no model from the environment."""
    for name in ("BLITZ_MODEL", "BLITZ_API_BASE", "BLITZ_AGENT"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "steps.json").write_text(json.dumps([{"text": "hello"}]), encoding="utf-8")
    monkeypatch.chdir(workspace)
    yield BlitzMagics(InteractiveShell.instance())


def opened(magics: BlitzMagics) -> Workspace:
    return magics.workspace()


def test_a_model_that_cannot_be_built_keeps_the_previous_one(magics: BlitzMagics, capsys: Any) -> None:
    """A scripted file that is not there is a one-line error; nothing changes."""
    magics.blitz_model("scripted:steps.json")
    assert opened(magics).model.name == "scripted:steps.json"
    with pytest.raises(UsageError) as error:
        magics.blitz_model("scripted:/nonexistent/steps.json")
    assert "cannot load the scripted model 'scripted:/nonexistent/steps.json'" in str(error.value)
    assert "\n" not in str(error.value)
    assert opened(magics).model.name == "scripted:steps.json"
    assert opened(magics).config.model == "scripted:steps.json"
    capsys.readouterr()
    magics.blitz_model("")  # no name: shows the model
    assert capsys.readouterr().out == "model: scripted:steps.json\n"


def test_a_model_whose_key_variable_is_unset_keeps_the_previous_one(
    magics: BlitzMagics, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BLITZ_TEST_UNSET_KEY", raising=False)
    magics.blitz_model("scripted:steps.json")
    magics.blitz_config("api_key_env=BLITZ_TEST_UNSET_KEY")  # the scripted model needs no key
    with pytest.raises(UsageError, match="BLITZ_TEST_UNSET_KEY \\(api_key_env\\) is not set"):
        magics.blitz_model("openai/gpt-4.1-mini")
    assert opened(magics).model.name == "scripted:steps.json"


def test_setting_a_model_says_when_the_active_agent_pins_another(magics: BlitzMagics, capsys: Any) -> None:
    agents = Path(".blitz/agents")
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: reviews\nmodel: openai/pinned-model\n---\nReview things.\n",
        encoding="utf-8",
    )
    magics.blitz_model("scripted:steps.json")
    assert capsys.readouterr().out == "model: scripted:steps.json\n"  # the built-in agent pins nothing
    magics.blitz_agent("reviewer")
    capsys.readouterr()
    magics.blitz_model("scripted:steps.json")
    assert capsys.readouterr().out.splitlines() == [
        "model: scripted:steps.json",
        "agent 'reviewer' pins model openai/pinned-model; scripted:steps.json applies to agents without a pin",
    ]


@pytest.mark.parametrize("line", ['""', "''"])
def test_an_empty_model_name_is_a_usage_error(magics: BlitzMagics, line: str) -> None:
    with pytest.raises(UsageError, match="MODEL needs a name, got an empty one"):
        magics.blitz_model(line)


def test_quoted_names_lose_their_quotes(magics: BlitzMagics) -> None:
    magics.blitz_model("'scripted:steps.json'")
    assert opened(magics).model.name == "scripted:steps.json"


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ('"unclosed', "No closing quotation"),
        ("--out 1bad", "--out needs a Python variable name, got '1bad'"),
        ("--out 'a b'", "--out needs a Python variable name, got 'a b'"),
        ("--out class", "--out needs a Python variable name, got 'class'"),
        ("--session ''", "--session needs a name"),
        ("-m ''", "--model needs a name"),
        ("--think hard", "invalid choice: 'hard'"),
    ],
)
def test_bad_cell_options_are_one_usage_error_with_the_usage_line(magics: BlitzMagics, line: str, words: str) -> None:
    with pytest.raises(UsageError) as error:
        magics.blitz(line, "Say hello.")
    first, usage = str(error.value).split("\n")
    assert words in first
    assert usage.startswith("usage: %%blitz")


def test_an_unknown_agent_in_config_is_refused_like_blitz_agent(magics: BlitzMagics) -> None:
    with pytest.raises(UsageError, match="unknown agent 'nosuch'"):
        magics.blitz_config("agent=nosuch")
    with pytest.raises(UsageError, match="unknown agent 'nosuch'"):
        magics.blitz_agent("nosuch")
    assert opened(magics).config.agent == "blitz"


def test_asking_about_a_session_does_not_create_it(magics: BlitzMagics, capsys: Any) -> None:
    magics.blitz_usage("--session ghost")
    assert capsys.readouterr().out == "session 'ghost': no model calls yet\n"
    with pytest.raises(BlitzCellError, match="nothing to compact"):
        magics.blitz_compact("-s ghost")
    assert "ghost" not in opened(magics).sessions.names()


def test_an_interrupt_outside_a_turn_is_one_line() -> None:
    """■ while compacting (or before a turn starts) ends the cell with what did not happen."""

    async def scenario() -> BaseException:
        started = asyncio.Event()

        async def compacting() -> None:
            with interrupt_is_one_line("nothing was compacted"):
                started.set()
                await asyncio.Event().wait()

        task = asyncio.ensure_future(compacting())
        await started.wait()
        task.cancel()
        with pytest.raises(BlitzCellError) as error:
            await task
        assert task.cancelling() == 0  # the interrupt was taken; nothing cancels the cell again
        return error.value

    error = asyncio.run(scenario())
    assert str(error) == "interrupted: nothing was compacted"
    assert error._render_traceback_() == ["\x1b[0;31mBlitz:\x1b[0m interrupted: nothing was compacted"]


def test_GR05_add_budget_and_session_show_context_and_memory(tmp_path, monkeypatch):
    """`%blitz_usage --add-budget` lifts a spent budget; `%blitz_session show` says how full the
    context is, which memory files count and the budget."""
    import asyncio

    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.chdir(tmp_path)
    (tmp_path / "AGENTS.md").write_text("Be brief.\n")
    script = tmp_path / "s.json"
    script.write_text('[{"text": "a", "usage": {"prompt_tokens": 5000, "completion_tokens": 1}}]')
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "blitz_kernel")
    try:
        shell.run_line_magic("blitz_config", f"model=scripted:{script} limits.max_cost_usd_session=2")
        workspace = shell.magics_manager.registry["BlitzMagics"].workspace()
        asyncio.run(workspace.run("hi", session="b"))
        from contextlib import redirect_stdout
        from io import StringIO

        out = StringIO()
        with redirect_stdout(out):
            shell.run_line_magic("blitz_session", "show")  # the current session is the notebook's
            shell.run_line_magic("blitz_usage", "-s b --add-budget 3")
        text = out.getvalue()
        assert "budget raised; $5.00 left" in text
        assert "project memory: AGENTS.md" in text
        workspace.sessions.get("b")
        out = StringIO()
        with redirect_stdout(out):
            shell.run_line_magic("blitz_session", "use b")
            shell.run_line_magic("blitz_session", "show")
        assert "context: ctx 4 % of 128K (default)" in out.getvalue()
        assert "session budget: $5.00" in out.getvalue()
    finally:
        shell.run_line_magic("unload_ext", "blitz_kernel")
