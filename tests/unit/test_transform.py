"""The input transformers: `await` for async magics, and `?` kept in side questions."""

from blitz_kernel.notebook.transform import await_blitz_cells, keep_btw_questions


def test_cell_magic_line_is_awaited():
    lines = ["get_ipython().run_cell_magic('blitz', '--plan', 'hi\\n')\n"]
    assert await_blitz_cells(lines) == ["await " + lines[0]]


def test_other_magics_are_left_alone():
    lines = ["get_ipython().run_cell_magic('time', '', 'x\\n')\n"]
    assert await_blitz_cells(lines) == lines


def test_indented_line_magic_is_awaited_after_its_indent():
    assert await_blitz_cells(["    get_ipython().run_line_magic('blitz_compact', '')\n"]) == [
        "    await get_ipython().run_line_magic('blitz_compact', '')\n"
    ]


def test_btw_question_mark_is_not_a_help_request():
    assert keep_btw_questions(["%blitz_btw what did we pick?\n"]) == [
        "get_ipython().run_line_magic('blitz_btw', 'what did we pick?')\n"
    ]


def test_btw_inside_a_cell_magic_body_is_prompt_text():
    lines = ["%%blitz\n", "%blitz_btw what did we pick?\n"]
    assert keep_btw_questions(lines) == lines
