"""No reference in the code points at something a reader of the repository cannot open.

Why: the design notes the project was built from, their rule ids and the issue threads are not
in the repository, so a comment that cites them tells a reader nothing. Comments, docstrings
and strings must say the behaviour itself or name a `docs/` page, and every `docs/*.md` page
they name must exist. Names of test functions may keep an old rule id (they are identifiers,
and the scan skips code). The lint step runs this file.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("blitz_kernel", "tests", "bench", "scripts", "notebooks", "labextension/src", "labextension/test")
"""Code: its comments, docstrings and strings may name docs pages, and those must exist."""
USER_PAGES = ("README.md", "docs")
"""Pages for users: they link to each other (scripts/check_docs.py), but cite nothing either."""
SKIPPED_FOLDERS = {"__pycache__", "node_modules", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

FORBIDDEN: dict[str, re.Pattern[str]] = {
    "a design file outside the repository": re.compile(
        r"\b(?:ENGINE|INTERFACE|ARCHITECTURE|KERNEL|TESTING|STYLE)\.md\b"
    ),
    "an issue number": re.compile(r"(?i)\bissues? #?\d+"),
    "a section number": re.compile(r"§ ?\d"),
    "a rule id": re.compile(r"\b(?:ENG|WS|GR)-\d+\b"),
}
DOCS_PAGE = re.compile(r"\bdocs/([\w.-]+?\.md)\b")


def source_files(root: Path, tops: tuple[str, ...] = SCANNED) -> Iterator[Path]:
    """Every file under `tops` of `root` (a folder or one file), caches and node_modules left out."""
    for top in tops:
        paths = [root / top] if (root / top).is_file() else sorted((root / top).rglob("*"))
        for path in paths:
            if path.is_file() and not SKIPPED_FOLDERS.intersection(path.relative_to(root).parts):
                yield path


def read_text(path: Path) -> str | None:
    """The file's text, or None for a binary file (an image, a database)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else text


def python_prose(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(comments and docstrings, other string literals) of a Python file, each with its line.

    Code (names of functions, variables, attributes) is in neither, so a test named after a rule
    id passes. Other strings are kept apart because tests may hold a missing page as data."""
    tree = ast.parse(text)
    docstrings: list[tuple[int, str]] = []
    docstring_nodes: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else []:
            value = statement.value if isinstance(statement, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.append((statement.lineno, value.value))
                docstring_nodes.add(id(value))
    strings = [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstring_nodes
    ]
    comments = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    ]
    return comments + docstrings, strings


@functools.cache
def prose(path: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(prose that names docs pages, other strings) of a file; a file that is not Python is all
    prose, and a binary one has none."""
    text = read_text(path)
    if text is None:
        return [], []
    if path.suffix == ".py":
        return python_prose(text)
    return list(enumerate(text.splitlines(), start=1)), []


def at_line(start: int, piece: str, match: re.Match[str]) -> int:
    """The line of `match` inside `piece`, which starts on line `start`."""
    return start + piece.count("\n", 0, match.start())


def dangling_citations(root: Path) -> list[str]:
    """`path:line: what was found` for every citation of something outside the repository."""
    problems: list[str] = []
    for path in source_files(root, SCANNED + USER_PAGES):
        described, strings = prose(path)
        for start, piece in sorted(described + strings):
            for what, pattern in FORBIDDEN.items():
                for match in pattern.finditer(piece):
                    line = at_line(start, piece, match)
                    problems.append(f"{path.relative_to(root)}:{line}: {what} ({match.group()!r})")
    return problems


def missing_docs_pages(root: Path) -> list[str]:
    """`path:line: docs/<page>.md does not exist` for every page a comment or docstring names."""
    problems: list[str] = []
    for path in source_files(root):
        described, _ = prose(path)
        for start, piece in sorted(described):
            for match in DOCS_PAGE.finditer(piece):
                if not (root / "docs" / match.group(1)).is_file():
                    line = at_line(start, piece, match)
                    problems.append(f"{path.relative_to(root)}:{line}: {match.group()} does not exist")
    return problems


def test_no_citation_of_what_the_repository_does_not_hold() -> None:
    assert dangling_citations(ROOT) == [], "say the behaviour itself, or name a docs/ page"


def test_every_docs_page_the_code_names_exists() -> None:
    assert missing_docs_pages(ROOT) == []


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_scan_finds_each_kind_of_citation_and_skips_code(tmp_path: Path) -> None:
    # Built from pieces, so this file itself holds none of what it looks for.
    rule, design, issue, section = "ENG" + "-24", "ENGINE" + ".md", "Issue" + " 15", "\u00a7" + "3"
    write(
        tmp_path,
        "blitz_kernel/mod.py",
        f'"""Module docstring ({design})."""\n\n'
        f"def test_{rule.replace('-', '')}_name() -> None:\n"
        f'    """{issue}: a docstring."""\n'
        f"    x = 1  # a comment ({rule})\n"
        f'    y = "a string, {section}"\n'
        f"    return {design}\n",
    )
    write(tmp_path, "scripts/run.sh", f"# see {design}\necho ok\n")
    write(tmp_path, "README.md", f"# Project\n\nAs {issue} asked.\n")
    write(tmp_path, "docs/page.md", f"A rule ({rule}).\n")
    write(tmp_path, "tests/picture.png", f"\0PNG {rule}")
    assert dangling_citations(tmp_path) == [
        f"blitz_kernel/mod.py:1: a design file outside the repository ({design!r})",
        f"blitz_kernel/mod.py:4: an issue number ({issue!r})",
        f"blitz_kernel/mod.py:5: a rule id ({rule!r})",
        f"blitz_kernel/mod.py:6: a section number ({section!r})",
        f"scripts/run.sh:1: a design file outside the repository ({design!r})",
        f"README.md:3: an issue number ({issue!r})",
        f"docs/page.md:1: a rule id ({rule!r})",
    ]


def test_a_missing_docs_page_is_found_in_comments_and_docstrings(tmp_path: Path) -> None:
    write(tmp_path, "docs/there.md", "# There\n")
    write(
        tmp_path,
        "tests/test_x.py",
        '"""Cites docs/there.md and,\nbelow, docs/gone.md."""\n\n'
        "# and docs/lost.md#anchor in a comment\n"
        'DATA = "[link](docs/fixture.md): test data, not a reference"\n',
    )
    write(tmp_path, "blitz_kernel/static/view.js", "// docs/there.md and docs/away.md\n")
    assert missing_docs_pages(tmp_path) == [
        "blitz_kernel/static/view.js:1: docs/away.md does not exist",
        "tests/test_x.py:2: docs/gone.md does not exist",
        "tests/test_x.py:4: docs/lost.md does not exist",
    ]


def main() -> int:
    """The lint step's check: one line per problem, exit status 1 when there is any."""
    problems = dangling_citations(ROOT) + missing_docs_pages(ROOT)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
