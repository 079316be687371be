"""The workspace file tools, called the way the engine calls them: JSON arguments → tool."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import regex

from blitz_kernel.tools import files, search
from blitz_kernel.tools.files import FILE_TOOLS
from blitz_kernel.tools.paths import resolve_in_workspace
from blitz_kernel.tools.registry import ToolContext, ToolError, ToolKind
from blitz_kernel.tools.search import SEARCH_TOOLS

TOOLS = {t.name: t for t in [*FILE_TOOLS, *SEARCH_TOOLS]}


async def call(workspace: Path, name: str, **arguments: Any) -> str:
    tool = TOOLS[name]
    return await tool.func(tool.parse_arguments(json.dumps(arguments)), ToolContext(workspace))


def assert_untouched(secret: Path) -> None:
    assert secret.read_text() == "top secret\n"
    assert sorted(p.name for p in secret.parent.iterdir()) == ["secret.txt"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("top secret\n")
    return secret


# -- the contract --------------------------------------------------------------------------


def test_names_kinds_and_arguments_match_the_interface() -> None:
    expected = {
        "read_file": (ToolKind.READ_ONLY, {"path", "offset", "limit"}),
        "list_files": (ToolKind.READ_ONLY, {"path"}),
        "glob": (ToolKind.READ_ONLY, {"pattern"}),
        "grep": (ToolKind.READ_ONLY, {"pattern", "path", "glob"}),
        "write_file": (ToolKind.MUTATING, {"path", "content"}),
        "edit_file": (ToolKind.MUTATING, {"path", "old", "new", "replace_all"}),
    }
    assert {name: (t.kind, set(t.spec().parameters["properties"])) for name, t in TOOLS.items()} == expected


def test_every_argument_has_a_description_for_the_model() -> None:
    for tool in TOOLS.values():
        spec = tool.spec()
        assert spec.description and spec.description != tool.name
        for name, prop in spec.parameters["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


# -- confinement ---------------------------------------------------------------------------


def test_resolve_accepts_relative_and_absolute_paths_inside(ws: Path) -> None:
    (ws / "a").mkdir()
    assert resolve_in_workspace(ws, "a/b.txt") == ws.resolve() / "a" / "b.txt"
    assert resolve_in_workspace(ws, str(ws / "a")) == ws.resolve() / "a"
    assert resolve_in_workspace(ws, "a/../a/./b") == ws.resolve() / "a" / "b"
    assert resolve_in_workspace(ws, ".") == ws.resolve()


@pytest.mark.parametrize("tool_name", ["read_file", "list_files", "write_file", "grep"])
async def test_dotdot_escape_is_refused_by_every_tool(ws: Path, outside: Path, tool_name: str) -> None:
    arguments: dict[str, Any] = {"path": "../outside/secret.txt"}
    if tool_name == "write_file":
        arguments["content"] = "x"
    if tool_name == "grep":
        arguments["pattern"] = "secret"
    with pytest.raises(ToolError, match=r"outside the workspace .* through '\.\.'"):
        await call(ws, tool_name, **arguments)
    assert_untouched(outside)


async def test_absolute_path_outside_is_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="/etc/passwd is outside the workspace"):
        await call(ws, "read_file", path="/etc/passwd")


async def test_symlink_to_outside_is_refused(ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside)
    (ws / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(ToolError, match="symlink .* leads outside the workspace"):
        await call(ws, "read_file", path="link.txt")
    with pytest.raises(ToolError, match="symlink"):
        await call(ws, "read_file", path="linkdir/secret.txt")
    with pytest.raises(ToolError, match="symlink"):
        await call(ws, "write_file", path="linkdir/new.txt", content="x")
    assert not (outside.parent / "new.txt").exists()


async def test_symlink_inside_the_workspace_is_allowed(ws: Path) -> None:
    (ws / "real.txt").write_text("hello\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert await call(ws, "read_file", path="alias.txt") == "     1\thello"


async def test_grep_does_not_follow_a_symlink_out(ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside)
    (ws / "mine.txt").write_text("no secrets here\n")
    result = await call(ws, "grep", pattern="secret")
    assert "mine.txt:1: no secrets here" in result
    assert "top secret" not in result


# -- read_file -----------------------------------------------------------------------------


async def test_read_numbers_lines(ws: Path) -> None:
    (ws / "a.py").write_text("x = 1\ny = 2\n")
    assert await call(ws, "read_file", path="a.py") == "     1\tx = 1\n     2\ty = 2"


async def test_read_pages_with_offset_and_limit(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    first = await call(ws, "read_file", path="big.txt", limit=10)
    assert first.splitlines()[0] == "     1\tline 1"
    assert first.splitlines()[-1] == "[lines 1–10 of 100; call again with offset=10 to continue]"
    second = await call(ws, "read_file", path="big.txt", offset=10, limit=10)
    assert second.splitlines()[0] == "    11\tline 11"
    last = await call(ws, "read_file", path="big.txt", offset=95)
    assert last.splitlines()[-1] == "[lines 96–100 of 100]"


async def test_read_default_limit_pages_long_files(ws: Path) -> None:
    (ws / "long.txt").write_text("x\n" * (files.DEFAULT_LINE_LIMIT + 5))
    result = await call(ws, "read_file", path="long.txt")
    assert result.endswith(
        f"[lines 1–{files.DEFAULT_LINE_LIMIT} of {files.DEFAULT_LINE_LIMIT + 5}; "
        f"call again with offset={files.DEFAULT_LINE_LIMIT} to continue]"
    )


async def test_read_caps_output_size_and_long_lines(ws: Path) -> None:
    wide = "y" * (files.MAX_LINE_CHARS + 50)
    (ws / "wide.txt").write_text((wide + "\n") * 200)
    result = await call(ws, "read_file", path="wide.txt")
    assert len(result) <= files.MAX_OUTPUT_CHARS + 200
    assert "[... 50 more characters cut]" in result
    assert "output size cap reached; call again with offset=" in result


async def test_read_offset_past_the_end_is_an_error(ws: Path) -> None:
    (ws / "a.txt").write_text("one\n")
    with pytest.raises(ToolError, match="offset 5 is past the end of a.txt, which has 1 lines"):
        await call(ws, "read_file", path="a.txt", offset=5)


async def test_read_empty_missing_and_directory(ws: Path) -> None:
    (ws / "empty.txt").write_text("")
    (ws / "data.csv").write_text("a,b\n")
    assert await call(ws, "read_file", path="empty.txt") == "empty.txt is empty (0 lines)."
    with pytest.raises(ToolError, match="no such file: data.cvs; did you mean data.csv"):
        await call(ws, "read_file", path="data.cvs")
    with pytest.raises(ToolError, match="is a directory; use list_files"):
        await call(ws, "read_file", path=".")


async def test_read_describes_binary_files(ws: Path) -> None:
    (ws / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    (ws / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    png = await call(ws, "read_file", path="plot.png")
    assert png.startswith("plot.png is a binary file (108 bytes, PNG image")
    assert "view_image" in png
    latin = await call(ws, "read_file", path="latin1.txt")
    assert "binary file (5 bytes" in latin and "not UTF-8 text at byte 3" in latin


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"one",
        b"one\n",
        b"a\r\nb\r\n",
        b"a\r\nb\r",
        b"\r\n\n\r",
        b"x\n\n\ny",
        ("z" * (files.MAX_LINE_CHARS + 5) + "\r\nshort\n").encode(),
        "caf\u00e9 \u2603\n\u00e9".encode(),
        b"ok\nbad \xe9 byte\n",
        b"cut at the end \xe2\x98",
    ],
)
def test_a_small_file_read_whole_gives_the_same_lines_as_streaming(data: bytes) -> None:
    """Small files are decoded in one go, large ones streamed in pieces: both must give the
    same lines, lengths and first bad byte."""
    import io

    def lines(source: object) -> list[tuple[int, str, int]] | int:
        try:
            return [(line.number, line.text, line.chars) for line in source]  # type: ignore[attr-defined]
        except files._NotTextError as error:
            return error.position

    assert lines(files._split_lines(data)) == lines(files._scan_lines(io.BytesIO(data)))


async def test_a_file_over_the_inline_size_is_streamed_with_the_same_answer(ws: Path) -> None:
    line = "w" * 99 + "\n"
    (ws / "big.txt").write_text(line * (files.INLINE_READ_BYTES // len(line) + 10))
    (ws / "small.txt").write_text(line * 30)
    big = await call(ws, "read_file", path="big.txt", limit=30)
    assert big.startswith(await call(ws, "read_file", path="small.txt"))
    assert big.endswith("call again with offset=30 to continue]")


async def test_read_rejects_negative_offset_through_argument_parsing(ws: Path) -> None:
    with pytest.raises(ToolError, match="invalid arguments for read_file: offset"):
        await call(ws, "read_file", path="a.txt", offset=-1)


# -- list_files ----------------------------------------------------------------------------


async def test_list_marks_dirs_sorts_and_skips_noise(ws: Path) -> None:
    for name in (".git", ".venv", "__pycache__", "node_modules", ".blitz", "src", "Data"):
        (ws / name).mkdir()
    (ws / "b.txt").write_text("x" * 2048)
    (ws / "a.txt").write_text("hi")
    result = await call(ws, "list_files")
    assert result.splitlines() == [
        "./ (4 entries)",
        "Data/",
        "src/",
        "a.txt  2 B",
        "b.txt  2.0 KB",
        "[not listed: .blitz, .git, .venv, __pycache__, node_modules]",
    ]


async def test_list_subfolder_empty_and_errors(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "f.txt").write_text("")
    assert await call(ws, "list_files", path="sub") == "sub/ is empty"
    with pytest.raises(ToolError, match="is a file, not a directory"):
        await call(ws, "list_files", path="f.txt")
    with pytest.raises(ToolError, match="no such file: nope"):
        await call(ws, "list_files", path="nope")


async def test_list_is_capped(ws: Path) -> None:
    for n in range(files.MAX_LIST_ENTRIES + 3):
        (ws / f"f{n:04}.txt").write_text("")
    lines = (await call(ws, "list_files")).splitlines()
    assert lines[0] == f"./ ({files.MAX_LIST_ENTRIES + 3} entries)"
    assert lines[-1] == "[... 3 more entries not shown; use glob]"
    assert len(lines) == files.MAX_LIST_ENTRIES + 2


async def test_list_shows_symlinks(ws: Path, outside: Path) -> None:
    (ws / "link").symlink_to(outside)
    assert f"link -> {outside}" in await call(ws, "list_files")


# -- glob ----------------------------------------------------------------------------------


@pytest.fixture
def tree(ws: Path) -> Path:
    for name in (
        "a.py",
        "src/b.py",
        "src/pkg/c.py",
        "src/pkg/d.txt",
        ".venv/lib/e.py",
        "data/x.csv",
    ):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text(f"# {name}\nimport os\n")
    return ws


async def test_glob_recursive_and_top_level(tree: Path) -> None:
    assert (await call(tree, "glob", pattern="**/*.py")).splitlines() == [
        "3 matches for **/*.py:",
        "a.py",
        "src/b.py",
        "src/pkg/c.py",
    ]
    assert (await call(tree, "glob", pattern="*.py")).splitlines() == [
        "1 matches for *.py:",
        "a.py",
    ]
    assert (await call(tree, "glob", pattern="src/*")).splitlines() == [
        "2 matches for src/*:",
        "src/b.py",
        "src/pkg/",
    ]
    assert (await call(tree, "glob", pattern="src/**/[cd].*")).splitlines()[1:] == [
        "src/pkg/c.py",
        "src/pkg/d.txt",
    ]


async def test_glob_enters_a_skipped_folder_only_when_named(tree: Path) -> None:
    assert (await call(tree, "glob", pattern=".venv/**/*.py")).splitlines()[1:] == [".venv/lib/e.py"]


async def test_glob_no_match_hints_and_refusals(tree: Path) -> None:
    assert await call(tree, "glob", pattern="*.csv") == ("no matches for *.csv; '**/*.csv' searches sub-folders too")
    with pytest.raises(ToolError, match="relative to the workspace"):
        await call(tree, "glob", pattern="../*")
    with pytest.raises(ToolError, match="relative to the workspace"):
        await call(tree, "glob", pattern="/etc/*")


async def test_glob_is_capped(ws: Path) -> None:
    for n in range(search.MAX_GLOB_RESULTS + 2):
        (ws / f"f{n:04}.txt").write_text("")
    lines = (await call(ws, "glob", pattern="*.txt")).splitlines()
    assert lines[-1] == "[... 2 more matches not shown; narrow the pattern]"


# -- grep ----------------------------------------------------------------------------------


async def test_grep_shows_path_line_text(tree: Path) -> None:
    result = await call(tree, "grep", pattern=r"^# src/.*\.py$")
    assert result.splitlines() == ["src/b.py:1: # src/b.py", "src/pkg/c.py:1: # src/pkg/c.py"]


async def test_grep_with_path_and_glob(tree: Path) -> None:
    assert (await call(tree, "grep", pattern="import", path="src", glob="*.txt")).splitlines() == [
        "src/pkg/d.txt:2: import os"
    ]
    by_path = await call(tree, "grep", pattern="import", glob="src/pkg/*")
    assert by_path.splitlines() == ["src/pkg/c.py:2: import os", "src/pkg/d.txt:2: import os"]
    one_file = await call(tree, "grep", pattern="import", path="a.py")
    assert one_file == "a.py:2: import os"


async def test_grep_skips_binary_and_noise_folders(tree: Path) -> None:
    (tree / "blob.bin").write_bytes(b"import\x00os")
    result = await call(tree, "grep", pattern="import")
    assert ".venv" not in result and "blob.bin" not in result
    assert result.splitlines()[-1] == "[1 binary, large or unreadable files skipped]"


async def test_grep_no_match_and_invalid_regex(tree: Path) -> None:
    assert await call(tree, "grep", pattern="nothing here", path="src") == (
        "no matches for /nothing here/ in src (3 files searched)"
    )
    with pytest.raises(ToolError, match=r"invalid regular expression '\(unclosed'"):
        await call(tree, "grep", pattern="(unclosed")


async def test_grep_is_capped(ws: Path) -> None:
    (ws / "many.txt").write_text("hit\n" * (search.MAX_GREP_MATCHES + 7))
    lines = (await call(ws, "grep", pattern="hit")).splitlines()
    assert len(lines) == search.MAX_GREP_MATCHES + 1
    assert lines[-1].startswith("[... 7 more matches not shown")


GREP_TEXTS = {
    "plain.txt": "alpha beta\n\nfoo bar\n  foo\nbar foo \nlast line without newline",
    "crlf.txt": "foo\r\nbar\r\n\r\nbaz foo\r\n",
    "unicode.txt": "héllo wörld\nnaïve café\n\u00a0\nend\n",
    "blank.txt": "\n\n\n",
}
GREP_PATTERNS = [
    "foo",
    r"^foo",
    r"foo$",
    r"^$",
    r"\s$",
    r"\s+$",
    r"foo\s*$",
    r"\bfoo\b",
    r"\Bar",
    "x*",
    r"\n",
    r"[^a]+",
    r"(?s).*",
    r"(?i)FOO",
    r"a|^b",
    r"(?:ba|fo)[or]",
    r"(\w)\1",
    r"\W$",
    r"^\s*\S+\s*$",
    r"é|ï",
    r"o\s+b",
    r"r\n\n",
]


@pytest.mark.parametrize("pattern", GREP_PATTERNS)
async def test_grep_searching_many_lines_at_once_finds_what_line_by_line_finds(ws: Path, pattern: str) -> None:
    """grep searches whole blocks of lines when that cannot change the answer; `(?=)` (always
    true) forces the line-by-line path, and a plain per-line loop is the reference."""
    for name, text in GREP_TEXTS.items():
        (ws / name).write_bytes(text.encode("utf-8"))
    compiled = regex.compile(pattern)
    expected = [
        f"{name}:{number}: {line.rstrip(chr(13))}"
        for name, text in sorted(GREP_TEXTS.items())
        for number, line in enumerate(text.removesuffix("\n").split("\n"), start=1)
        if compiled.search(line)
    ]
    fast = await call(ws, "grep", pattern=pattern)
    slow = await call(ws, "grep", pattern="(?=)" + pattern)
    matched = [line for line in fast.splitlines() if not line.startswith("no matches")]
    assert matched == expected
    assert [line for line in slow.splitlines() if not line.startswith("no matches")] == expected


async def test_grep_numbers_lines_across_the_blocks_it_searches(ws: Path) -> None:
    lines = [f"row {n:06} filler text" for n in range(1, 40_001)]  # ~1 MB: several blocks
    lines[14_999] += " needle"
    lines[39_999] += " needle"
    (ws / "big.txt").write_text("\n".join(lines) + "\n")
    assert (await call(ws, "grep", pattern="needle$")).splitlines() == [
        "big.txt:15000: row 015000 filler text needle",
        "big.txt:40000: row 040000 filler text needle",
    ]
    assert (ws / "big.txt").stat().st_size > 3 * search.GREP_CHUNK_BYTES


# -- write_file ----------------------------------------------------------------------------


async def test_write_creates_parents_then_overwrites(ws: Path) -> None:
    assert await call(ws, "write_file", path="new/deep/f.txt", content="héllo\n") == (
        "created new/deep/f.txt (7 bytes written)"
    )
    assert (ws / "new/deep/f.txt").read_text(encoding="utf-8") == "héllo\n"
    assert await call(ws, "write_file", path="new/deep/f.txt", content="") == (
        "overwrote new/deep/f.txt (0 bytes written; it had 7 bytes)"
    )


async def test_write_keeps_line_endings_and_refuses_directories(ws: Path) -> None:
    await call(ws, "write_file", path="crlf.txt", content="a\r\nb\r\n")
    assert (ws / "crlf.txt").read_bytes() == b"a\r\nb\r\n"
    (ws / "dir").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await call(ws, "write_file", path="dir", content="x")


# -- edit_file -----------------------------------------------------------------------------


async def test_edit_replaces_exactly_once_and_shows_the_result(ws: Path) -> None:
    (ws / "m.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    result = await call(ws, "edit_file", path="m.py", old="return 1", new="return 10")
    assert result.splitlines()[0] == "edited m.py: replaced 1 occurrence (first at line 2)"
    assert "     2\t    return 10" in result
    assert (ws / "m.py").read_text() == "def f():\n    return 10\n\ndef g():\n    return 2\n"


async def test_edit_refuses_ambiguous_old_and_says_where(ws: Path) -> None:
    (ws / "m.py").write_text("x = 1\ny = 1\nz = 1\n")
    with pytest.raises(ToolError, match=r"matches 3 times in m.py \(lines 1, 2, 3\).*replace_all"):
        await call(ws, "edit_file", path="m.py", old="= 1", new="= 2")
    assert (ws / "m.py").read_text() == "x = 1\ny = 1\nz = 1\n"


async def test_edit_replace_all(ws: Path) -> None:
    (ws / "m.py").write_text("x = 1\ny = 1\n")
    result = await call(ws, "edit_file", path="m.py", old="= 1", new="= 2", replace_all=True)
    assert result.startswith("edited m.py: replaced 2 occurrences (first at line 1)")
    assert (ws / "m.py").read_text() == "x = 2\ny = 2\n"


async def test_edit_not_found_hints_at_whitespace(ws: Path) -> None:
    (ws / "m.py").write_text("a\n    value = 3\n")
    with pytest.raises(ToolError, match="not found in m.py .*occurs at line 2"):
        await call(ws, "edit_file", path="m.py", old="value = 3  ", new="value = 4")
    with pytest.raises(ToolError, match="not found in m.py; read the file"):
        await call(ws, "edit_file", path="m.py", old="absent", new="x")


async def test_edit_argument_mistakes(ws: Path) -> None:
    (ws / "m.py").write_text("a\n")
    with pytest.raises(ToolError, match="old is empty"):
        await call(ws, "edit_file", path="m.py", old="", new="x")
    with pytest.raises(ToolError, match="the same"):
        await call(ws, "edit_file", path="m.py", old="a", new="a")
    with pytest.raises(ToolError, match="no such file"):
        await call(ws, "edit_file", path="nope.py", old="a", new="b")
    (ws / "bin.dat").write_bytes(b"\xff\xfe")
    with pytest.raises(ToolError, match="not UTF-8 text"):
        await call(ws, "edit_file", path="bin.dat", old="a", new="b")


async def test_edit_matches_crlf_files_with_lf_text(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    await call(ws, "edit_file", path="w.txt", old="one\ntwo", new="1\n2")
    assert (ws / "w.txt").read_bytes() == b"1\r\n2\r\n"


async def test_edit_through_symlink_edits_the_target(ws: Path) -> None:
    (ws / "real.txt").write_text("old\n")
    os.symlink("real.txt", ws / "alias.txt")
    await call(ws, "edit_file", path="alias.txt", old="old", new="new")
    assert (ws / "real.txt").read_text() == "new\n"
    assert (ws / "alias.txt").is_symlink()


def test_real_path_names_what_resolve_names(tmp_path):
    """The fast real path (Linux's /proc) gives what `Path.resolve` gives, for plain files,
    symlinked folders and files, relative links, missing paths and paths through a file."""
    import os

    from blitz_kernel.tools.paths import real_path

    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "real" / "deep" / "f.txt").write_text("x")
    os.mkfifo(tmp_path / "real" / "pipe")
    (tmp_path / "dirlink").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "rel").symlink_to("deep/f.txt")
    (tmp_path / "chain").symlink_to("dirlink/rel")
    cases = [
        tmp_path / "real" / "deep" / "f.txt",
        tmp_path / "dirlink" / "deep" / "f.txt",
        tmp_path / "dirlink" / "rel",
        tmp_path / "chain",
        tmp_path / "dirlink",
        tmp_path / "real" / "pipe",  # O_PATH reads nothing: a FIFO cannot block
        tmp_path / "dirlink" / "missing" / "new.txt",
        tmp_path / "real" / "deep" / "f.txt" / "under-a-file",
        tmp_path / "dirlink" / "deep" / ".." / "rel",
    ]
    for case in cases:
        assert real_path(case) == case.resolve(), case
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises((RuntimeError, OSError)):
        real_path(tmp_path / "loop")


def test_is_within_compares_whole_components():
    from pathlib import Path

    from blitz_kernel.tools.paths import is_within

    assert is_within(Path("/a/b"), Path("/a/b")) and is_within(Path("/a/b/c"), Path("/a/b"))
    assert not is_within(Path("/a/bc"), Path("/a/b"))  # a sibling that shares the prefix
    assert not is_within(Path("/a"), Path("/a/b"))
    assert is_within(Path("/anything"), Path("/"))


@pytest.mark.parametrize(
    "content",
    ["a\nb\n", "a\nb", "\n", "only one line", "tab\there\n\n\nblank lines\n", "ünïcödé ✓\n" * 30],
)
def test_a_small_file_read_whole_in_one_pass_reads_as_line_by_line(content: str) -> None:
    from blitz_kernel.tools import files

    data = content.encode()
    whole = files._whole_file(data, 0, files.DEFAULT_LINE_LIMIT)
    by_line = files._render_page(files._read_page(files._split_lines(data), 0, files.DEFAULT_LINE_LIMIT, None), 0, "f")
    assert whole is not None and whole == by_line


@pytest.mark.parametrize(
    ("content", "offset", "limit"),
    [
        ("a\r\nb\r\n", 0, 2000),  # CRLF: the line ends are taken off line by line
        ("x" * 2500 + "\n", 0, 2000),  # a long line is cut with a note
        ("a\nb\nc\n", 1, 2000),  # an offset
        ("a\nb\nc\n", 0, 2),  # a page cut, with its "call again" note
        ("", 0, 2000),  # empty: said in words
        ("caf\xe9".encode("latin-1").decode("latin-1"), 0, 2000),
    ],
)
def test_a_file_the_one_pass_cannot_show_takes_the_line_by_line_path(content: str, offset: int, limit: int) -> None:
    from blitz_kernel.tools import files

    data = content.encode("latin-1") if "\xe9" in content else content.encode()
    assert files._whole_file(data, offset, limit) is None
