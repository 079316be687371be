"""`@` references in prompts: the grammar, and resolving against a real IPython
shell (its namespace, history, errors and displays) and a workspace directory."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from blitz_kernel.notebook import cell_log
from blitz_kernel.notebook.references import (
    PromptReferences,
    Reference,
    UnknownReferenceError,
    parse_references,
)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 32).decode("ascii")


def names(prompt: str) -> list[str]:
    return [r.name for r in parse_references(prompt).references]


# -- the grammar --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("Summarise @df", ["df"]),
        ("@df at the start", ["df"]),
        ("mail me@example.com about it", []),
        ("write to first.last@example.co.uk", []),
        ("x.@y is not one", []),
        ("(@df), @sales; @costs. @margins! @rate? [@a] {@b}", ["df", "sales", "costs", "margins", "rate", "a", "b"]),
        ("look at @df.columns please", ["df.columns"]),
        ("compare @df and @df again", ["df"]),
        ("what failed in @cell?", ["cell"]),
        ("fix @cell:12.", ["cell:12"]),
        ("and @cell:-1, @cell:-2", ["cell:-1", "cell:-2"]),
        ("@cellar is a variable", ["cellar"]),
        ("@cell: what went wrong", ["cell"]),
        ("explain @err.", ["err"]),
        ("@errors and @figures are names", ["errors", "figures"]),
        ("look at @fig!", ["fig"]),
        ("the variable @var:fig", ["var:fig"]),
        ("read @file:data/a.csv.", ["file:data/a.csv"]),
        ("read (@file:notes.md)", ["file:notes.md"]),
        ('read @file:"my notes.txt" now', ["file:my notes.txt"]),
        ("@@property is a decorator", []),
        ("use `@df` or ```\n@decorator\ndef f(): ...\n``` but @real", ["real"]),
        ("an @ alone, @1 and @-x are text", []),
        ("café @données", ["données"]),
    ],
)
def test_grammar(prompt: str, expected: list[str]):
    assert names(prompt) == expected


def test_references_carry_kind_and_target():
    parsed = parse_references("@df @cell @cell:7 @cell:-2 @err @fig @file:a.txt @var:err")
    assert parsed.references == [
        Reference("variable", "df", "df"),
        Reference("cell", "cell", "-1"),
        Reference("cell", "cell:7", "7"),
        Reference("cell", "cell:-2", "-2"),
        Reference("error", "err", "err"),
        Reference("figure", "fig", "fig"),
        Reference("file", "file:a.txt", "a.txt"),
        Reference("variable", "var:err", "err"),
    ]


def test_the_text_keeps_references_and_unescapes_double_at():
    assert parse_references("Use @@property on @df; mail a@@b").text == "Use @property on @df; mail a@@b"
    assert parse_references("`@@x` stays").text == "`@@x` stays"


def test_an_unclosed_fence_protects_the_rest():
    assert names("```python\n@app.route('/')\n") == []


# -- resolving in a real shell --------------------------------------------------------------


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    shell.execution_count = 1
    cell_log.install(shell)
    yield shell
    cell_log.uninstall(shell)
    shell.reset(new_session=True)


def run(shell: InteractiveShell, code: str) -> None:
    shell.run_cell(code, store_history=True)


async def resolve(shell: InteractiveShell, workspace: Path, prompt: str):
    """Resolve in a running cell of its own, as `%%blitz` does (IPython counts a running cell
    before it runs, so "the previous cell" depends on it)."""
    shell.user_ns["_resolve_now"] = lambda: PromptReferences(shell, workspace).resolve(prompt)
    code = "_resolved = await _resolve_now()"
    result = await shell.run_cell_async(code, store_history=True, transformed_cell=code)
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return shell.user_ns.pop("_resolved")


async def test_a_variable_arrives_as_describe_variable_gives_it(shell, tmp_path):
    run(shell, "import pandas as pd\ndf = pd.DataFrame({'x': [1, 2, 3], 'y': ['a', 'b', 'c']})")
    text, [attachment] = await resolve(shell, tmp_path, "What is in @df?")
    assert text == "What is in @df?"
    assert (attachment.kind, attachment.name) == ("variable", "df")
    assert attachment.text.startswith("df: DataFrame: 3 rows × 2 columns")
    assert "head(5):" in attachment.text


async def test_an_unknown_name_lists_close_names_and_the_grammar(shell, tmp_path):
    run(shell, "df = 1\ndf2 = 2")
    with pytest.raises(UnknownReferenceError) as caught:
        await resolve(shell, tmp_path, "plot @dff and @nosuch_thing_at_all")
    message = str(caught.value)
    assert "\n" not in message
    assert "@dff: no variable named 'dff'; did you mean @df, @df2?" in message
    assert "@nosuch_thing_at_all: no variable named 'nosuch_thing_at_all'; variables: df, df2" in message
    assert "write @@ for a literal @" in message


async def test_close_names_include_the_grammar_words(shell, tmp_path):
    with pytest.raises(UnknownReferenceError, match=r"did you mean @cell\?"):
        await resolve(shell, tmp_path, "fix @cel")


async def test_shell_internals_are_not_variables(shell, tmp_path):
    with pytest.raises(UnknownReferenceError, match="no variable named 'get_ipython'"):
        await resolve(shell, tmp_path, "what is @get_ipython")


async def test_cells_by_count_and_relative_with_result_and_error(shell, tmp_path):
    run(shell, "a = 40\na + 2")  # In[1], Out[1] = 42
    run(shell, "def f():\n    return 1 / 0\nf()")  # In[2] raises
    text, attachments = await resolve(shell, tmp_path, "why did @cell fail, after @cell:1 and @cell:-2?")
    previous, first, two_back = (a.text for a in attachments)
    assert previous.startswith("In[2], from the kernel's history")
    assert "def f():" in previous
    assert "→ error: ZeroDivisionError: division by zero" in previous
    assert "Cell In[2], line 3" in previous and "\x1b[" not in previous
    assert first == two_back
    assert "a = 40" in first and "→ result:\n42" in first


async def test_a_cell_that_does_not_exist(shell, tmp_path):
    with pytest.raises(UnknownReferenceError, match=r"@cell: no such cell \(no cell has run before this one\)"):
        await resolve(shell, tmp_path, "@cell")
    run(shell, "x = 1")
    with pytest.raises(UnknownReferenceError, match=r"@cell:5: no such cell \(cells run so far are In\[1\]..In\[2\]\)"):
        await resolve(shell, tmp_path, "@cell:5")
    with pytest.raises(UnknownReferenceError, match="@cell:0: no such cell"):
        await resolve(shell, tmp_path, "@cell:0")


async def test_the_last_error(shell, tmp_path):
    with pytest.raises(UnknownReferenceError, match="no cell has raised an error"):
        await resolve(shell, tmp_path, "@err")
    run(shell, "raise KeyError('price')")
    run(shell, "ok = 1")
    _, [attachment] = await resolve(shell, tmp_path, "explain @err")
    assert attachment.kind == "error"
    assert attachment.text.startswith("the last error, raised in In[2]:")
    assert "KeyError: 'price'" in attachment.text


async def test_files_follow_the_file_tools_rules(shell, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.csv").write_text("x,y\n1,2\n")
    _, [attachment] = await resolve(shell, tmp_path, "read @file:data/a.csv.")
    assert attachment.name == "file:data/a.csv"
    assert "x,y" in attachment.text and "1,2" in attachment.text
    with pytest.raises(UnknownReferenceError, match=r"leads outside the workspace .* through '\.\.'"):
        await resolve(shell, tmp_path, "read @file:../secret.txt")
    with pytest.raises(UnknownReferenceError, match="@file:/etc/passwd: /etc/passwd is outside the workspace"):
        await resolve(shell, tmp_path, "read @file:/etc/passwd")
    with pytest.raises(UnknownReferenceError, match="@file:missing.txt: "):
        await resolve(shell, tmp_path, "read @file:missing.txt")


async def test_the_last_figure_is_an_image(shell, tmp_path):
    with pytest.raises(UnknownReferenceError, match="no figure or image has been shown"):
        await resolve(shell, tmp_path, "@fig")
    run(shell, f"from IPython.display import display\ndisplay({{'image/png': '{PNG}', 'text/plain': 'fig'}}, raw=True)")
    run(shell, "print('later')")
    _, [attachment] = await resolve(shell, tmp_path, "what does @fig show?")
    assert attachment.kind == "figure"
    assert attachment.image is not None and attachment.image.data_base64 == PNG
    assert attachment.text == "the last figure shown (image/png, displayed by In[2])"


async def test_a_variable_named_like_a_word_of_the_grammar(shell, tmp_path):
    run(shell, "fig = 'my figure object'")
    _, [attachment] = await resolve(shell, tmp_path, "@var:fig")
    assert attachment.kind == "variable" and "my figure object" in attachment.text


def test_uninstall_restores_the_display_publisher(shell):
    publisher = shell.display_pub
    assert "publish" in vars(publisher)
    cell_log.uninstall(shell)
    assert "publish" not in vars(publisher)
    assert cell_log.current() is None
    cell_log.install(shell)
