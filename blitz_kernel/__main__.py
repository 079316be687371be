"""`python -m blitz_kernel install [--user | --sys-prefix | --prefix DIR]`,
`python -m blitz_kernel run NOTEBOOK.ipynb ...`, `... eval PATH ...`, `... report merge ...` and
`python -m blitz_kernel mcp|acp ...` (also the `blitz` console script)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["run"]:  # its own parser (cli/run.py): `blitz run --help` shows it all
        from .cli.run import main as run_main

        return run_main(arguments[1:])
    # the name it was called by: `blitz` (the console script) or `python -m blitz_kernel`
    prog = "blitz" if Path(sys.argv[0]).name == "blitz" else "python -m blitz_kernel"
    if arguments[:1] == ["mcp"]:  # its own parser too (cli/mcp_server.py)
        from .cli.mcp_server import main as mcp_main

        return mcp_main(arguments[1:], prog)
    if arguments[:1] == ["eval"]:  # cli/evaluate.py
        from .cli.evaluate import main as eval_main

        return eval_main(arguments[1:], prog)
    if arguments[:2] == ["report", "merge"]:  # cli/summary.py
        from .cli.summary import merge_main

        return merge_main(arguments[2:], prog, sys.stderr, sys.stdout)
    if arguments[:1] == ["acp"]:  # and its own (cli/acp_agent.py)
        from .cli.acp_agent import main as acp_main

        return acp_main(arguments[1:], prog)
    parser = argparse.ArgumentParser(prog=prog, description="blitz_kernel commands")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("run", help=f"run a notebook with %%%%blitz cells unattended (see `{prog} run --help`)")
    commands.add_parser("mcp", help=f"serve the live kernel's tools over MCP (see `{prog} mcp --help`)")
    commands.add_parser("eval", help=f"score notebooks once per model (see `{prog} eval --help`)")
    report = commands.add_parser("report", help=f"work with blitz run reports (`{prog} report merge --help`)")
    report.add_subparsers(dest="report_command", required=True).add_parser(
        "merge", help="combine reports of separate runs into one summary"
    )
    commands.add_parser("acp", help=f"be an ACP agent over stdio, in the live kernel (see `{prog} acp --help`)")
    install = commands.add_parser(
        "install",
        help='install the "Blitz (Python 3)" kernel (IPython with blitz_kernel loaded)',
        description='Install the kernelspec "blitz" ("Blitz (Python 3)"): IPython with the '
        "blitz_kernel extension loaded, running this Python. Without an option it goes where "
        "`python -m ipykernel install` would put it (system-wide).",
    )
    where = install.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for the current user")
    where.add_argument("--sys-prefix", action="store_true", help=f"install into this Python's prefix ({sys.prefix})")
    where.add_argument("--prefix", metavar="DIR", help="install into DIR/share/jupyter/kernels")
    args = parser.parse_args(arguments)

    from .notebook.kernelspec import DISPLAY_NAME
    from .notebook.kernelspec import install as install_spec

    prefix = sys.prefix if args.sys_prefix else args.prefix
    try:
        path = install_spec(user=args.user, prefix=prefix)
    except OSError as error:
        print(f"could not install the kernelspec: {error} (try --user or --sys-prefix)", file=sys.stderr)
        return 1
    print(f"installed kernelspec blitz ({DISPLAY_NAME}) in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
