"""What `blitz run` and `blitz eval` check before any kernel starts: the notebooks, the
options and the files they will write. A problem is a `UsageProblem`: one line, exit status 2,
nothing written (docs/blitz-run.md)."""

from __future__ import annotations

import argparse
import keyword
import math
import os
from pathlib import Path

from ..core.redact import Redactor


class UsageProblem(Exception):
    """Exit status 2: the command line or its files are wrong."""


def check(args: argparse.Namespace) -> Path:
    notebook = args.notebook.expanduser().resolve()
    if not notebook.is_file():
        raise UsageProblem(f"no notebook at {args.notebook}")
    if notebook.suffix != ".ipynb":
        raise UsageProblem(f"{args.notebook} is not a .ipynb notebook")
    check_options(args)
    for option, path in (("--report", args.report), ("-o/--output", args.output)):
        if path is not None:
            check_writable(option, path.expanduser())
    check_notebook(args, notebook)
    return notebook


def check_options(args: argparse.Namespace) -> None:
    """What every run checks, one notebook or many."""
    if args.store is not None:
        from ..core.store_url import StoreUrlError, check_store_url

        try:
            check_store_url(args.store)
        except StoreUrlError as error:
            raise UsageProblem(f"--store: {error}") from None
    if args.budget is not None and not (math.isfinite(args.budget) and args.budget > 0):
        raise UsageProblem(f"--budget must be a finite, positive amount of USD, got {args.budget:g}")
    if args.timeout is not None and not math.isfinite(args.timeout):
        raise UsageProblem(f"--timeout must be a finite number of seconds, got {args.timeout:g}")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageProblem(f"--timeout must be positive, got {args.timeout:g} (leave it out for no limit)")
    if args.cwd is not None and not args.cwd.is_dir():
        raise UsageProblem(f"--cwd {args.cwd} is not a directory")
    for name, _ in args.parameter:
        if not name.isidentifier() or keyword.iskeyword(name):
            raise UsageProblem(f"-p: a parameter name must be a Python identifier, got {name!r}")


def check_writable(option: str, path: Path) -> None:
    if path.is_dir():
        raise UsageProblem(f"{option} {path} is a folder; give a file name, e.g. {path / 'report.json'}")
    if not path.parent.is_dir():
        raise UsageProblem(f"{option} {path}: the folder {path.parent} does not exist")


def check_notebook(args: argparse.Namespace, notebook: Path) -> None:
    """The notebook must be one nbformat can read, and name a kernel unless --kernel does."""
    import nbformat

    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception as error:  # JSON, schema or encoding: nbformat raises several kinds
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UsageProblem(f"{args.notebook} is not a notebook nbformat can read: {shorten(first, 160)}") from None
    if args.kernel is None and not (nb.get("metadata", {}).get("kernelspec") or {}).get("name"):
        raise UsageProblem(
            f"{args.notebook} names no kernel (metadata.kernelspec); pass --kernel NAME, e.g. --kernel python3"
        )


def run_redactor(cwd: Path) -> Redactor:
    """The secrets `blitz run` keeps out of stderr and the report: the environment's, and
    those assigned in the `.env` of the folder the kernel runs in."""
    redactor = Redactor.from_environment(os.environ)
    redactor.learn_file(cwd / ".env")
    return redactor


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
