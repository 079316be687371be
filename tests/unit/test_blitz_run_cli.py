"""`blitz run`'s pure parts: exit status from a failing cell, `-p` values, progress lines.
(The runs themselves are in tests/kernel/test_blitz_run.py.)"""

from __future__ import annotations

import io

import pytest

from blitz_kernel.cli.report import EXIT_CODES
from blitz_kernel.cli.run import SESSION_OPTION, Progress, build_parser, classify, parameter_value


@pytest.mark.parametrize(
    ("traceback", "outcome"),
    [
        (["\x1b[0;31mBlitz turn stopped (max_cost):\x1b[0m session budget of $1.00 is spent"], "limit"),
        (["\x1b[0;31mBlitz turn stopped (max_turns):\x1b[0m 5 model calls"], "limit"),
        (["Blitz turn stopped (timeout): turn timed out after 3 s"], "limit"),
        (["Blitz turn stopped (watchdog): the same call 5 times"], "limit"),
        (["Blitz turn stopped (blocked): a hook said no"], "blocked"),
        (["Blitz turn stopped (error): the model failed"], "cell_failed"),
        (["---------", "ZeroDivisionError   Traceback", "ZeroDivisionError: division by zero"], "cell_failed"),
    ],
)
def test_exit_status_from_the_failing_cell(traceback: list[str], outcome: str):
    assert classify("TurnFailedError", "x", traceback)[0] == outcome


def test_the_exit_codes_are_the_documented_ones():
    assert EXIT_CODES == {"ok": 0, "cell_failed": 1, "usage": 2, "limit": 3, "blocked": 4}


def test_headlines_are_one_line():
    assert classify(
        "TurnFailedError", "over budget", ["\x1b[0;31mBlitz turn stopped (max_cost):\x1b[0m over budget"]
    ) == ("limit", "Blitz turn stopped (max_cost): over budget")
    assert classify("ValueError", "bad\nsecond line", ["..."]) == ("cell_failed", "ValueError: bad")


def test_parameter_values_convert_like_papermill():
    assert [parameter_value(v) for v in ("3", "2.5", "True", "None", "abc", "1e3")] == [
        3,
        2.5,
        True,
        None,
        "abc",
        1000.0,
    ]


def test_defaults():
    args = build_parser().parse_args(["nb.ipynb"])
    assert (args.approve, args.budget, args.output, args.parameter) == ("deny", None, None, [])


def test_progress_shows_only_an_agent_cells_turn_lines_even_split_across_writes():
    out = io.StringIO()
    progress = Progress(out)
    progress.cell_started({"cell_type": "code", "source": "%%blitz -s x\nDo it.\nNow."}, 3)
    progress.write("📎 variable @df (120 chars)\n⚙ run_py")
    progress.write('thon(code="1")\n  ↳ run_python: result: 1\nsome print from the tool\n— m · 1 calls')
    progress.cell_completed({"cell_type": "code", "metadata": {"papermill": {"duration": 1.25}}, "outputs": []})
    progress.cell_started({"cell_type": "code", "source": "print('⚙ not a turn')"}, 4)
    progress.write("⚙ not a turn\n")
    assert out.getvalue().splitlines() == [
        "[cell 3] %%blitz -s x · Do it. Now.",
        "    📎 variable @df (120 chars)",
        '    ⚙ run_python(code="1")',
        "      ↳ run_python: result: 1",
        "    — m · 1 calls",
        "    ✓ 1.2 s",
        "[cell 4] print('⚙ not a turn')",
    ]


@pytest.mark.parametrize(
    ("first_line", "own"),
    [
        ("%%blitz -s other", True),
        ("%%blitz --max-turns 3 --session=other", True),
        ("%%blitz --session other", True),
        ("%%blitz --approve allow", False),
        ("%%blitz", False),
        ("x = '%%blitz -s other'", False),
    ],
)
def test_cells_with_their_own_session_are_noticed(first_line: str, own: bool):
    assert bool(SESSION_OPTION.search(first_line + " ")) is own


@pytest.mark.parametrize(
    ("argv0", "usage"),
    [("/venv/bin/blitz", "usage: blitz "), ("/repo/blitz_kernel/__main__.py", "usage: python -m blitz_kernel ")],
)
def test_the_help_names_the_command_it_was_called_by(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv0: str, usage: str
):
    from blitz_kernel.__main__ import main

    monkeypatch.setattr("sys.argv", [argv0, "--help"])
    with pytest.raises(SystemExit):
        main()
    out = capsys.readouterr().out
    assert out.startswith(usage), out
    assert "%%blitz cells unattended" in out


def test_store_reaches_the_kernel_and_every_worker(tmp_path):
    from pathlib import Path

    from blitz_kernel.cli.fanout import common_options
    from blitz_kernel.cli.run import settings_environment

    args = build_parser().parse_args(["a.ipynb", "b.ipynb", "--store", "sqlite:///team.db", "-j", "2"])
    assert settings_environment(args, Path("a.ipynb"))["BLITZ_STORE_URL"] == "sqlite:///team.db"
    options = common_options(args)
    assert options[options.index("--store") + 1] == "sqlite:///team.db"
    assert "--budget" not in options  # the workers spend from the shared ledger, not a budget each
