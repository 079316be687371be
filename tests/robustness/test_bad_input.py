"""Bad input: magic options, config values, environment variables, config and agent files,
scripted-model files, `@` references, tool arguments from the model, and `blitz run`'s command
line. Each case (bad_input_cases.py) names the exact one-line error it expects; a shell
case also checks that no traceback was printed and that nothing was recorded (no session
holds a turn or a message). A few run through a real kernel in tests/kernel/test_bad_input_kernel.py.

A `blitz run` case must exit 2 with one `blitz run: …` line (argparse's own errors add its
usage lines) before any kernel starts.

Run alone: `pytest tests/robustness/test_bad_input.py` (about a minute).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from blitz_kernel.cli.run import main as blitz_run
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel

from .bad_input_cases import BAD_STEPS, CLI_CASES, SHELL_CASES, TOOL_CASES, CliCase, ShellCase, ToolCase

WORKING_SCRIPT = '[{"text": "fine"}, {"text": "fine"}]'


@dataclass
class Outcome:
    error: BaseException | None
    printed: str
    recorded: list[str]


@contextlib.contextmanager
def process_state(environ: dict[str, str], cwd: Path) -> Iterator[None]:
    """The kernel process's environment and working directory for one case."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def prepare(root: Path, case: ShellCase) -> tuple[Path, dict[str, str]]:
    workspace, home = root / "work", root / "home"
    (home / ".blitz").mkdir(parents=True)
    workspace.mkdir()
    (workspace / "steps.json").write_text(WORKING_SCRIPT, encoding="utf-8")
    for name, content in {**BAD_STEPS, **case.files}.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    if case.home is not None:
        (home / ".blitz" / "config.toml").write_text(case.home, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    environ.update(HOME=str(home), BLITZ_MODEL="scripted:steps.json")
    environ.update({name: value.replace("{root}", str(root)) for name, value in case.env.items()})
    return workspace, environ


def run_in_shell(root: Path, case: ShellCase) -> Outcome:
    """Load the extension in the shell, run the cell, see what it printed and recorded."""
    from blitz_kernel.notebook import extension

    workspace, environ = prepare(root, case)
    shell = InteractiveShell.instance()
    printed = io.StringIO()
    with process_state(environ, workspace):
        shell.extension_manager.load_extension("blitz_kernel")
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                result = shell.run_cell(case.cell, store_history=False)
            recorded: list[str] = []
            opened = extension._state["magics"]._workspace
            if opened is not None:
                for name in opened.sessions.names():
                    state = opened.sessions.get(name)
                    if state.turns or state.history:
                        recorded.append(f"{name}: {state.turns} turn(s), {len(state.history)} message(s)")
        finally:
            shell.extension_manager.unload_extension("blitz_kernel")
    return Outcome(result.error_before_exec or result.error_in_exec, printed.getvalue(), recorded)


def test_the_table_has_at_least_250_cases() -> None:
    assert len(SHELL_CASES) + len(TOOL_CASES) + len(CLI_CASES) >= 250
    ids = [case.id for case in SHELL_CASES] + [case.id for case in TOOL_CASES] + [case.id for case in CLI_CASES]
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("case", SHELL_CASES, ids=[case.id for case in SHELL_CASES])
def test_bad_input_is_one_line_and_records_nothing(case: ShellCase, tmp_path: Path) -> None:
    outcome = run_in_shell(tmp_path, case)
    assert outcome.error is not None, f"accepted: {case.cell!r}\n{outcome.printed}"
    first, *rest = str(outcome.error).splitlines()
    assert first == case.error.format(root=tmp_path)
    assert all(line.startswith("usage: ") for line in rest), rest  # at most the usage line
    assert isinstance(outcome.error, UsageError) or hasattr(outcome.error, "_render_traceback_")
    assert "Traceback" not in outcome.printed, outcome.printed
    assert outcome.recorded == []


@dataclass
class NamespaceKernel:
    """A kernel's user namespace, for the variable tools."""

    user_ns: dict[str, Any] = field(default_factory=lambda: {"data": [1, 2], "os": os})


@pytest.mark.parametrize("case", TOOL_CASES, ids=[case.id for case in TOOL_CASES])
def test_bad_tool_arguments_are_one_line_errors_the_model_reads(case: ToolCase, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello\n", encoding="utf-8")
    model = ScriptedModel([{"tool_calls": [{"name": case.tool, "arguments": case.arguments}]}, {"text": "ok"}])
    workspace = Workspace.open(
        tmp_path, model=model, environ={}, home=tmp_path / "home", durable=False, kernel=NamespaceKernel()
    )
    result = asyncio.run(workspace.run("go", session="s", approve="allow"))
    assert result.stop_reason == "end_turn" and result.text == "ok"
    [tool_result] = [m for m in workspace.session("s").history if m.kind == "tool_result"]
    assert tool_result.error == case.error.format(root=tmp_path)
    assert "\n" not in tool_result.error and "Traceback" not in tool_result.error
    assert not (tmp_path.parent / "escape.txt").exists()
    model.assert_complete()


@pytest.mark.parametrize("case", CLI_CASES, ids=[case.id for case in CLI_CASES])
def test_blitz_run_bad_input_is_one_line_and_exit_2(
    case: CliCase, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, content in case.files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    err = io.StringIO()
    status = blitz_run(case.argv, err=err)
    printed = err.getvalue() + capsys.readouterr().err
    assert status == 2, printed
    ours = [line for line in printed.splitlines() if line.startswith("blitz run: ")]
    assert ours in (
        [f"blitz run: {case.error}"],
        [f"blitz run: error: {case.error}"],
    ), printed
    others = [line for line in printed.splitlines() if not line.startswith("blitz run: ")]
    assert all(line.startswith(("usage: ", " ")) for line in others), others  # argparse's usage only
    assert "Traceback" not in printed
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({n.split("/")[0] for n in case.files})
