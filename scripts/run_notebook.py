"""Execute a notebook headless (nbclient) and write the executed copy; print its outputs.

Used by the demo command: it shows a turn's real outputs in the terminal and leaves the
executed notebook where JupyterLab can open it. Like JupyterLab, it tells the kernel which
notebook it runs (JPY_SESSION_NAME), so each demo notebook keeps its own durable session.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbclient
import nbformat

from blitz_kernel.cli.local_kernel import LocalKernelManager


def summarise(cell: nbformat.NotebookNode) -> list[str]:
    lines = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        text = output.get("text") or data.get("text/markdown") or data.get("text/plain") or ""
        if output.get("output_type") == "error":
            text = f"{output['ename']}: {output['evalue']}"
        lines += [f"    {line}" for line in str(text).rstrip().splitlines()]
    return lines


def main(source: str, target: str) -> int:
    notebook = nbformat.read(source, as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(Path(source).parent)}},
        kernel_manager_class=LocalKernelManager,  # IPC sockets: no "running over TCP" warning
    )
    env = {**os.environ, "JPY_SESSION_NAME": str(Path(source).resolve())}
    try:
        client.execute(env=env)
    finally:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            print(">>> " + cell.source.splitlines()[0])
            print("\n".join(summarise(cell)))
    print(f"\nexecuted copy: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
