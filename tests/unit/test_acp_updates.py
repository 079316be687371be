"""The pure parts of `blitz acp`'s mapping onto ACP (docs/acp.md): plan steps, tool titles and
kinds, diff content for file and cell edits, the prompt's text."""

from __future__ import annotations

from acp import text_block
from acp.schema import EmbeddedResourceContentBlock, ResourceContentBlock, TextResourceContents

from blitz_kernel.cli.acp_agent import prompt_text, safe_name
from blitz_kernel.cli.acp_updates import edit_content, plan_entries, title, tool_end, tool_start
from blitz_kernel.engine.events import ToolCallEvent, ToolResultEvent


def test_a_plans_list_items_are_its_entries_else_its_lines() -> None:
    listed = plan_entries("Steps:\n1. load the csv\n2. plot it\n- save the figure")
    assert [e.content for e in listed] == ["load the csv", "plot it", "save the figure"]
    assert {e.status for e in listed} == {"pending"}
    assert [e.content for e in plan_entries("Read the file.\nSummarise it.")] == ["Read the file.", "Summarise it."]


def test_file_and_cell_edits_carry_a_diff_and_other_calls_none() -> None:
    (written,) = edit_content("write_file", {"path": "a.txt", "content": "new"}) or []
    assert (written.type, written.path, written.old_text, written.new_text) == ("diff", "a.txt", None, "new")
    (edited,) = edit_content("edit_file", {"path": "a.txt", "old": "x = 1", "new": "x = 2"}) or []
    assert (edited.old_text, edited.new_text) == ("x = 1", "x = 2")
    (cell,) = edit_content("notebook_edit", {"action": "replace", "index": 3, "source": "df.head()"}) or []
    assert (cell.path, cell.new_text) == ("notebook cell 3", "df.head()")
    assert edit_content("run_python", {"code": "1"}) is None


def test_tool_cards_have_a_kind_a_title_and_end_completed_or_failed() -> None:
    started = tool_start(ToolCallEvent(id="c1", name="read_file", args={"path": "data.csv"}), "")
    assert (started.kind, started.title, started.status) == ("read", "read_file data.csv", "in_progress")
    assert started.locations[0].path == "data.csv"
    nested = tool_start(ToolCallEvent(id="c2", name="mystery", args={}), "agent-call/")
    assert (nested.tool_call_id, nested.kind) == ("agent-call/c2", "other")
    failed = tool_end(ToolResultEvent(id="c1", name="read_file", ok=False, status="error", error="no such file"), "")
    assert failed.status == "failed" and failed.content[0].content.text == "no such file"
    assert title("notebook_edit", {"action": "insert", "index": 0}) == "notebook_edit insert cell 0"


def test_the_prompt_is_its_text_with_embedded_text_resources() -> None:
    resource = TextResourceContents(uri="file:///w/notes.md", text="# Notes")
    blocks = [
        text_block("summarise"),
        EmbeddedResourceContentBlock(type="resource", resource=resource),
        ResourceContentBlock(type="resource_link", uri="file:///w/data.csv", name="data.csv"),
    ]
    assert prompt_text(blocks) == "summarise\n\nfile:///w/notes.md:\n```\n# Notes\n```\n(file:///w/data.csv)"


def test_a_client_name_is_kept_to_safe_characters() -> None:
    assert safe_name("Zed Editor/1.0") == "ZedEditor1.0"
    assert safe_name(None) == "client"
