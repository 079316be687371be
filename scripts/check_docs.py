"""Checks the README and docs/ against the checkout: commands that exist, links that resolve.

Why: a newcomer follows the README to the letter, and a renamed script or a moved page turns
its first command into an error. Two checks, run by the test command's lint step:

- every command line of a shell code block in README.md (```bash, sh, shell, console) names a
  command that exists: a file of the checkout (`./scripts/demo`), one the setup makes
  (`.venv/bin/jupyter`), the project's own console script, or a program on PATH; and a path
  argument into the checkout (`pytest tests/unit/test_loop.py`) names a file that is there;
- every relative link or image of README.md and docs/*.md (Markdown or HTML) names a file
  that exists, and a `#anchor` into a Markdown page names one of its headings.

Usage: python scripts/check_docs.py [--root DIR]; prints one line per problem
(`README.md:12: ...`) and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import sys
import tomllib
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SHELL_LANGUAGES = {"bash", "sh", "shell", "console", "zsh"}
BUILTINS = {
    "cd", "export", "source", ".", "echo", "set", "unset", "exit", "true", "false", "test", "[", "read",
    "alias", "eval", "exec", "printf", "pwd", "pushd", "popd", "wait", "trap", "ulimit", "umask", "type",
}  # fmt: skip
"""Shell built-ins: they exist wherever the shell does."""
SETUP_TOOLS = {"python", "python3", "pip", "pip3", "jupyter", "pytest", "ipython", "ruff", "mypy", "papermill"}
"""What the project's setup installs into .venv/bin (scripts/setup.sh): there after setup."""
KNOWN_PROGRAMS = {"git", "npm", "npx", "node", "sudo", "apt-get", "apt", "uv", "pipx", "bash", "sh", "docker"}
"""Programs a reader is expected to have, named even where this machine lacks them."""
PREFIXES = {"sudo", "env", "time", "nohup", "exec", "command"}
"""Words that run the command after them (`sudo apt-get ...`, `env X=1 cmd`)."""
MADE_BY_RUNS = ("build/", "dist/", ".venv/", ".blitz/", "node_modules/")
"""Folders the setup, the demo or a run creates: a path in them need not exist in a checkout."""
OUTPUT_OPTIONS = {"-o", "--out", "--output", "--report", ">", ">>", "2>", "--prefix", "--basetemp"}
"""Options whose value is something the command writes, so it need not exist beforehand."""
SEPARATORS = {"&&", "||", ";", "|", "&"}

FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
MARKDOWN_LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_LINK = re.compile(r"""<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+\1")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


# -- Markdown structure -------------------------------------------------------------------------


def code_blocks(lines: list[str]) -> Iterator[tuple[str, int, str]]:
    """(language, 1-based line number, line) of every line inside a fenced code block."""
    fence: str | None = None
    language = ""
    for number, line in enumerate(lines, 1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence, language = match.group(1), match.group(2).lower()
            continue
        if match and match.group(1).startswith(fence) and not match.group(2):
            fence = None
            continue
        yield language, number, line


def prose_lines(lines: list[str], *, keep_code: bool = False) -> Iterator[tuple[int, str]]:
    """The lines outside code blocks, with their inline code spans blanked out (or kept)."""
    inside = {number for _, number, _ in code_blocks(lines)}
    for number, line in enumerate(lines, 1):
        if number in inside or FENCE.match(line):
            continue
        yield number, line if keep_code else INLINE_CODE.sub("", line)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.replace("`", "").strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown page's headings (a repeated heading gets -1, -2, ...)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose_lines(lines, keep_code=True):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    found |= set(re.findall(r"""<a\s+(?:name|id)=["']([^"']+)["']""", "\n".join(lines)))
    return found


# -- links --------------------------------------------------------------------------------------


def link_targets(lines: list[str]) -> Iterator[tuple[int, str]]:
    for number, line in prose_lines(lines):
        for pattern in (MARKDOWN_LINK, HTML_LINK):
            for match in pattern.finditer(line):
                yield number, match.group(1)
        reference = REFERENCE_LINK.match(line)
        if reference:
            yield number, reference.group(1)


def check_links(root: Path, page: Path) -> list[Problem]:
    name = page.relative_to(root).as_posix()
    lines = page.read_text(encoding="utf-8").splitlines()
    problems = []
    for number, target in link_targets(lines):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("//"):
            continue  # https:, mailto:, ... : not a file of the checkout
        location, _, anchor = target.partition("#")
        location = location.split("?", 1)[0]
        resolved = page if not location else (root / location.lstrip("/") if location.startswith("/")
                                              else page.parent / location)  # fmt: skip
        if not resolved.exists():
            problems.append(Problem(name, number, f"link {target} names a file that does not exist"))
        elif anchor and resolved.is_file() and resolved.suffix.lower() == ".md" and anchor not in anchors(resolved):
            problems.append(Problem(name, number, f"link {target}: no heading with the anchor #{anchor}"))
    return problems


# -- commands -----------------------------------------------------------------------------------


def console_scripts(root: Path) -> set[str]:
    """The console scripts pyproject.toml declares (`blitz`): installed with the project."""
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return set()
    return set(project.get("scripts", {}))


def command_lines(lines: list[str]) -> Iterator[tuple[int, str]]:
    """The command lines of the shell code blocks, continuations joined, heredoc bodies and
    console output left out."""
    pending = ""
    start = 0
    heredoc: str | None = None
    for language, number, line in code_blocks(lines):
        if language not in SHELL_LANGUAGES:
            continue
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        text = line
        if language == "console" and not pending:
            if not line.lstrip().startswith("$ "):
                continue  # output shown in a console block
            text = line.lstrip()[2:]
        if not pending:
            start = number
        if text.rstrip().endswith("\\"):
            pending += text.rstrip()[:-1] + " "
            continue
        command, pending = pending + text, ""
        marker = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", command)
        if marker:
            heredoc = marker.group(1)
        if command.strip():
            yield start, command


def words(command: str) -> list[str] | None:
    """The shell words of a command line, comments dropped (None when it does not parse)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        return list(lexer)
    except ValueError:
        return None


def simple_commands(tokens: list[str]) -> Iterator[list[str]]:
    """The commands of a pipeline or list (`a && b | c`), each as its words."""
    current: list[str] = []
    for token in tokens:
        if token in SEPARATORS:
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


class CommandChecker:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.scripts = console_scripts(root)
        self.top_level = {entry.name for entry in root.iterdir()}

    def program_problem(self, program: str) -> str | None:
        if "$" in program or program.startswith(("~", "<")):
            return None  # a variable or a placeholder the reader fills in
        if "/" in program:
            path = program.removeprefix("./")
            if path.startswith(".venv/bin/"):
                name = path.removeprefix(".venv/bin/")
                ok = name in SETUP_TOOLS | self.scripts or (self.root / path).exists()
                return None if ok else f"{program}: the setup installs no {name} into .venv/bin"
            if program.startswith("/"):
                return None if Path(program).exists() or shutil.which(program) else f"{program} does not exist"
            return None if (self.root / path).is_file() else f"{program} does not exist in the checkout"
        known = BUILTINS | SETUP_TOOLS | KNOWN_PROGRAMS | self.scripts
        if program in known or shutil.which(program):
            return None
        return f"command {program} exists neither in the checkout nor on PATH"

    def argument_problems(self, arguments: list[str]) -> Iterator[str]:
        previous = ""
        for argument in arguments:
            value = argument.split("=", 1)[1] if argument.startswith("--") and "=" in argument else argument
            output = previous in OUTPUT_OPTIONS or argument.split("=", 1)[0] in OUTPUT_OPTIONS
            previous = argument
            if output or (value.startswith("-") and value == argument):
                continue
            path = value.split("::", 1)[0].removeprefix("./")
            first = path.split("/", 1)[0]
            if "/" not in path or first not in self.top_level or any(c in path for c in "*?$<>{}~"):
                continue  # not a path into the checkout (or a pattern, a variable, a placeholder)
            if path.startswith(MADE_BY_RUNS):
                continue
            if not (self.root / path).exists():
                yield f"{value} does not exist in the checkout"

    def module_problem(self, arguments: list[str]) -> str | None:
        """`python -m blitz_kernel...`: the project's module must be in the checkout."""
        if "-m" not in arguments[:-1]:
            return None
        module = arguments[arguments.index("-m") + 1]
        top = module.split(".", 1)[0]
        if not (self.root / top).is_dir():
            return None  # another package's module (pip, venv, ...): installed, not ours to check
        base = self.root / module.replace(".", "/")
        return None if (base / "__main__.py").exists() or base.with_suffix(".py").exists() else (
            f"python -m {module}: no such module in the checkout"
        )  # fmt: skip

    def problems(self, command: str) -> Iterator[str]:
        tokens = words(command)
        if tokens is None:
            yield f"cannot parse the command: {command.strip()}"
            return
        for simple in simple_commands(tokens):
            while simple and (re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", simple[0]) or simple[0] in PREFIXES):
                simple = simple[1:]  # FOO=bar cmd, sudo cmd: the command is what follows
            if not simple:
                continue
            program, arguments = simple[0], simple[1:]
            problem = self.program_problem(program)
            if problem:
                yield problem
            if Path(program).name.startswith("python"):
                module = self.module_problem(arguments)
                if module:
                    yield module
            yield from self.argument_problems(arguments)


def check_commands(root: Path, page: Path) -> list[Problem]:
    name = page.relative_to(root).as_posix()
    checker = CommandChecker(root)
    lines = page.read_text(encoding="utf-8").splitlines()
    return [Problem(name, number, message) for number, command in command_lines(lines)
            for message in checker.problems(command)]  # fmt: skip


# -- the command --------------------------------------------------------------------------------


def check(root: Path) -> list[Problem]:
    """Every problem of README.md (commands and links) and docs/*.md (links)."""
    problems: list[Problem] = []
    readme = root / "README.md"
    if readme.is_file():
        problems += check_commands(root, readme)
        problems += check_links(root, readme)
    else:
        problems.append(Problem("README.md", 0, "there is no README.md"))
    for page in sorted((root / "docs").glob("**/*.md")):
        problems += check_links(root, page)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check README.md's commands and the docs' relative links.")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1], help="the checkout")
    args = parser.parse_args(argv)
    problems = check(args.root.resolve())
    for problem in problems:
        print(problem)
    pages = 1 + len(list((args.root / "docs").glob("**/*.md")))
    print(f"check_docs: {len(problems)} problem(s) in README.md and docs/ ({pages} page(s))")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
