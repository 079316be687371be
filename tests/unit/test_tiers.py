"""scripts/tiers.py, the test command's runner, on tiny fake tiers: every step runs even after
one failed, each prints its counts, and the summary ends with `N passed, N failed`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "tiers.py"


def load_runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tiers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tiers"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


tiers = load_runner()

FAILING_TIER = """
import pytest

def test_one(): pass
def test_two(): pass
def test_broken(): assert False
@pytest.mark.skip(reason="shown as skipped")
def test_skipped(): pass
"""


@pytest.fixture
def fake_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout with a failing lint command, a failing tier, then a passing one."""
    (tmp_path / "first").mkdir()
    (tmp_path / "first" / "test_first.py").write_text(FAILING_TIER)
    (tmp_path / "second").mkdir()
    (tmp_path / "second" / "test_second.py").write_text("def test_fine(): pass\n")
    steps = (
        tiers.Step("lint", commands=((sys.executable, "-c", "raise SystemExit(3)"),)),
        tiers.Step("first", tests=("first",)),
        tiers.Step("second", tests=("second",)),
    )
    monkeypatch.setattr(tiers, "ROOT", tmp_path)
    monkeypatch.setattr(tiers, "STEPS", steps)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_failing_step_does_not_stop_the_later_ones(fake_checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tiers.main([]) == 1
    out = capsys.readouterr().out
    assert "==== lint ====" in out and "==== first ====" in out and "==== second ====" in out
    assert "---- first: failed · 2 passed, 1 failed, 1 skipped, 0 errors · " in out
    assert "---- second: passed · 1 passed, 0 failed, 0 skipped, 0 errors · " in out
    summary = out[out.index("==== summary ====") :].splitlines()
    rows = {line.split()[0]: line.split()[1:6] for line in summary[2:5]}
    assert rows == {
        "lint": ["failed", "-", "-", "-", "-"],
        "first": ["failed", "2", "1", "1", "0"],
        "second": ["passed", "1", "0", "0", "0"],
    }
    assert "failed: lint, first" in summary
    assert summary[-1] == "3 passed, 1 failed"


def test_a_test_path_runs_only_its_tier(fake_checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tiers.main(["--only", "first,second", "second/test_second.py::test_fine"]) == 0
    out = capsys.readouterr().out
    assert "==== first ====" not in out and "==== lint ====" not in out
    summary = out[out.index("==== summary ====") :].splitlines()
    assert summary[-2:] == ["not run: lint, first", "1 passed, 0 failed"]


def test_a_selection_that_matches_nothing_in_a_tier_is_no_failure(
    fake_checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tiers.main(["--only", "first,second", "-k", "fine"]) == 0
    out = capsys.readouterr().out
    assert "---- first: passed · 0 passed, 0 failed, 0 skipped, 0 errors · no test matched the selection" in out
    assert out.splitlines()[-1] == "1 passed, 0 failed"


def test_an_unknown_step_is_a_usage_error(fake_checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        tiers.main(["--only", "lint,nope"])
    assert raised.value.code == 2
    assert "--only: unknown step nope (known: lint, first, second)" in capsys.readouterr().err


def test_counts_are_read_from_the_junit_report(tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    report.write_text(
        '<?xml version="1.0"?><testsuites><testsuite name="pytest" errors="1" failures="2" skipped="3" tests="10">'
        "</testsuite></testsuites>"
    )
    assert tiers.read_junit(report) == tiers.Counts(passed=4, failed=2, skipped=3, errors=1)
    assert tiers.read_junit(tmp_path / "missing.xml") is None


def test_a_side_environments_tier_runs_in_its_interpreter_with_blitzs_as_blitz_python(
    fake_checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    side = fake_checkout / "side" / "bin"
    side.mkdir(parents=True)
    (side / "python").symlink_to(sys.executable)
    (fake_checkout / "third").mkdir()
    (fake_checkout / "third" / "test_side.py").write_text(
        "import os, sys\n"
        "def test_where():\n"
        f"    assert sys.executable.endswith('side/bin/python') and os.environ['BLITZ_PYTHON'] == {sys.executable!r}\n"
    )
    tiers.STEPS = (tiers.Step("side", tests=("third",), python="side/bin/python"),)
    assert tiers.main([]) == 0
    assert "---- side: passed · 1 passed, 0 failed, 0 skipped, 0 errors · " in capsys.readouterr().out
