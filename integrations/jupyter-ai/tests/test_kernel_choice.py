"""Which kernel the Blitz persona attaches to, and what it says when `blitz` is missing."""

from __future__ import annotations

import importlib
import sys

import pytest
from jupyter_ai_persona_manager import PersonaRequirementsUnmet

from blitz_jupyter_ai.kernel_choice import choose_kernel


def session(path: str, kernel_id: str, last_activity: str, kind: str = "notebook") -> dict[str, object]:
    return {"path": path, "type": kind, "kernel": {"id": kernel_id, "last_activity": last_activity}}


SESSIONS = [
    session("work/old.ipynb", "k-old", "2026-01-01T10:00:00.000000Z"),
    session("work/new.ipynb", "k-new", "2026-01-01T11:00:00.000000Z"),
    session("other/far.ipynb", "k-far", "2026-01-01T12:00:00.000000Z"),
    session("work/console", "k-console", "2026-01-01T13:00:00.000000Z", kind="console"),
    session("top.ipynb", "k-top", "2026-01-01T09:00:00.000000Z"),
]


def test_the_most_recently_active_notebook_in_the_chats_folder() -> None:
    chosen = choose_kernel(SESSIONS, "work/talk.chat")
    assert chosen is not None
    assert (chosen.kernel_id, chosen.notebook, chosen.reason) == ("k-new", "work/new.ipynb", "folder")


def test_a_notebook_attached_to_the_message_wins_even_in_another_folder() -> None:
    chosen = choose_kernel(SESSIONS, "work/talk.chat", attached=["./other/far.ipynb"])
    assert chosen is not None
    assert (chosen.kernel_id, chosen.reason) == ("k-far", "attached")


def test_an_attached_notebook_without_a_kernel_falls_back_to_the_folder() -> None:
    chosen = choose_kernel(SESSIONS, "work/talk.chat", attached=["work/closed.ipynb"])
    assert chosen is not None and chosen.kernel_id == "k-new"


def test_a_chat_at_the_root_sees_only_the_roots_notebooks() -> None:
    chosen = choose_kernel(SESSIONS, "talk.chat")
    assert chosen is not None and chosen.kernel_id == "k-top"


def test_no_notebook_in_the_folder_is_no_kernel() -> None:
    assert choose_kernel(SESSIONS, "empty/talk.chat") is None
    assert choose_kernel([session("work/a.ipynb", "", "x")], "work/talk.chat") is None


def test_a_missing_blitz_leaves_the_persona_out_with_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLITZ_EXECUTABLE", "/nowhere/blitz")
    sys.modules.pop("blitz_jupyter_ai.persona", None)
    with pytest.raises(PersonaRequirementsUnmet, match=r"BLITZ_EXECUTABLE='/nowhere/blitz' is not an executable"):
        importlib.import_module("blitz_jupyter_ai.persona")
    monkeypatch.delenv("BLITZ_EXECUTABLE")
    monkeypatch.setenv("PATH", "/nowhere")
    sys.modules.pop("blitz_jupyter_ai.persona", None)
    with pytest.raises(PersonaRequirementsUnmet, match=r"needs `blitz`.*BLITZ_EXECUTABLE="):
        importlib.import_module("blitz_jupyter_ai.persona")
    sys.modules.pop("blitz_jupyter_ai.persona", None)
