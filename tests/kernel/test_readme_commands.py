"""The README's commands, run as a newcomer runs them: the install command from its Install
section into a fresh virtual environment (then `blitz` and a `%%blitz` turn from that
environment alone), and `./scripts/demo`, whose executed copies must run again where they
lie, as they do when JupyterLab opens `build/demo/`. Slow (about two minutes together: pip
resolves the dependencies from its cache or PyPI; the demo runs four notebooks)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import venv
from pathlib import Path

import nbclient
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.kernel


def readme_commands(heading: str) -> list[str]:
    """The command lines of the bash blocks under `## heading`, comments dropped."""
    text = (ROOT / "README.md").read_text()
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert blocks, f"README section {heading!r} has no bash block"
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line]


def clean_env(*, fresh: bool = False, **extra: str) -> dict[str, str]:
    """This environment without blitz settings; `fresh` also drops PYTHONPATH (a fresh venv
    must import its own installed copy)."""
    dropped = ("BLITZ_", "VIRTUAL_ENV", "PYTHONPATH") if fresh else ("BLITZ_",)
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", PYDEVD_DISABLE_FILE_VALIDATION="1", **extra)
    return env


def test_the_readme_install_command_installs_a_working_blitz_into_a_fresh_venv(tmp_path: Path):
    [cd, install] = readme_commands("Install")
    assert cd.startswith("cd ") and install == "python -m pip install ."
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    bin_dir = environment / "bin"
    env = clean_env(fresh=True, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", HOME=str(tmp_path))
    # the README's line, as written, run in the checkout by the fresh environment's python
    done = subprocess.run(
        shlex.split(install), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]

    where = subprocess.run(
        [bin_dir / "python", "-c", "import blitz_kernel; print(blitz_kernel.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(environment))  # the installed copy, not the checkout
    assert (environment / "share" / "jupyter" / "labextensions" / "blitz-kernel" / "package.json").is_file()
    usage = subprocess.run([bin_dir / "blitz", "--help"], env=env, capture_output=True, text=True, check=True)
    assert usage.stdout.startswith("usage: blitz ")

    # a turn from the installed package alone: `blitz run` on a scripted model
    (tmp_path / "script.json").write_text(json.dumps({"steps": [{"text": "Hello from the installed package."}]}))
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("%load_ext blitz_kernel"), nbformat.v4.new_code_cell("%%blitz\nSay hello.")]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "hello.ipynb")
    run = subprocess.run(
        [bin_dir / "blitz", "run", "hello.ipynb", "--model", "scripted:script.json", "--report", "r.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "r.json").read_text())["turns"][0]["text"] == "Hello from the installed package."


def test_the_demo_command_runs_and_its_executed_copies_run_again_where_they_lie(tmp_path: Path):
    assert "./scripts/demo" in readme_commands("The two commands")
    done = subprocess.run(
        ["./scripts/demo"], cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Error" not in done.stdout, done.stdout
    assert "WARNING" not in done.stderr  # ipykernel's "running over TCP without encryption" stays out
    # the closing advice: the folder it names, and the command that opens the live widget
    assert "  .venv/bin/jupyter lab build/demo/" in done.stdout and "  ./scripts/lab" in done.stdout
    for name in ("quickstart", "data_exploration", "approvals_and_steering", "compaction_and_btw"):
        copy = ROOT / "build" / "demo" / f"{name}.ipynb"
        notebook = nbformat.read(copy, as_version=4)
        # as JupyterLab runs it: the kernel in the copy's own folder (no session name, so a fresh one)
        client = nbclient.NotebookClient(
            notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(copy.parent)}}
        )
        client.execute(env={**clean_env(), "HOME": str(tmp_path)})
        errors = [o for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
        assert errors == [], f"{copy.name}: {errors[0]['ename']}: {errors[0]['evalue']}"


def test_the_lab_command_prepares_the_live_widget_notebook_beside_its_model_and_data():
    """`./scripts/lab` copies notebooks/ to build/lab/ and opens live_widget.ipynb there; run
    with `--version` in place of a server, it must get that far and hand its arguments on."""
    assert "./scripts/lab" in readme_commands("The two commands")
    done = subprocess.run(
        ["./scripts/lab", "--version"],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "JupyterLab on build/lab/live_widget.ipynb" in done.stdout
    for name in ("live_widget.ipynb", "live_widget.script.json", "sales.csv"):
        assert (ROOT / "build" / "lab" / name).is_file()
