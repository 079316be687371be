"""scripts/check_docs.py on a small fake checkout: the README's commands must exist, and every
relative link of README.md and docs/*.md must resolve (anchors included)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_docs.py"
FENCE = "```"


def load_checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_docs"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


check_docs = load_checker()


def checkout(root: Path, readme: str, docs: dict[str, str] | None = None) -> Path:
    """A fake checkout: a package with a __main__, two scripts, a test file, a picture."""
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "demo").write_text("#!/bin/sh\n")
    (root / "scripts" / "test").write_text("#!/bin/sh\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_real.py").write_text("")
    (root / "pkg").mkdir()
    (root / "pkg" / "__main__.py").write_text("")
    (root / "docs").mkdir()
    (root / "docs" / "shot.png").write_bytes(b"")
    (root / "pyproject.toml").write_text('[project]\nname = "pkg"\n[project.scripts]\npkgcli = "pkg:main"\n')
    (root / "README.md").write_text(readme)
    for name, text in (docs or {}).items():
        (root / "docs" / name).write_text(text)
    return root


GOOD_README = f"""# Pkg

See [the guide](docs/guide.md#first-steps), ![shot](docs/shot.png), [home](https://example.org),
[below](#the-two-commands) and <img src="docs/shot.png" alt="shot">.

## The two commands

{FENCE}bash
./scripts/demo    # a comment, and a continued comment
                  # on the next line
./scripts/test tests/test_real.py::test_x -x
export PKG_MODEL=openai/x PKG_URL=http://localhost:8000/v1
python -m pkg install --user && .venv/bin/jupyter lab build/demo/
pip install -e '.[dev]' \\
    --quiet
pkgcli run notebook.ipynb -o out/run.ipynb
cat > pkg/settings.toml <<'EOF'
not a command at all
EOF
{FENCE}

{FENCE}console
$ ./scripts/demo
== output that is not a command
{FENCE}

{FENCE}
an unlabelled block is output: ./scripts/gone is not checked
{FENCE}

Inline code is not a link: `[x](docs/missing.md)`.
"""

GUIDE = """# Guide

## First steps

Back to the [README](../README.md#pkg) and the [picture](shot.png).
"""


def test_a_readme_whose_commands_and_links_exist_passes(tmp_path: Path) -> None:
    root = checkout(tmp_path, GOOD_README, {"guide.md": GUIDE})
    assert check_docs.check(root) == []


def test_each_missing_command_file_module_and_link_is_named_with_its_line(tmp_path: Path) -> None:
    readme = f"""# Pkg

[guide](docs/guide.md) [gone](docs/gone.md) [bad anchor](docs/guide.md#nowhere) [self](#nope)

{FENCE}bash
./scripts/missing --flag
pytest tests/test_gone.py
python -m pkg.absent
frobnicate-the-widgets now
.venv/bin/not-installed
{FENCE}
"""
    root = checkout(tmp_path, readme, {"guide.md": "# Guide\n\n![old](old.png)\n"})
    assert [str(problem) for problem in check_docs.check(root)] == [
        "README.md:6: ./scripts/missing does not exist in the checkout",
        "README.md:7: tests/test_gone.py does not exist in the checkout",
        "README.md:8: python -m pkg.absent: no such module in the checkout",
        "README.md:9: command frobnicate-the-widgets exists neither in the checkout nor on PATH",
        "README.md:10: .venv/bin/not-installed: the setup installs no not-installed into .venv/bin",
        "README.md:3: link docs/gone.md names a file that does not exist",
        "README.md:3: link docs/guide.md#nowhere: no heading with the anchor #nowhere",
        "README.md:3: link #nope: no heading with the anchor #nope",
        "docs/guide.md:3: link old.png names a file that does not exist",
    ]


def test_the_command_line_prints_each_problem_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = checkout(tmp_path, "# Pkg\n\n[gone](docs/gone.md)\n")
    assert check_docs.main(["--root", str(root)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "README.md:3: link docs/gone.md names a file that does not exist"
    assert out[-1].startswith("check_docs: 1 problem(s)")
    (root / "docs" / "gone.md").write_text("# Gone\n")
    assert check_docs.main(["--root", str(root)]) == 0


def test_github_anchors_of_headings() -> None:
    assert check_docs.slug("`blitz run`: notebooks with agent cells, unattended") == (
        "blitz-run-notebooks-with-agent-cells-unattended"
    )
    assert check_docs.slug("Point the agent at things — references") == "point-the-agent-at-things--references"
