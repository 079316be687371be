"""`python -m blitz_kernel install`: the "Blitz (Python 3)" kernel starts with the extension
loaded, so a `%%blitz` cell works without `%load_ext`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager

from .driver import KernelDriver, kernel_environment


def test_install_writes_the_blitz_kernelspec(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "blitz_kernel", "install", "--prefix", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    folder = tmp_path / "share" / "jupyter" / "kernels" / "blitz"
    assert done.stdout == f"installed kernelspec blitz (Blitz (Python 3)) in {folder}\n"
    spec = json.loads((folder / "kernel.json").read_text())
    assert spec["display_name"] == "Blitz (Python 3)" and spec["language"] == "python"
    assert spec["argv"] == [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}", "--ext=blitz_kernel"]
    assert (folder / "logo-64x64.png").is_file()


def test_the_options_are_exclusive_and_shown_on_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "blitz_kernel", "install", "--user", "--sys-prefix"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "usage: python -m blitz_kernel install [-h]" in done.stderr
    assert "not allowed with argument --user" in done.stderr


def test_a_blitz_cell_runs_in_the_blitz_kernel_without_load_ext(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "blitz_kernel", "install", "--prefix", str(tmp_path)], check=True, capture_output=True
    )
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "script.json").write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "run_python", "arguments": {"code": "6 * 7"}}]},
                {"text": "The answer is 42."},
            ]
        )
    )
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "share" / "jupyter" / "kernels")])
    assert specs.get_kernel_spec("blitz").display_name == "Blitz (Python 3)"
    env = kernel_environment(tmp_path / "home", BLITZ_MODEL="scripted:script.json")
    kernel = KernelDriver(workspace, env, kernel_name="blitz", kernel_spec_manager=specs)
    try:
        cell = kernel.run("%%blitz --approve allow\nWhat is 6 times 7?")
        assert cell.status == "ok", cell.reply
        assert '⚙ run_python(code="6 * 7")' in cell.stdout and "result: 42" in cell.stdout
        assert list(cell.displays.values())[-1] == "The answer is 42."
    finally:
        kernel.shutdown()
