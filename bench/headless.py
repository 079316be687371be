"""Headless: what a `%%blitz` cell costs under nbclient, where no front end can answer.

    .venv/bin/python bench/headless.py [--cells 10] [--reps 3]

Two notebooks run under nbclient (as papermill and `blitz run` run them), in fresh kernels,
alternating: one with `cells` `%%blitz` cells on the scripted model (each a `list_files`
call, then an answer), and the same notebook with those cells replaced by plain Python cells
(the baseline). Both start with `%load_ext blitz_kernel` and one `%%blitz` cell (the first
turn opens the workspace and its store: a cost of the first cell, not of every cell). Prints the median wall time of each,
the extra time per `%%blitz` cell, and whether a front-end probe was ever opened (a probe that
nobody answers used to cost 0.5–2 s a cell); goal: no wait, so a cell costs its turn and no
more than ~20 ms besides.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

PROBE_STATE = "from blitz_kernel.notebook.probe import KERNEL_MEMORY as m; print('probe waited:', m.headless_seen)"


def script(cells: int) -> list[dict[str, object]]:
    steps: list[dict[str, object]] = []
    for index in range(cells):
        steps.append({"tool_calls": [{"name": "list_files", "arguments": {}}]})
        steps.append({"text": f"Cell {index}: two files here."})
    return steps


def notebook(sources: list[str]) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])


def run(nb: nbformat.NotebookNode, folder: Path) -> tuple[float, str]:
    """Wall time of executing `nb` (kernel start included) and the last cell's output."""
    started = time.perf_counter()
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    elapsed = time.perf_counter() - started
    last = "".join(output.get("text", "") for output in nb.cells[-1].outputs)
    return elapsed, last


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=10)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "a.txt").write_text("a\n")
        (folder / "b.txt").write_text("b\n")
        (folder / "home").mkdir()
        os.environ.update(HOME=str(folder / "home"), LITELLM_LOCAL_MODEL_COST_MAP="True")
        blitz_times, plain_times, probe_lines = [], [], []
        for rep in range(args.reps):
            (folder / "script.json").write_text(json.dumps(script(args.cells + 1)))
            os.environ["BLITZ_MODEL"] = "scripted:script.json"
            blitz_cells = [f"%%blitz -s bench-{rep}\nList the files ({i})." for i in range(args.cells)]
            plain_cells = [
                f"x_{i} = sorted(p.name for p in __import__('pathlib').Path('.').iterdir())" for i in range(args.cells)
            ]
            first = ["%load_ext blitz_kernel", f"%%blitz -s first-{rep}\nList the files."]
            elapsed, last = run(notebook([*first, *blitz_cells, PROBE_STATE]), folder)
            blitz_times.append(elapsed)
            probe_lines.append(last.strip())
            (folder / "script.json").write_text(json.dumps(script(1)))
            elapsed, _ = run(notebook([*first, *plain_cells, PROBE_STATE]), folder)
            plain_times.append(elapsed)
    blitz_s, plain_s = statistics.median(blitz_times), statistics.median(plain_times)
    per_cell_ms = (blitz_s - plain_s) / args.cells * 1000
    print(f"{args.cells} cells under nbclient, median of {args.reps} fresh kernels each (kernel start included):")
    print(f"  %%blitz cells (scripted model, one tool call each): {blitz_s:.2f} s")
    print(f"  plain Python cells (baseline):                      {plain_s:.2f} s")
    print(f"  ratio {blitz_s / plain_s:.2f}x; {per_cell_ms:.0f} ms more per %%blitz cell (the turn itself included)")
    print(f"  front-end probe: {sorted(set(probe_lines))} (goal: never waited: no front end, no wait)")


if __name__ == "__main__":
    main()
