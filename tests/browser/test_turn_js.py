"""turn.js alone in Chromium, without Jupyter: the module is rendered into a blank page with a
small stand-in for anywidget's model (get/set/on/off/send), fed the state TurnState would sync.
This checks what the engine cannot yet be made to send end to end (an approval preview) and the
pieces of the widget that need no kernel: the diff colouring and folding, chips, notices, the
footer, and that model text stays text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from .conftest import ARTIFACTS, rgb

TURN_JS = Path(__file__).resolve().parents[2] / "blitz_kernel" / "notebook" / "widgets" / "static" / "turn.js"
TURN_CSS = TURN_JS.with_name("turn.css")

HARNESS = """
async ({source, css, state}) => {
  const style = document.createElement("style");
  style.textContent = css;
  document.head.append(style);
  const url = URL.createObjectURL(new Blob([source], {type: "text/javascript"}));
  const widget = (await import(url)).default;
  const handlers = {};
  window.sent = [];
  window.model = {
    state: {...state},
    get(name) { return this.state[name]; },
    set(name, value) { this.state[name] = value; (handlers[`change:${name}`] || []).forEach((h) => h()); },
    on(name, handler) { (handlers[name] = handlers[name] || []).push(handler); },
    off(name, handler) { handlers[name] = (handlers[name] || []).filter((h) => h !== handler); },
    send(message) { window.sent.push(message); },
  };
  const el = document.createElement("div");
  el.id = "widget";
  document.body.append(el);
  widget.render({model: window.model, el});
}
"""


def render(page: Any, **state: Any) -> Any:
    base = {
        "turn_id": "t1",
        "header": {"prompt": "p", "model": "m", "started_ms": 0},
        "items": [],
        "live": {},
        "pending": {},
        "review": {},
        "offer": {},
        "steers": [],
        "asides": [],
        "footer": {},
        "phase": "running",
        "stopping": "",
        "notice": "",
        "images": {},
    }
    page.set_content("<!doctype html><html><body></body></html>")
    page.evaluate(HARNESS, {"source": TURN_JS.read_text(), "css": TURN_CSS.read_text(), "state": {**base, **state}})
    return page.locator("#widget")


def pending_call(name: str, preview: str, kind: str, reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "name": name,
        "args": {},
        "decision": None,
        "reason": reason,
        "preview": preview,
        "preview_kind": kind,
    }


def test_the_approval_card_colours_a_diff_and_keeps_markup_as_text(page: Any):
    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-rate = 1\n+rate = 2  # <b>raised</b>\n"
    widget = render(
        page,
        pending={
            "request_id": "perm-1",
            "agent": None,
            "scope": [],
            "waiting": 0,
            "calls": [pending_call("edit_file", diff, "diff")],
        },
    )
    card = widget.get_by_role("group", name="Permission request", exact=True)
    preview = card.get_by_label("diff of edit_file", exact=True)
    expect(preview.locator(".blitz-diff-del")).to_have_text(["-rate = 1"])
    expect(preview.locator(".blitz-diff-add")).to_have_text(["+rate = 2  # <b>raised</b>"])
    expect(preview.locator("b")).to_have_count(0)
    # added lines on a green tint, removed ones on a red one, both unlike the block around them
    added, removed, block = (
        rgb(page.evaluate(f"() => getComputedStyle(document.querySelector('{selector}')).backgroundColor"))
        for selector in (".blitz-diff-add", ".blitz-diff-del", ".blitz-preview")
    )
    assert added[1] > added[0] and added[1] > added[2], added
    assert removed[0] > removed[1] and removed[0] > removed[2], removed
    assert len({added, removed, block}) == 3
    expect(card).to_contain_text("diff · 5 lines")
    card.get_by_role("button", name="Allow once", exact=True).click()
    assert page.evaluate("() => window.sent") == [
        {"kind": "ready", "turn_id": "t1"},
        {
            "kind": "decide",
            "request_id": "perm-1",
            "call_id": "c1",
            "decision": "allow",
            "reason": None,
            "turn_id": "t1",
        },
    ]
    widget.screenshot(path=str(ARTIFACTS / "turn-js-diff.png"))


def test_a_long_preview_folds_with_its_line_count_and_code_says_why_it_asks(page: Any):
    long_diff = "\n".join(["@@ -1,40 +1,40 @@", *(f"+line {n}" for n in range(40))])
    widget = render(
        page,
        pending={
            "request_id": "perm-2",
            "agent": "reviewer",
            "scope": ["c0"],
            "waiting": 1,
            "calls": [
                pending_call("write_file", long_diff, "diff"),
                {
                    **pending_call("run_python", "df.to_csv('o.csv')", "code", "writes a file: df.to_csv('o.csv')"),
                    "id": "c2",
                },
            ],
        },
    )
    card = widget.get_by_role("group", name="Permission request", exact=True)
    expect(card).to_contain_text("reviewer asks to run write_file, run_python")
    expect(card).to_contain_text("1 more request waiting")
    fold = card.locator("details.blitz-preview-fold")
    expect(fold.locator("summary")).to_have_text("diff · 41 lines (folded)")
    expect(fold.locator("pre")).to_be_hidden()
    fold.locator("summary").click()
    expect(fold.locator(".blitz-diff-add")).to_have_count(40)
    expect(card).to_contain_text("why it asks: writes a file: df.to_csv('o.csv')")
    expect(card.get_by_label("code of run_python", exact=True)).to_have_text("df.to_csv('o.csv')")


def test_chips_notices_and_the_footer(page: Any):
    widget = render(
        page,
        header={
            "prompt": "Look at @df",
            "model": "m",
            "started_ms": 0,
            "attachments": [
                {"kind": "variable", "name": "df", "size": 2100, "label": "variable df · 2.1 KB"},
                {
                    "kind": "file",
                    "name": "<img src=x onerror=alert(1)>",
                    "size": 5,
                    "label": "file <img src=x onerror=alert(1)> · 5 B",
                },
            ],
        },
        notice="untrusted workspace: hooks held back\nm has no price",
        footer={
            "model": "b",
            "input_tokens": 10,
            "output_tokens": 2,
            "cost": "unpriced",
            "elapsed_s": 1.0,
            "stop_reason": "end_turn",
            "context": "ctx 42 % of 128K",
            "switches": ["answered by b after a failed (429 rate limit)"],
        },
        phase="done",
    )
    chips = widget.get_by_role("list", name="Attachments", exact=True).get_by_role("listitem")
    expect(chips).to_have_text(["variable df · 2.1 KB", "file <img src=x onerror=alert(1)> · 5 B"])
    expect(widget.locator("img")).to_have_count(0)
    expect(widget.get_by_role("note")).to_have_text(["⚠ untrusted workspace: hooks held back", "⚠ m has no price"])
    expect(widget.locator(".blitz-footer")).to_have_text(
        "b · 10 in · 2 out · unpriced · 1.0 s · end_turn · ctx 42 % of 128K · answered by b after a failed (429 rate limit)"
    )


def test_the_footer_says_what_the_turn_waits_for_and_no_cost_before_a_call(page: Any):
    widget = render(
        page,
        footer={
            "model": "m",
            "input_tokens": 0,
            "output_tokens": 0,
            "cost": "—",
            "elapsed_s": 2.0,
            "stop_reason": "",
            "progress": "starting MCP server docs…",
        },
        phase="running",
    )
    expect(widget.locator(".blitz-footer")).to_have_text("m · 0 in · 0 out · — · 2.0 s · starting MCP server docs…")


def test_continue_is_offered_at_the_step_limit(page: Any):
    widget = render(page, offer={"offer_id": 3, "steps": 5, "line": "Stopped at the step limit."})
    group = widget.get_by_role("group", name="Step limit reached", exact=True)
    group.get_by_role("button", name="Continue", exact=True).click()
    expect(group.get_by_role("button", name="Continue", exact=True)).to_be_disabled()
    assert page.evaluate("() => window.sent")[-1] == {"kind": "continue", "offer_id": 3, "go": True, "turn_id": "t1"}


def test_a_nested_subagent_turn_keys_its_cards_by_path(page: Any):
    inner = {
        "kind": "tool",
        "id": "c1",
        "name": "read_file",
        "args": {"path": "a"},
        "status": "done",
        "started_ms": 0,
        "ended_ms": 5,
        "preview": "x",
        "error": None,
        "decision": None,
        "images": 0,
        "images_omitted": 0,
        "agent": "checker",
        "nested": [],
    }
    outer = {
        **inner,
        "name": "invoke_agent",
        "args": {"agent": "checker", "prompt": "p"},
        "presentation": {"preview_kind": None, "plan_review": False, "streams_subagent": True},
        "status": "running",
        "ended_ms": None,
        "agent": "",
        "nested": [{"kind": "text", "text": "checking **now**"}, inner],
    }
    widget = render(page, items=[outer])
    card = widget.locator('details.blitz-tool[data-tool-id="c1"]')
    expect(card).to_have_attribute("open", "")
    nested = card.get_by_role("group", name="checker turn", exact=True)
    expect(nested.locator("strong")).to_have_text("now")
    expect(nested.locator('details.blitz-tool[data-tool-id="c1/c1"]')).to_contain_text("read_file")
    assert json.loads(json.dumps(page.evaluate("() => window.sent"))) == [{"kind": "ready", "turn_id": "t1"}]


def test_the_tool_card_summary_shows_underscores_and_leading_spaces(page: Any):
    """The one-line summary of a call is cut sideways, never vertically: its box holds the
    text's whole height (underscores sit below the baseline) even where the notebook around it
    sets a tight line-height, and the code's spaces are kept, not collapsed."""
    code = "import pandas as pd\n    df = pd.read_csv('a.csv')\n    df.to_datetime()"
    tool = {"kind": "tool", "id": "c1", "name": "run_python", "args": {"code": code}, "status": "done"}
    widget = render(page, items=[tool])
    page.evaluate("() => { document.getElementById('widget').style.lineHeight = '1'; }")
    summary = widget.locator(".blitz-args")
    expect(summary).to_contain_text("pd.read_csv")
    fits = page.evaluate("""() => {
      const el = document.querySelector('.blitz-args');
      const range = document.createRange();
      range.selectNodeContents(el);
      const text = range.getBoundingClientRect(), box = el.getBoundingClientRect();
      return {text_top: text.top, text_bottom: text.bottom, box_top: box.top, box_bottom: box.bottom,
              white_space: getComputedStyle(el).whiteSpace};
    }""")
    assert fits["text_bottom"] <= fits["box_bottom"] + 0.5 and fits["text_top"] >= fits["box_top"] - 0.5, fits
    assert fits["white_space"] == "pre", fits  # `nowrap` would collapse "\n    df" to one space


def test_a_card_follows_the_presentation_its_tool_declares_not_its_name(page: Any):
    """A call whose tool declares a plan review says it waits for review and, once done, gives
    way to the plan; a call named like the plan tool that declares nothing is an ordinary card."""
    review = {"preview_kind": None, "plan_review": True, "streams_subagent": False}
    base = {"kind": "tool", "args": {}, "started_ms": 0, "ended_ms": None, "preview": "", "error": None}
    items = [
        {**base, "id": "c1", "name": "propose", "status": "waiting", "presentation": review},
        {**base, "id": "c2", "name": "propose", "status": "done", "ended_ms": 5, "presentation": review},
        {**base, "id": "c3", "name": "exit_plan_mode", "status": "done", "ended_ms": 5, "presentation": {}},
    ]
    widget = render(page, items=items)
    expect(widget.locator('details.blitz-tool[data-tool-id="c1"] .blitz-status')).to_have_text("waiting for review")
    expect(widget.locator('details.blitz-tool[data-tool-id="c2"]')).to_have_count(0)
    expect(widget.locator('details.blitz-tool[data-tool-id="c3"]')).to_have_count(1)
