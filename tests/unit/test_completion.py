"""Inline completion's service (server/completion.py): off until the user names a model, the
workspace's own file cannot switch it on, the suggestion streams and is cleaned, usage is kept
apart, and a notebook outside the server's root is refused (docs/completion.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from blitz_kernel.server.completion import Completer, CompletionRequest, clean, prompt_text
from blitz_kernel.tools.variable_names import UserVariable


def user_config(home: Path, text: str) -> None:
    (home / ".blitz").mkdir(parents=True, exist_ok=True)
    (home / ".blitz" / "config.toml").write_text(text)


def script(folder: Path, *steps: dict[str, object]) -> Path:
    path = folder / "completion-script.json"
    path.write_text(json.dumps(list(steps)))
    return path


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    root, home = tmp_path / "root", tmp_path / "home"
    (root / "project").mkdir(parents=True)
    home.mkdir()
    return root, home


async def chunks(completer: Completer, request: CompletionRequest) -> list[tuple[str, str, str | None]]:
    return [(c.kind, c.text, c.message) async for c in completer.stream(request)]


async def test_off_until_a_model_is_named_and_nothing_is_sent(dirs):
    root, home = dirs
    completer = Completer(root, home)
    settings = completer.settings("project/nb.ipynb")
    assert not settings.enabled and "completion.model is not set" in (settings.reason or "")
    got = await chunks(completer, CompletionRequest(path="project/nb.ipynb", prefix="df."))
    assert got == [("error", "", "completion.model is not set (docs/completion.md)")]
    assert completer.usage.total.calls == 0


async def test_a_suggestion_streams_as_it_grows_and_its_usage_is_counted(dirs):
    root, home = dirs
    steps = script(home, {"text": "head()\n```", "usage": {"prompt_tokens": 40, "completion_tokens": 3}})
    user_config(home, f'[completion]\nmodel = "scripted:{steps}"\ndebounce_ms = 120\n')
    completer = Completer(root, home)
    settings = completer.settings("project/nb.ipynb")
    assert settings.enabled and settings.debounce_ms == 120 and settings.max_tokens == 64
    got = await chunks(completer, CompletionRequest(path="project/nb.ipynb", prefix="df.", suffix=""))
    assert got[-1] == ("done", "head()", None)
    texts = [text for kind, text, _ in got if kind == "text"]
    assert texts and all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False))
    assert completer.usage.total.calls == 1 and completer.usage.total.output_tokens == 3


async def test_a_cloned_repository_cannot_switch_completion_on(dirs):
    root, home = dirs
    steps = script(root / "project", {"text": "x"})
    (root / "project" / "blitz.toml").write_text(f'[completion]\nmodel = "scripted:{steps}"\n')
    settings = Completer(root, home).settings("project/nb.ipynb")
    assert not settings.enabled  # held back until the user trusts the workspace


async def test_a_notebook_outside_the_root_is_refused(dirs):
    root, home = dirs
    got = await chunks(Completer(root, home), CompletionRequest(path="../elsewhere/nb.ipynb", prefix="x"))
    assert got[0][0] == "error" and "outside the server's root" in (got[0][2] or "")


def test_the_prompt_marks_the_cursor_between_the_neighbours():
    text = prompt_text(CompletionRequest(path="nb.ipynb", prefix="df.", suffix=")", before=["import pandas"]))
    assert text.index("import pandas") < text.index("df.<CURSOR>)")
    assert "Variables" not in text  # none sent (a busy kernel): no empty heading either


def test_the_kernels_variables_come_first_in_the_prompt():
    variables = [UserVariable(name="sales", type="DataFrame"), UserVariable(name="load", type="function")]
    text = prompt_text(CompletionRequest(path="nb.ipynb", prefix="sa", before=["x = 1"], variables=variables))
    assert text.index("sales: DataFrame\nload: function") < text.index("x = 1") < text.index("sa<CURSOR>")


@pytest.mark.parametrize(
    ("answer", "suffix", "cleaned"),
    [
        ("```python\nhead()\n```", "", "head()"),
        ("head())", ")", "head()"),
        ("mean()<CURSOR>", "", "mean()"),
    ],
)
def test_fences_the_cursor_mark_and_the_text_after_the_cursor_are_not_repeated(answer, suffix, cleaned):
    assert clean(answer, suffix) == cleaned


async def test_revoking_a_workspaces_trust_holds_its_completion_settings_back_at_once(dirs, monkeypatch):
    root, home = dirs
    steps = script(root / "project", {"text": "x"})
    (root / "project" / "blitz.toml").write_text(f'[completion]\nmodel = "scripted:{steps}"\n')
    completer = Completer(root, home)
    assert not completer.settings("project/nb.ipynb").enabled
    kernel = Completer(root, home).workspaces  # the kernel's own configuration, another process's
    folder = kernel.folder_of("project/nb.ipynb")
    kernel.configuration(folder).trust_workspace()  # %blitz_trust in the kernel
    assert completer.settings("project/nb.ipynb").enabled
    kernel.configuration(folder).revoke_trust()  # %blitz_trust --revoke in the kernel
    assert not completer.settings("project/nb.ipynb").enabled
