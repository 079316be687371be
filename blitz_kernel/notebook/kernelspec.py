"""The "Blitz (Python 3)" kernelspec: IPython with the blitz_kernel extension already loaded.

It is ipykernel's own kernel, started with `--ext=blitz_kernel`, so `%%blitz` works in the
first cell without `%load_ext`, and the notebook bridge is ready when the front end connects.
The kernel runs the Python that installed the spec (`sys.executable`), which is where
blitz_kernel is installed.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

KERNEL_NAME = "blitz"
DISPLAY_NAME = "Blitz (Python 3)"


def kernel_json(python: str | None = None) -> dict[str, Any]:
    """The kernel.json of the spec."""
    return {
        "argv": [
            python or sys.executable,
            "-m",
            "ipykernel_launcher",
            "-f",
            "{connection_file}",
            "--ext=blitz_kernel",
        ],
        "display_name": DISPLAY_NAME,
        "language": "python",
        "metadata": {"debugger": True},
    }


def install(*, user: bool = False, prefix: str | None = None, python: str | None = None) -> str:
    """Install the spec (system-wide unless `user` or `prefix`, like ipykernel); returns the
    directory it was installed to."""
    from jupyter_client.kernelspec import KernelSpecManager

    with tempfile.TemporaryDirectory() as staging:
        folder = Path(staging) / KERNEL_NAME
        folder.mkdir()
        (folder / "kernel.json").write_text(json.dumps(kernel_json(python), indent=1) + "\n")
        _copy_logos(folder)
        return str(KernelSpecManager().install_kernel_spec(str(folder), KERNEL_NAME, user=user, prefix=prefix))


def _copy_logos(folder: Path) -> None:
    """ipykernel's Python logos, so the launcher shows the kernel like other Python kernels."""
    try:
        from ipykernel.kernelspec import RESOURCES
    except ImportError:  # an ipykernel without them: the launcher shows initials instead
        return
    for logo in Path(RESOURCES).glob("logo-*"):
        shutil.copy(logo, folder / logo.name)
