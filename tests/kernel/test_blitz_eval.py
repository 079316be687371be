"""`blitz eval` (docs/eval.md): the quickstart demo, without the scripted model it pins, run
once per model against two scripted models; one computes the revenue the demo expects, the
other sorts it the wrong way round and breaks an assertion. Real kernels, papermill, offline."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from .test_blitz_run_many import blitz

ROOT = Path(__file__).resolve().parents[2]
REVENUE = (
    "sales['revenue'] = sales['units'] * sales['price']\nrevenue_by_region = sales.groupby('region')['revenue'].sum()"
)


def demo_without_its_model(folder: Path) -> Path:
    """The quickstart's data and first agent cell, its pinned model removed, and two checks."""
    demo = nbformat.read(ROOT / "notebooks" / "quickstart.ipynb", as_version=4)
    cells = demo.cells[:5]
    cells[1].source = "%load_ext blitz_kernel"
    cells += [
        nbformat.v4.new_code_cell("# revenue was computed\nassert 'revenue_by_region' in dir()"),
        nbformat.v4.new_code_cell("# south leads\nassert revenue_by_region.index[0] == 'south', revenue_by_region"),
        nbformat.v4.new_code_cell("# one row per region\nassert len(revenue_by_region) == 3"),
    ]
    demo.cells = cells
    path = folder / "quickstart.ipynb"
    nbformat.write(demo, path)
    return path


def model(path: Path, code: str) -> str:
    steps = [{"tool_calls": [{"name": "run_python", "arguments": {"code": code}}]}, {"text": "Done."}]
    path.write_text(json.dumps({"steps": steps}))
    return f"scripted:{path.name}"


def test_an_eval_of_a_demo_notebook_against_two_models_scores_each_assertion(tmp_path: Path):
    books = tmp_path / "books"
    books.mkdir()
    demo_without_its_model(books)
    good = model(books / "good.json", REVENUE + ".sort_values(ascending=False)")
    bad = model(books / "bad.json", REVENUE + ".sort_values(ascending=True)")
    report_path, page = tmp_path / "eval.json", tmp_path / "eval.html"
    done = blitz(
        "eval", books, "--models", f"{good},{bad}", "-j", "2", "--approve", "allow",
        "--report", report_path, "--html", page, home=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # one run broke an assertion
    report = json.loads(report_path.read_text())
    assert report["models"] == [good, bad]
    first, second = report["runs"]
    assert (first["model"], first["verdict"], second["model"], second["verdict"]) == (good, "passed", bad, "failed")
    assert [(a["name"], a["status"]) for a in first["assertions"]] == [
        ("revenue was computed", "passed"),
        ("south leads", "passed"),
        ("one row per region", "passed"),
    ]
    assert [(a["name"], a["status"]) for a in second["assertions"]] == [
        ("revenue was computed", "passed"),
        ("south leads", "failed"),
        ("one row per region", "passed"),  # a failing assertion does not hide the next one
    ]
    assert second["assertions"][1]["error"].startswith("AssertionError")
    for run in (first, second):
        assert run["stop_reasons"] == {"end_turn": 1}
        assert run["model_calls"] == 2 and run["tool_calls"] == 1 and run["tool_errors"] == 0
        assert run["duration_s"] > 0 and Path(run["output"]).is_file()
    # the terminal table: notebook × model, and the broken assertion by name
    lines = done.stderr.splitlines()
    header = next(line for line in lines if line.startswith("notebook"))
    assert good in header and bad in header
    row = next(line for line in lines if line.startswith("quickstart "))
    assert "✓ 3/3" in row and "✗ 2/3" in row
    assert any(line.startswith("✗ quickstart@") and "south leads: AssertionError" in line for line in lines)
    # the HTML page: self-contained, each run's output notebook linked
    text = page.read_text()
    assert "<script" not in text and "http" not in text
    for run in (first, second):
        link = Path(run["output"]).relative_to(tmp_path)
        assert f'href="{link}"' in text
    assert "south leads: failed" in text


def test_eval_bad_input_is_one_line_and_exit_2(tmp_path: Path):
    nb = tmp_path / "a.ipynb"
    nbformat.write(nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "P"}}), nb)
    (tmp_path / "empty").mkdir()
    cases = [
        (["eval", tmp_path / "nosuch"], "no notebook or folder at"),
        (["eval", tmp_path / "empty"], "no notebooks found in"),
        (["eval", nb, "--models", "a,,b"], "--models: an empty model name"),
        (["eval", nb, "--models", "a,a"], "--models names a model twice"),
        (["eval", nb, "-j", "0"], "-j must be a whole number from 1 to 64"),
        (["eval", nb, "--budget", "-1"], "--budget must be a finite, positive amount"),
        (["eval", nb, "--html", tmp_path], "--html"),
    ]
    for args, message in cases:
        done = blitz(*args, home=tmp_path, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
