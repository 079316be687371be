"""escape_html: model text as Markdown with no raw HTML left, code kept readable.

The HTML checks render the result with mistune (a CommonMark renderer; JupyterLab's marked is
JavaScript) with raw HTML passed through, as JupyterLab does for a kernel's trusted output, and
look for elements the model wrote. The real browser check is in tests/browser."""

from __future__ import annotations

import re

import mistune
import pytest

from blitz_kernel.notebook.markdown import escape_html
from blitz_kernel.notebook.widgets import static

render_trusted = mistune.create_markdown(escape=False, plugins=["strikethrough", "table", "url"])
ALLOWED_TAGS = {
    "p",
    "code",
    "pre",
    "em",
    "strong",
    "ul",
    "ol",
    "li",
    "a",
    "blockquote",
    "hr",
    "br",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "del",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}

ATTACKS = [
    "<img src=x onerror=alert(1)>",
    "text <script>alert(1)</script> more",
    "<!-- hidden --><img src=x onerror=alert(1)>",
    "``<img src=x onerror=alert(1)>`",  # backtick runs of different lengths: no code span
    "\\`<img src=x onerror=alert(1)>`",  # an escaped backtick opens no code span
    "\\\\<img src=x onerror=alert(1)>",  # an escaped backslash escapes nothing after it
    "https://example.com/`<img src=x onerror=alert(1)>`",  # marked ends the link at '<'
    "```x`\n<img src=x onerror=alert(1)>\n```",  # a backtick in the info string: no fence
    "- ```\n<img src=x onerror=alert(1)>\n```",  # a fence inside a list item the next line ends
    "1. step\n  ```\n<img src=x onerror=alert(1)>\n  ```",
    "> ```\n<img src=x onerror=alert(1)>",
    "    ```\n<img src=x onerror=alert(1)>",  # indented code, not a fence
    "\t```\n<img src=x onerror=alert(1)>",
    "```\ncode\n```~\n<img src=x onerror=alert(1)>",  # marked closes a fence on this line
    "`a\n# <img src=x onerror=alert(1)>\n`",  # a span never crosses lines here
    "[`](<img src=x onerror=alert(1)>)`",
]


def tags(html: str) -> set[str]:
    return {name.lower() for name in re.findall(r"<\s*/?\s*([a-zA-Z][a-zA-Z0-9]*)", html)}


@pytest.mark.parametrize("text", ATTACKS)
def test_no_html_of_the_model_survives(text: str):
    html = render_trusted(escape_html(text))
    assert tags(html) <= ALLOWED_TAGS, html


def test_fenced_code_is_left_exactly_as_written():
    code = "```python\nif a < b:\n    print('<tag>')\n```"
    assert escape_html(f"Here:\n\n{code}\n\nDone <b>.") == f"Here:\n\n{code}\n\nDone &lt;b>."
    unclosed = "```\nstill <streaming>"
    assert escape_html(unclosed) == unclosed  # every renderer runs an open fence to the end
    tilde = "~~~\n<kept>\n~~~~ not a closing fence\n<kept too>\n~~~"
    assert escape_html(tilde) == tilde


def test_code_spans_stay_readable():
    assert escape_html("run `x = 1` now") == "run `x = 1` now"
    safe = escape_html("a `List<int>` and `` a`<b `` and `__init__ < 2`")
    assert safe == (
        "a <code>List&lt;int&gt;</code> and <code>a\\`&lt;b</code> and <code>\\_\\_init\\_\\_ &lt; 2</code>"
    )
    html = render_trusted(safe)
    assert "<code>List&lt;int&gt;</code>" in html  # shown as List<int>
    assert "<code>__init__ &lt; 2</code>" in html  # not bold: the underscores were escaped
    assert "<code>a`&lt;b</code>" in html


def test_the_static_rendering_uses_the_same_function():
    assert static.escape_html is escape_html
