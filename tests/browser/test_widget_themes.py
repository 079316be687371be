"""The turn widget in JupyterLab's light and dark themes, in a real JupyterLab and Chromium: a
turn waiting on a permission request shows its tool card and the approval card with its diff;
each theme's screenshot is kept (artifacts/widget-light.png, widget-dark.png); the text of
both cards keeps a WCAG contrast of at least 4.5 against the background it is drawn on, as
Chromium computes the colours; and the keyboard alone reaches Allow once (Tab from the tool
card) and presses it (Enter in one theme, Space in the other)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.fakeserver import FakeOpenAIServer

from .conftest import ARTIFACTS, JupyterServer, start_server, write_notebook

KERNEL_IDLE = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
  return Boolean(kernel && kernel.status === "idle" && panel.content && panel.content.widgets.length > 0);
}"""
CHANGE_THEME = "theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})"
THEME_APPLIED = "theme => document.body.dataset.jpThemeName === theme"
RUN_ALL = "() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }"

CONTRAST = """node => {
  // WCAG 2 contrast of a node's text against what is painted behind it: its own background
  // and its ancestors', composed from the first opaque one up (a tint mixed with color-mix()
  // computes to color(srgb ...)); a translucent text colour is composed over that background.
  const parse = text => {
    let m = text.match(/^rgba?\\(([\\d.]+),\\s*([\\d.]+),\\s*([\\d.]+)(?:,\\s*([\\d.]+))?\\)$/);
    if (m) return [+m[1] / 255, +m[2] / 255, +m[3] / 255, m[4] === undefined ? 1 : +m[4]];
    m = text.match(/^color\\(srgb ([\\d.e-]+) ([\\d.e-]+) ([\\d.e-]+)(?: \\/ ([\\d.]+))?\\)$/);
    if (m) return [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : +m[4]];
    throw new Error(`unparsed colour ${text}`);
  };
  const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
  const layers = [];
  for (let at = node; at; at = at.parentElement) {
    const colour = parse(getComputedStyle(at).backgroundColor);
    if (colour[3] > 0) layers.push(colour);
    if (colour[3] === 1) break;
  }
  let background = [1, 1, 1, 1]; // the canvas, where nothing is opaque
  for (const layer of layers.reverse()) background = over(layer, background);
  const text = over(parse(getComputedStyle(node).color), background);
  const luminance = c => {
    const [r, g, b] = c.slice(0, 3).map(v => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [hi, lo] = [luminance(text), luminance(background)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}"""

CHECKED = {
    "the approval card's heading": ".blitz-permission > .blitz-label",
    "the approval card's tool name": ".blitz-permission .blitz-call-head .blitz-tool-name",
    "Allow once": ".blitz-permission button.blitz-allow",
    "Deny": ".blitz-permission button.blitz-deny",
    "an added diff line": ".blitz-permission .blitz-diff-add",
    "the diff's file line": ".blitz-permission .blitz-diff-file",
    "the reason box": ".blitz-permission input.blitz-reason",
    "the tool card's status": "details.blitz-tool .blitz-status",
    "the tool card's name": "details.blitz-tool .blitz-tool-name",
    "the tool card's arguments": "details.blitz-tool .blitz-args",
    "the prompt": ".blitz-prompt",
    "the footer": ".blitz-footer",
}
MIN_CONTRAST = 4.5
"""WCAG 2 AA for normal text."""


@pytest.fixture(scope="module")
def lab(workspace: Path, model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    server = start_server("lab", workspace, model_server, tmp_path_factory.mktemp("lab-home"))
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("theme", "shot", "key"), [("JupyterLab Light", "widget-light", "Enter"), ("JupyterLab Dark", "widget-dark", " ")]
)
def test_the_cards_keep_contrast_and_allow_is_reached_by_keyboard(
    page: Any, lab: JupyterServer, model_server: FakeOpenAIServer, workspace: Path, theme: str, shot: str, key: str
):
    model_server.reset()
    target = f"{shot}.txt"
    model_server.enqueue(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": target, "content": "hi\n"}, "id": "call_w"}]},
        {"text": f"Wrote {target}."},
    )
    name = f"{shot}.ipynb"
    write_notebook(workspace / name, ["%load_ext blitz_kernel", f"%%blitz -s {shot}\nWrite {target}."])
    page.goto(lab.url(name) + "&reset")
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)
    page.evaluate(CHANGE_THEME, theme)
    page.wait_for_function(THEME_APPLIED, arg=theme)
    expect(page.locator("#jupyterlab-splash")).to_have_count(0)  # the theme has finished loading
    page.evaluate(RUN_ALL)

    turn = page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".blitz-turn")
    allow = turn.get_by_role("button", name="Allow once", exact=True)
    expect(allow).to_be_visible()
    expect(turn.locator("details.blitz-tool .blitz-status")).to_have_text("waiting for approval")
    expect(turn.locator(".blitz-permission .blitz-diff-add")).to_have_text("+hi")
    turn.screenshot(path=str(ARTIFACTS / f"{shot}.png"))

    contrast = {what: turn.locator(selector).first.evaluate(CONTRAST) for what, selector in CHECKED.items()}
    low = {what: round(ratio, 2) for what, ratio in contrast.items() if ratio < MIN_CONTRAST}
    assert not low, f"text below {MIN_CONTRAST}:1 in {theme}: {low}"

    # the keyboard alone: Tab from the tool card's summary lands on Allow once, a key presses it
    turn.locator("details.blitz-tool summary").first.focus()
    page.keyboard.press("Tab")
    expect(allow).to_be_focused()
    page.keyboard.press(key)
    expect(page.locator(".jp-Notebook .jp-Cell").nth(1)).to_contain_text(f"Wrote {target}.")
    expect(turn).to_have_count(0)  # the turn ended: the widget became the static rendering
    assert (workspace / target).read_text() == "hi\n"
