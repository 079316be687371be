"""The test command's runner: every step in turn, each with a heading, its counts and its duration.

Why a runner and not `set -e`: a failing tier must not hide the tiers after it. Every step runs,
whatever happened before, and the summary names each one as passed, failed or not run. The pytest
tiers write a JUnit XML report, read back here for the counts (pytest's own, not a parse of its
terminal output). The last line is `N passed, N failed` over the pytest tiers (errors count as
failed); the exit status is 1 when any step failed.

Usage (scripts/test calls it inside the project's virtualenv):
    python scripts/tiers.py [--only STEP[,STEP...]] [PYTEST ARGS...]
Extra arguments go to every pytest tier; test paths among them (tests/unit/test_loop.py::test_x)
run in the tier that holds them, and the tiers that hold none are not run.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
NO_TESTS_COLLECTED = 5
"""pytest's exit status when a selection matched no test."""
TAKES_VALUE = frozenset(
    {"-k", "-m", "-p", "-o", "-c", "-W", "-n", "--maxfail", "--deselect", "--ignore", "--timeout", "--junitxml"}
    | {"--rootdir", "--confcutdir", "--basetemp", "--durations"}
)
"""pytest options written with their value as the next argument (that value is never a test path)."""


@dataclass(frozen=True)
class Step:
    """One step of the test command: plain commands, or a pytest tier with `tests` as its paths."""

    name: str
    commands: tuple[tuple[str, ...], ...] = ()
    """Run first, each one even when an earlier one failed (lint: ruff check, then format)."""
    tests: tuple[str, ...] = ()
    """The pytest tier's default paths, relative to `cwd`; empty for a step that is no tier."""
    cwd: str = "."
    pytest_args: tuple[str, ...] = ()
    python: str = ""
    """The tier's interpreter, relative to the root (a side environment's); empty: this one. That
    tier gets this one as BLITZ_PYTHON, the environment with blitz_kernel."""


LINTED = ("blitz_kernel", "tests", "bench", "scripts", "integrations")
"""What ruff checks (integrations/jupyter-ai with its own settings: Python 3.10, Jupyter AI's floor)."""

STEPS: tuple[Step, ...] = (
    Step(
        "lint",
        commands=(
            ("ruff", "check", *LINTED),
            ("ruff", "format", "--check", "--output-format", "concise", *LINTED),
            (sys.executable, "scripts/check_docs.py"),
            (sys.executable, "tests/unit/test_no_dangling_references.py"),
        ),
    ),
    Step("mypy", commands=(("mypy",),)),
    Step("js", commands=(("bash", "scripts/js_test.sh"),)),
    Step("postgres", commands=(("bash", "scripts/postgres.sh"),)),
    Step("unit", tests=("tests/unit",)),
    Step("wire", tests=("tests/wire",)),
    Step("robustness", tests=("tests/robustness",)),
    Step("kernel", tests=("tests/kernel",)),
    # the Jupyter AI persona, in Jupyter AI's own environment (the step makes it when missing)
    Step(
        "jupyter-ai",
        commands=(("bash", "scripts/setup_jupyter_ai.sh"),),
        tests=("tests",),
        cwd="integrations/jupyter-ai",
        python=".venv-jupyter-ai/bin/python",
    ),
    Step("browser", commands=(("bash", "scripts/browser_deps.sh"),), tests=("tests/browser",)),
    Step("notebooks", tests=(".",), cwd="notebooks", pytest_args=("--nbval-lax",)),
)


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0


@dataclass
class Outcome:
    """What became of one step."""

    name: str
    status: str = "not run"
    """"passed", "failed" or "not run"."""
    seconds: float = 0.0
    counts: Counts | None = None
    """The pytest tier's counts; None for a plain step, or when pytest wrote no report."""
    notes: list[str] = field(default_factory=list)


def read_junit(path: Path) -> Counts | None:
    """The counts in a pytest JUnit XML report (None when it is missing or unreadable)."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    counts = Counts()
    for suite in suites:
        total = int(suite.get("tests", 0))
        failed, errors, skipped = (int(suite.get(key, 0)) for key in ("failures", "errors", "skipped"))
        counts.failed += failed
        counts.errors += errors
        counts.skipped += skipped
        counts.passed += total - failed - errors - skipped
    return counts


def split_paths(args: Sequence[str], cwd: Path) -> tuple[list[str], list[str]]:
    """(test paths, other pytest arguments): a path is an argument that names an existing file
    or folder, with or without a `::test` suffix; the value of an option never does."""
    paths, others = [], []
    previous = ""
    for arg in args:
        candidate = arg.split("::", 1)[0]
        is_value = previous in TAKES_VALUE
        if not arg.startswith("-") and not is_value and candidate and (cwd / candidate).exists():
            paths.append(arg)
        else:
            others.append(arg)
        previous = arg
    return paths, others


def tier_paths(step: Step, paths: Sequence[str], cwd: Path) -> list[str]:
    """Of the test paths given, those inside this tier (relative to the tier's own folder)."""
    chosen = []
    tier_dir = (ROOT / step.cwd).resolve()
    roots = [(tier_dir / t).resolve() for t in step.tests]
    for path in paths:
        name, _, rest = path.partition("::")
        target = (cwd / name).resolve()
        for root in roots:
            if target == root or target.is_relative_to(root) or root.is_relative_to(target):
                shown = os.path.relpath(target if target.is_relative_to(root) else root, tier_dir)
                chosen.append(shown + ("::" + rest if rest else ""))
                break
    return chosen


def label(command: Sequence[str]) -> str:
    """A short name for a step's command in its notes: `ruff format`, `scripts/check_docs.py`."""
    if command[0] in (sys.executable, "bash") and len(command) > 1:
        return command[1]
    return " ".join(command[:2]) if command[0] == "ruff" else command[0]


def run_command(command: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> int:
    print(f"$ {shlex.join(command)}", flush=True)
    try:
        return subprocess.run(list(command), cwd=cwd, env=env, check=False).returncode
    except FileNotFoundError as error:
        print(f"cannot run {command[0]}: {error.strerror}", flush=True)
        return 127


def run_step(step: Step, extra: Sequence[str], paths: Sequence[str] | None, reports: Path) -> Outcome:
    """Run `step`: its commands, then (a tier) pytest on its paths with the extra arguments."""
    outcome = Outcome(step.name)
    started = time.monotonic()
    print(f"\n==== {step.name} ====", flush=True)
    failed = False
    for command in step.commands:
        if run_command(command, ROOT) != 0:
            failed = True
            outcome.notes.append(f"{label(command)} failed")
    if step.tests:
        junit = reports / f"{step.name}.xml"
        selected = list(paths) if paths is not None else list(step.tests)
        python, env = (sys.executable, None) if not step.python else (str(ROOT / step.python), side_env())
        pytest = [python, *PYTEST[1:], *step.pytest_args, f"--junitxml={junit}", "-q", "-rfE", *extra, *selected]
        code = run_command(pytest, ROOT / step.cwd, env)
        outcome.counts = read_junit(junit)
        if code == NO_TESTS_COLLECTED and (extra or paths):
            outcome.notes.append("no test matched the selection")
        elif code != 0:
            failed = True
            if outcome.counts is None or (outcome.counts.failed + outcome.counts.errors == 0):
                outcome.notes.append(f"pytest exited with {code}")
    outcome.status = "failed" if failed else "passed"
    outcome.seconds = time.monotonic() - started
    print(f"---- {step.name}: {outcome.status} · {describe(outcome)}", flush=True)
    return outcome


def side_env() -> dict[str, str]:
    """A side environment's tier: this environment's variables, and this interpreter as BLITZ_PYTHON."""
    return {**os.environ, "BLITZ_PYTHON": sys.executable}


def describe(outcome: Outcome) -> str:
    parts = []
    if outcome.counts is not None:
        c = outcome.counts
        parts.append(f"{c.passed} passed, {c.failed} failed, {c.skipped} skipped, {c.errors} errors")
    parts.extend(outcome.notes)
    parts.append(f"{outcome.seconds:.1f} s")
    return " · ".join(parts)


def summary(outcomes: Sequence[Outcome]) -> str:
    """The table of every step, and the final `N passed, N failed` line over the pytest tiers."""
    lines = [
        "",
        "==== summary ====",
        f"{'step':<12}{'status':<9}{'passed':>8}{'failed':>8}{'skipped':>9}{'errors':>8}{'time':>10}  notes",
    ]
    for outcome in outcomes:
        c = outcome.counts
        numbers = (
            f"{c.passed:>8}{c.failed:>8}{c.skipped:>9}{c.errors:>8}"
            if c is not None
            else f"{'-':>8}{'-':>8}{'-':>9}{'-':>8}"
        )
        took = f"{outcome.seconds:.1f} s" if outcome.status != "not run" else "-"
        lines.append(f"{outcome.name:<12}{outcome.status:<9}{numbers}{took:>10}  {'; '.join(outcome.notes)}".rstrip())
    counted = [o.counts for o in outcomes if o.counts is not None]
    passed = sum(c.passed for c in counted)
    failed = sum(c.failed + c.errors for c in counted)
    bad = [o.name for o in outcomes if o.status == "failed"]
    skipped = [o.name for o in outcomes if o.status == "not run"]
    if bad:
        lines.append(f"failed: {', '.join(bad)}")
    if skipped:
        lines.append(f"not run: {', '.join(skipped)}")
    lines.append(f"{passed} passed, {failed} failed")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/test", description="Run every test step; extra arguments go to pytest.", allow_abbrev=False
    )
    names = [step.name for step in STEPS]
    parser.add_argument("--only", help=f"comma-separated steps to run (of {', '.join(names)}); the rest are not run")
    options, extra = parser.parse_known_args(argv)
    only = set(names) if not options.only else {name.strip() for name in options.only.split(",") if name.strip()}
    unknown = only - set(names)
    if unknown:
        parser.error(f"--only: unknown step {', '.join(sorted(unknown))} (known: {', '.join(names)})")
    cwd = Path.cwd()
    paths, extra = split_paths(extra, cwd)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="blitz-tiers-") as folder:
        for step in STEPS:
            chosen: list[str] | None = None
            if paths:
                chosen = tier_paths(step, paths, cwd) if step.tests else []
            if step.name not in only or (paths and step.tests and not chosen):
                outcome = Outcome(step.name, notes=["not selected"])
            else:
                try:
                    outcome = run_step(step, extra, chosen if paths else None, Path(folder))
                except KeyboardInterrupt:
                    outcomes.append(Outcome(step.name, status="failed", notes=["interrupted"]))
                    break
            outcomes.append(outcome)
    done = {o.name for o in outcomes}
    outcomes += [Outcome(step.name, notes=["interrupted before it"]) for step in STEPS if step.name not in done]
    print(summary(outcomes), flush=True)
    interrupted = any("interrupted" in " ".join(o.notes) for o in outcomes)
    return 1 if interrupted or any(o.status == "failed" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
