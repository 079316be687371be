"""`blitz run` end to end: the real CLI (`python -m blitz_kernel run`) runs notebooks through
papermill in a real kernel, offline on scripted models. One test per outcome: its exit
status, its report, and the output notebook's turn records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

from blitz_kernel.cli.report import RunReport

ROOT = Path(__file__).resolve().parents[2]


def blitz_run(*args: str | Path, home: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    env.update(
        HOME=str(home), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True", PYDEVD_DISABLE_FILE_VALIDATION="1"
    )
    return subprocess.run(
        [sys.executable, "-m", "blitz_kernel", "run", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def notebook(path: Path, *cells: str | tuple[str, list[str]]) -> Path:
    """A notebook of code cells; a (source, tags) pair tags its cell."""
    nb = nbformat.v4.new_notebook()
    for cell in cells:
        source, tags = cell if isinstance(cell, tuple) else (cell, [])
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": tags}))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def script(path: Path, *steps: dict) -> Path:
    path.write_text(json.dumps({"steps": list(steps)}))
    return path


def records(path: Path) -> list[dict]:
    nb = nbformat.read(path, as_version=4)
    return [o["metadata"]["blitz"] for c in nb.cells for o in c.get("outputs", []) if "blitz" in o.get("metadata", {})]


def test_the_quickstart_demo_runs_clean_with_a_report_and_turn_records(tmp_path: Path):
    out, report_path = tmp_path / "out.ipynb", tmp_path / "report.json"
    done = blitz_run(ROOT / "notebooks" / "quickstart.ipynb", "-o", out, "--report", report_path, home=tmp_path)
    assert done.returncode == 0, done.stderr
    # a progress line per cell, the agent's tool calls as they ran, and the summary
    assert "[cell 4] %%blitz --approve allow · What is in `sales`?" in done.stderr
    assert '    ⚙ describe_variable(name="sales")' in done.stderr
    [result_line] = [line for line in done.stderr.splitlines() if "↳ run_python:" in line and "region" in line]
    assert "result: region south 84.0" in result_line
    assert "blitz run: ok (exit 0) · 2 agent turn(s), 4 tool call(s)" in done.stderr
    assert "WARNING" not in done.stderr  # ipykernel's "running over TCP without encryption": our kernel uses IPC
    report = RunReport.model_validate_json(report_path.read_text())
    assert (report.outcome, report.exit_code, report.failed_cell) == ("ok", 0, None)
    first, second = report.turns
    assert (first.cell_index, first.session, first.stop_reason) == (4, "quickstart", "end_turn")
    assert first.prompt == "What is in `sales`? Compute the revenue per region."
    assert [(c.name, c.status) for c in first.tool_calls] == [
        ("list_variables", "done"),
        ("describe_variable", "done"),
        ("run_python", "done"),
    ]
    assert first.usage.calls == 4 and first.usage.input_tokens > 0 and first.elapsed_s > 0
    assert second.tool_calls[0].name == "read_file"
    assert report.totals.turns == 2 and report.totals.tool_calls == 4
    assert report.totals.usage.calls == first.usage.calls + second.usage.calls
    assert [r["prompt"] for r in records(out)] == [first.prompt, second.prompt]


def test_parameters_and_a_failing_cell(tmp_path: Path):
    nb = notebook(tmp_path / "divide.ipynb", ("divisor = 0", ["parameters"]), "print('result', 10 / divisor)")
    passed = blitz_run(nb, "-p", "divisor", "4", "-o", tmp_path / "ok.ipynb", home=tmp_path)
    assert passed.returncode == 0, passed.stderr
    assert "result 2.5" in json.dumps(nbformat.read(tmp_path / "ok.ipynb", as_version=4).cells[-1].outputs)
    failed = blitz_run(nb, "--report", tmp_path / "r.json", home=tmp_path)
    assert failed.returncode == 1, failed.stderr
    assert "ZeroDivisionError" in failed.stderr
    report = RunReport.model_validate_json((tmp_path / "r.json").read_text())
    assert report.outcome == "cell_failed"
    assert report.failed_cell is not None and report.failed_cell.ename == "ZeroDivisionError"
    assert report.output is None


def test_the_session_budget_stops_the_run_before_a_call_that_would_pass_it(tmp_path: Path):
    """Each answer costs $0.20 (2,000 prompt tokens at $100/M); the next call's prompt is
    estimated at its real size, system prompt and tool schemas included (≈ $0.35): with $0.70
    the third call would pass the budget, so it is never made."""
    # the user's own price (a workspace's blitz.toml may not introduce one without trust)
    (tmp_path / ".blitz").mkdir()
    (tmp_path / ".blitz" / "config.toml").write_text("[prices.scripted]\ninput = 100.0\noutput = 0.0\n")
    spend = {"usage": {"prompt_tokens": 2000, "completion_tokens": 1}}
    script(
        tmp_path / "script.json",
        {"text": "First answer.", **spend},
        {"text": "Second answer.", **spend},
        {"text": "Third.", **spend},
    )
    nb = notebook(
        tmp_path / "budget.ipynb",
        "%load_ext blitz_kernel",
        "%%blitz\nFirst question.",
        "%%blitz\nSecond question.",
        "%%blitz\nThird question.",
        "print('never reached')",
    )
    out = tmp_path / "out.ipynb"
    done = blitz_run(
        nb,
        "--model",
        "scripted:script.json",
        "--budget",
        "0.7",
        "-o",
        out,
        "--report",
        tmp_path / "r.json",
        home=tmp_path,
    )
    assert done.returncode == 3, done.stderr
    report = RunReport.model_validate_json((tmp_path / "r.json").read_text())
    assert report.outcome == "limit" and report.budget_usd == 0.7
    assert report.failed_cell is not None
    assert report.failed_cell.headline.startswith("Blitz turn stopped (max_cost):")
    assert "the next call would cost about" in report.failed_cell.headline
    assert [t.stop_reason for t in report.turns] == ["end_turn", "end_turn", "max_cost"]
    assert report.totals.usage.priced and report.totals.usage.cost_usd == pytest.approx(0.4, abs=1e-6)
    assert {t.session for t in report.turns} == {"budget"}  # one session: one budget
    assert "never reached" not in json.dumps(nbformat.read(out, as_version=4).cells[-1].outputs)


def test_approve_allow_lets_mutating_tools_run_and_deny_is_the_default(tmp_path: Path):
    script(
        tmp_path / "script.json",
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": "hi"}}]},
        {"text": "Done."},
    )
    nb = notebook(tmp_path / "write.ipynb", "%load_ext blitz_kernel", "%%blitz\nWrite note.txt.")
    denied = blitz_run(nb, "--model", "scripted:script.json", "--report", tmp_path / "d.json", home=tmp_path)
    assert denied.returncode == 0, denied.stderr
    assert not (tmp_path / "note.txt").exists()
    [call] = RunReport.model_validate_json((tmp_path / "d.json").read_text()).turns[0].tool_calls
    assert call.status == "denied"
    allowed = blitz_run(nb, "--model", "scripted:script.json", "--approve", "allow", home=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert (tmp_path / "note.txt").read_text() == "hi"


def test_a_turn_blocked_by_a_hook_exits_4(tmp_path: Path):
    """A real prompt_submit hook in the user's own config blocks the turn: nothing is
    recorded, the cell fails with stop reason `blocked`, and the run exits 4."""
    (tmp_path / ".blitz").mkdir(exist_ok=True)
    (tmp_path / ".blitz" / "config.toml").write_text(
        '[[hooks.prompt_submit]]\ncommand = "echo no prompts about payroll >&2; exit 2"\n'
    )
    script(tmp_path / "script.json", {"text": "never asked"})
    nb = notebook(tmp_path / "blocked.ipynb", "%load_ext blitz_kernel", "%%blitz\nSummarise the payroll.")
    done = blitz_run(nb, "--model", "scripted:script.json", "--report", tmp_path / "r.json", home=tmp_path)
    assert done.returncode == 4, done.stderr
    assert "Blitz turn stopped (blocked): blocked by prompt_submit hook: no prompts about payroll" in done.stderr
    report = RunReport.model_validate_json((tmp_path / "r.json").read_text())
    assert report.outcome == "blocked"


def test_a_cell_past_the_timeout_exits_3(tmp_path: Path):
    nb = notebook(tmp_path / "slow.ipynb", "import time\ntime.sleep(60)", "print('after')")
    done = blitz_run(nb, "--timeout", "2", "--report", tmp_path / "r.json", home=tmp_path)
    assert done.returncode == 3, done.stderr
    report = RunReport.model_validate_json((tmp_path / "r.json").read_text())
    assert report.outcome == "limit" and report.failed_cell is not None
    assert report.failed_cell.ename == "CellTimeoutError"


def test_bad_usage_exits_2(tmp_path: Path):
    missing = blitz_run(tmp_path / "nope.ipynb", home=tmp_path)
    assert missing.returncode == 2 and "blitz run: no notebook at" in missing.stderr
    wrong = blitz_run(tmp_path / "nope.ipynb", "--approve", "ask", home=tmp_path)
    assert wrong.returncode == 2 and "invalid choice: 'ask'" in wrong.stderr
    nb = notebook(tmp_path / "fine.ipynb", "x = 1")
    no_kernel = blitz_run(nb, "--kernel", "no-such-kernel", home=tmp_path)
    assert no_kernel.returncode == 2 and "blitz run: no kernel named 'no-such-kernel'" in no_kernel.stderr
    budget = blitz_run(nb, "--budget", "0", home=tmp_path)
    assert budget.returncode == 2 and "--budget must be a finite, positive amount" in budget.stderr


def test_the_console_script_is_the_same_command():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["blitz"] == "blitz_kernel.__main__:main"
    from blitz_kernel.__main__ import main

    assert main(["run", "/nonexistent/x.ipynb"]) == 2


def test_one_cell_numbering_in_the_progress_the_report_and_the_failed_cell(tmp_path: Path):
    """A failing run with `-p` parameters: papermill injects a cell and, once a cell fails, adds
    error notes to the output; `[cell N]`, `turns[].cell_index` and `failed_cell.cell_index`
    still all name the failing `%%blitz` cell by its index in the notebook as given (4)."""
    script(tmp_path / "script.json", {"error": "bad_request", "message": "the model refused"})
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A failing run"),
        nbformat.v4.new_code_cell("month = 'jan'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("%load_ext blitz_kernel"),
        nbformat.v4.new_markdown_cell("The turn:"),
        nbformat.v4.new_code_cell("%%blitz\nSummarise {month}."),
        nbformat.v4.new_code_cell("print('never reached')"),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "failing.ipynb")
    done = blitz_run(
        tmp_path / "failing.ipynb",
        "-p",
        "month",
        "feb",
        "--model",
        "scripted:script.json",
        "-o",
        tmp_path / "out.ipynb",
        "--report",
        tmp_path / "r.json",
        home=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert '[parameters] # Parameters month = "feb"' in done.stderr
    assert "[cell 4] %%blitz · Summarise {month}." in done.stderr
    assert "[cell 5]" not in done.stderr
    assert "stopped at cell 4: " in done.stderr
    report = RunReport.model_validate_json((tmp_path / "r.json").read_text())
    assert [turn.cell_index for turn in report.turns] == [4]
    assert report.failed_cell is not None and report.failed_cell.cell_index == 4
    assert "cell's position in the notebook as given, counting from 0" in json.dumps(RunReport.model_json_schema())
