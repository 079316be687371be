"""Model text as Markdown that cannot carry HTML, for every Markdown output the kernel makes
(the plain renderer's displays and the widget's static rendering).

Outputs a kernel produces count as trusted in JupyterLab, so raw HTML inside their Markdown is
rendered, event handlers included (`<img src=x onerror=...>`); a prompt injection in a file
the agent read must not get that far. So no `<` of the model's survives as a `<`:

- outside code it becomes `&lt;` (shown as `<`, never parsed as a tag);
- fenced code blocks stay as they are, so code reads exactly (and keeps its highlighting);
  only fences that every renderer agrees open one count (at most 3 spaces of indent — a deeper
  fence may belong to a list item that a less indented line ends), and a fence counts as closed
  at the first line any renderer would close it at. Guessing wrong can only over-escape;
- an inline code span that holds a `<` becomes `<code>…</code>` with its text escaped (an
  escaped `<` inside a real code span would show as `&lt;`; leaving it raw is unsafe, because
  renderers disagree on what is a code span: after a bare URL, marked ends the link at the
  `<` and reads the rest as a tag). Spans without `<` stay as they are.
"""

from __future__ import annotations

import re

_FENCE_OPEN = re.compile(r"^( {0,3})(`{3,}(?=[^`]*$)|~{3,})")
"""An opening fence: backtick fences may not have backticks in their info string."""
_MARKDOWN_PUNCTUATION = re.compile(r"([!\"#$%'()*+,\-./:;=?@\[\\\]^_`{|}~])")
"""ASCII punctuation Markdown may read as syntax (`&`, `<`, `>` become entities instead)."""


def escape_html(markdown: str) -> str:
    """`markdown` with no raw HTML left in it, code blocks kept readable (see the module)."""
    out: list[str] = []
    fence: tuple[int, str] | None = None
    """The open fence: its indent and its run of backticks or tildes."""
    for line in markdown.split("\n"):
        if fence is not None:
            if _closes(line, fence):
                fence = None
                out.append(line)
                continue
            if not line.strip() or _indent(line) >= fence[0]:
                out.append(line)
                continue
            fence = None  # a line left of the fence: its container may have ended
        opened = _FENCE_OPEN.match(line.expandtabs(4))  # a tab in the indent makes it 4+: no fence
        if opened:
            fence = (len(opened.group(1)), opened.group(2))
            out.append(line)
            continue
        out.append(_escape_line(line))
    return "\n".join(out)


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip(" "))


def _closes(line: str, fence: tuple[int, str]) -> bool:
    """Whether some renderer closes the fence here (marked accepts any mix of fence characters
    after the run; CommonMark only the same character)."""
    stripped = line.strip()
    return stripped.startswith(fence[1]) and not stripped.strip("`~")


def _escape_line(line: str) -> str:
    """One line outside fenced code: code spans kept (or made safe), every other `<` escaped."""
    out: list[str] = []
    index, length = 0, len(line)
    while index < length:
        char = line[index]
        if char == "\\" and index + 1 < length:
            escaped = line[index + 1]
            out.append("&lt;" if escaped == "<" else char + escaped)  # `\<` meant a literal `<`
            index += 2
            continue
        if char == "`":
            run_end = index
            while run_end < length and line[run_end] == "`":
                run_end += 1
            run = line[index:run_end]
            close = _closing_run(line, run, run_end)
            if close is None:
                out.append(run)  # no matching run on this line: literal backticks
                index = run_end
                continue
            span = line[index : close + len(run)]
            out.append(html_code_span(line[run_end:close]) if "<" in span else span)
            index = close + len(run)
            continue
        out.append("&lt;" if char == "<" else char)
        index += 1
    return "".join(out)


def _closing_run(line: str, run: str, start: int) -> int | None:
    """Where the backtick run of exactly `run`'s length that closes the span begins."""
    for match in re.finditer(r"`+", line[start:]):
        if len(match.group(0)) == len(run):
            return start + match.start()
    return None


def html_code_span(code: str) -> str:
    """A code span as inline HTML: its text escaped for HTML, and its punctuation for Markdown
    (inline HTML does not stop Markdown, so `__init__` would turn bold)."""
    if code.startswith(" ") and code.endswith(" ") and code.strip():
        code = code[1:-1]  # the padding a span uses around backticks, as Markdown strips it
    text = _MARKDOWN_PUNCTUATION.sub(r"\\\1", code)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<code>{text}</code>"
