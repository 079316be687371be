"""The widget's newer cards without a kernel: sub-agent turns nested in their invoke_agent card
with their permission requests answered in the turn's card, attachment chips, the footer's
fallback switch and context fill, notices, the approval card's reason and preview, and the
static rendering a saved notebook keeps (rendered here with mistune, a CommonMark renderer).
Sub-agent events come from real engine turns on a ScriptedModel."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from blitz_kernel.core.attachments import AttachmentSummary
from blitz_kernel.core.tools import ToolPresentation
from blitz_kernel.core.usage import UsageTotals
from blitz_kernel.engine.events import (
    Event,
    ModelSwitchEvent,
    NoticeEvent,
    PendingCall,
    PermissionRequest,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
)
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.scripted import ScriptedModel
from blitz_kernel.notebook.lines import attachment_label, context_fill, usage_line
from blitz_kernel.notebook.widgets.controller import TurnController
from blitz_kernel.notebook.widgets.nested import asked
from blitz_kernel.notebook.widgets.state import TurnState
from blitz_kernel.notebook.widgets.static import static_bundle
from blitz_kernel.notebook.widgets.view import DecideMessage, ReadyMessage
from blitz_kernel.tools import builtin_tools
from blitz_kernel.tools.registry import Tool, ToolContext, ToolKind
from tests.helpers.workspaces import scripted_workspace

from .conftest import ScriptedApprover, call, tool_step

PRESENTED = {tool.name: tool.presentation for tool in builtin_tools()}
"""How each built-in tool asks to be shown, as the engine puts it in its events."""

START = TurnStarted(session="s", turn_index=0, prompt="Go.", agent="blitz", model="m")
DONE = TurnDone(stop_reason="end_turn", usage=UsageTotals())


def _agent(root: Path, name: str, tools: str = "read_file, write_file, invoke_agent") -> None:
    agents = root / ".blitz" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / f"{name}.md").write_text(f"---\nname: {name}\ndescription: the {name}\ntools: {tools}\n---\nWork.\n")


def _workspace(root: Path, steps: list[Any]) -> Workspace:
    return scripted_workspace(root, steps)[0]


def rendered(markdown: str) -> str:
    """The static rendering's Markdown as a CommonMark renderer makes it HTML (raw HTML kept,
    as JupyterLab, nbviewer and GitHub keep `<details>`)."""
    import mistune

    return str(mistune.create_markdown(escape=False)(markdown))


def folded(events: list[Event]) -> TurnState:
    state = TurnState(turn_id="t", prompt="", session="")
    for event in events:
        state.apply(event)
    return state


# -- 1. sub-agent cards ----------------------------------------------------------------------


async def test_ENG70_a_subagents_turn_nests_in_its_invoke_agent_card(tmp_path: Path):
    """Two levels deep, with the same call id (`c1`) at every level: each card is found in its
    own agent's turn, and the root card that shares the id is left alone."""
    _agent(tmp_path, "reviewer")
    _agent(tmp_path, "checker")
    (tmp_path / "a.py").write_text("x = 1\n")
    ws = _workspace(
        tmp_path,
        [
            tool_step({**call("invoke_agent", agent="reviewer", prompt="review a.py"), "id": "c1"}),
            tool_step({**call("invoke_agent", agent="checker", prompt="check"), "id": "c1"}),
            tool_step({**call("read_file", path="a.py"), "id": "c1"}),
            {"text": "checked: fine"},
            {"text": "The **review**: fine"},
            {"text": "All good."},
        ],
    )
    result = await ws.run("review", session="s", approver=ScriptedApprover("allow"))
    state = folded(result.events)

    [card] = state.tool_items()
    assert card["name"] == "invoke_agent" and card["status"] == "done"
    kinds = [(item["kind"], item.get("name", item.get("text"))) for item in card["nested"]]
    assert kinds == [("tool", "invoke_agent"), ("text", "The **review**: fine")]
    inner_call = card["nested"][0]
    assert inner_call["kind"] == "tool" and inner_call["agent"] == "reviewer" and inner_call["status"] == "done"
    [read, answer] = inner_call["nested"]
    assert read["kind"] == "tool" and (read["name"], read["agent"], read["status"]) == ("read_file", "checker", "done")
    assert answer == {"kind": "text", "text": "checked: fine"}

    data, metadata = static_bundle(state, result.text)
    plain = data["text/plain"].splitlines()
    at = plain.index(next(line for line in plain if line.startswith('⚙ invoke_agent(agent="reviewer"')))
    assert plain[at + 1].startswith('  ⚙ invoke_agent(agent="checker"')
    assert plain[at + 2].startswith('    ⚙ read_file(path="a.py")')
    assert plain[at + 3] == "    » checker: checked: fine"
    assert plain[at + 4] == "  » reviewer: The **review**: fine"
    html = rendered(data["text/markdown"])
    outer = html.find('<summary><code>⚙ invoke_agent(agent="reviewer"')
    inner = html.find('<summary><code>⚙ invoke_agent(agent="checker"')
    read = html.find('<summary><code>⚙ read_file(path="a.py")')
    assert 0 <= outer < inner < read  # the sub-agents' cards inside their callers' cards
    assert html.count("<details>") == html.count("</details>") == 3
    assert html.rindex("</details>") > html.index("checker:</em> checked: fine")
    [record] = metadata["blitz"]["tool_calls"]
    assert record["subagent_calls"][0]["subagent_calls"][0]["name"] == "read_file"


async def test_ENG70_a_subagents_permission_request_is_answered_in_the_widget(tmp_path: Path):
    """The sub-agent's request shows in the turn's one permission card, naming the agent; an
    Allow clicked there (a DecideMessage, as the browser sends it) lets its write_file run."""
    _agent(tmp_path, "reviewer")
    ws = _workspace(
        tmp_path,
        [
            tool_step({**call("invoke_agent", agent="reviewer", prompt="fix it"), "id": "c1"}),
            tool_step({**call("write_file", path="fixed.txt", content="ok"), "id": "c1"}),
            {"text": "wrote it"},
            {"text": "Fixed."},
        ],
    )
    controller = TurnController(ws, "s", "fix")
    controller.receive(ReadyMessage(kind="ready", turn_id=controller.turn_id))
    shown: list[dict[str, Any]] = []

    def on_event(event: Event) -> None:
        controller.apply(event)
        request = asked(event)
        if request is not None:
            shown.append(controller.state.synced_value("pending"))
            # the click arrives later, as a comm message would
            asyncio.get_running_loop().call_soon(
                controller.receive,
                DecideMessage(
                    kind="decide",
                    turn_id=controller.turn_id,
                    request_id=request.request_id,
                    call_id=request.calls[0].id,
                    decision="allow",
                ),
            )

    result = await ws.run("fix", session="s", approver=controller.approver, on_event=on_event)
    assert result.text == "Fixed."
    assert (tmp_path / "fixed.txt").read_text() == "ok"
    [pending] = shown
    assert pending["agent"] == "reviewer" and pending["scope"] == ["c1"]
    assert [c["name"] for c in pending["calls"]] == ["write_file"]
    state = controller.state
    assert state.pending is None
    [card] = state.tool_items()
    assert card["decision"] is None  # the root card with the same id was not the one allowed
    nested_write = card["nested"][0]
    assert nested_write["kind"] == "tool" and (nested_write["decision"], nested_write["status"]) == ("allow", "done")


def test_ENG70_parallel_subagent_requests_queue_on_the_one_card():
    state = folded(
        [
            START,
            ToolCallEvent(
                id="a", name="invoke_agent", args={"agent": "x", "prompt": "p"}, presentation=PRESENTED["invoke_agent"]
            ),
            ToolCallEvent(
                id="b", name="invoke_agent", args={"agent": "y", "prompt": "p"}, presentation=PRESENTED["invoke_agent"]
            ),
        ]
    )
    from blitz_kernel.engine.events import PermissionDecision, SubagentEvent

    def wrapped(call_id: str, agent: str, event: Event) -> SubagentEvent:
        return SubagentEvent(call_id=call_id, agent=agent, depth=1, event=event)

    for call_id, agent, request_id in (("a", "x", "perm-7"), ("b", "y", "perm-8")):
        state.apply(wrapped(call_id, agent, ToolCallEvent(id="c1", name="write_file", args={"path": agent})))
        state.apply(
            wrapped(
                call_id,
                agent,
                PermissionRequest(
                    request_id=request_id, calls=[PendingCall(id="c1", name="write_file", args={"path": agent})]
                ),
            )
        )
    shown = state.synced_value("pending")
    assert (shown["request_id"], shown["agent"], shown["waiting"]) == ("perm-7", "x", 1)
    state.apply(wrapped("a", "x", PermissionDecision(call_id="c1", decision="deny")))
    shown = state.synced_value("pending")
    assert (shown["request_id"], shown["agent"], shown["waiting"]) == ("perm-8", "y", 0)
    assert state.tool_items()[0]["nested"][0]["status"] == "denied"  # type: ignore[typeddict-item]
    assert state.tool_items()[1]["nested"][0]["status"] == "waiting"  # type: ignore[typeddict-item]


def test_a_subagents_call_alone_is_a_change_the_widget_sends():
    """Regression: the synced `items` copied each card but shared its `nested` list with the
    value sent before, so a flush whose only change was a sub-agent's new call compared equal
    to the last one and traitlets sent nothing: the nested card was missing until something
    else about the turn changed (a kernel test saw it about one run in ten)."""
    from blitz_kernel.engine.events import SubagentEvent

    state = folded(
        [
            START,
            ToolCallEvent(
                id="a", name="invoke_agent", args={"agent": "x", "prompt": "p"}, presentation=PRESENTED["invoke_agent"]
            ),
        ]
    )
    sent = state.take_dirty()["items"]  # what the widget holds now
    state.apply(
        SubagentEvent(call_id="a", agent="x", depth=1, event=ToolCallEvent(id="c1", name="write_file", args={}))
    )
    now = state.take_dirty()["items"]
    assert now != sent  # traitlets sends a value only when it differs from the one it holds
    assert [n["name"] for n in now[0]["nested"]] == ["write_file"] and sent[0]["nested"] == []


# -- 2. attachment chips ---------------------------------------------------------------------


def test_ENG11_attachments_are_chips_in_the_header_and_the_static_rendering():
    started = START.model_copy(
        update={
            "attachments": [
                AttachmentSummary(kind="variable", name="df", size=2100),
                AttachmentSummary(kind="cell", name="cell:3", size=80),
            ]
        }
    )
    state = folded([started, DONE])
    chips = state.synced_value("header")["attachments"]
    assert [chip["label"] for chip in chips] == ["variable df · 2.1 KB", "cell cell:3 · 80 B"]
    data, metadata = static_bundle(state, "")
    assert "Attached: variable df · 2.1 KB, cell cell:3 · 80 B" in data["text/plain"]
    assert "*Attached:* `variable df · 2.1 KB`, `cell cell:3 · 80 B`" in data["text/markdown"]
    assert metadata["blitz"]["attachments"][0] == {"kind": "variable", "name": "df", "size": 2100}


def test_an_attachment_name_with_markup_stays_text():
    assert attachment_label("file", "<b>x</b>", 5) == "file <b>x</b> · 5 B"
    started = START.model_copy(update={"attachments": [AttachmentSummary(kind="file", name="<img src=x>", size=5)]})
    data, _ = static_bundle(folded([started, DONE]), "")
    assert "<img" not in data["text/markdown"]


# -- 3. footer and notices -------------------------------------------------------------------


def test_GR01_the_switch_and_the_context_fill_are_on_the_footer_and_the_usage_line():
    switch = ModelSwitchEvent(failed="openai/gpt-4.1", reason="429 rate limit", answered_by="anthropic/claude")
    done = DONE.model_copy()
    state = folded([START, switch, done])
    footer = state.synced_value("footer")
    assert footer["switches"] == ["answered by anthropic/claude after openai/gpt-4.1 failed (429 rate limit)"]
    assert footer["context"] == ""  # the engine did not report the fill: nothing made up
    assert "answered by anthropic/claude after openai/gpt-4.1 failed (429 rate limit)" in usage_line(state)
    state.context_used, state.context_window = 55_000, 131_072
    assert context_fill(state.context_used, state.context_window) == "ctx 42 % of 128K"
    assert usage_line(state).endswith(
        "· ctx 42 % of 128K · answered by anthropic/claude after openai/gpt-4.1 failed (429 rate limit)"
    )
    assert context_fill(10, None) == "" and context_fill(50_000, 200_000) == "ctx 25 % of 200K"
    assert context_fill(258, 128_000) == "ctx <1 % of 128K"


def test_notices_accumulate_one_a_line_and_the_static_rendering_keeps_them():
    state = folded(
        [
            START,
            NoticeEvent(
                kind="untrusted_workspace", message="untrusted workspace: approval.tools held back; %blitz_trust"
            ),
            NoticeEvent(kind="unpriced_model", message="m has no price"),
            NoticeEvent(kind="unpriced_model", message="m has no price"),
            DONE.model_copy(update={"not_saved": "the store is read-only"}),
        ]
    )
    assert state.synced_value("notice").split("\n") == [
        "untrusted workspace: approval.tools held back; %blitz_trust",
        "m has no price",
        "session not saved: the store is read-only",
    ]
    data, _ = static_bundle(state, "")
    assert "⚠ untrusted workspace: approval.tools held back; %blitz_trust" in data["text/plain"]


# -- 4. the approval card --------------------------------------------------------------------


def test_the_approval_card_carries_the_reason_and_a_typed_preview():
    diff = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    state = folded(
        [
            START,
            ToolCallEvent(id="c1", name="edit_file", args={}),
            ToolCallEvent(id="c2", name="run_python", args={"code": "df.to_csv('o.csv')"}),
            PermissionRequest(
                request_id="perm-1",
                calls=[
                    PendingCall(id="c1", name="edit_file", args={}, preview=diff, presentation=PRESENTED["edit_file"]),
                    PendingCall(
                        id="c2",
                        name="run_python",
                        args={"code": "df.to_csv('o.csv')"},
                        reason="writes a file: df.to_csv('o.csv')",
                        preview="df.to_csv('o.csv')",
                        presentation=PRESENTED["run_python"],
                    ),
                ],
            ),
        ]
    )
    calls = state.synced_value("pending")["calls"]
    assert [(c["preview_kind"], c["reason"]) for c in calls] == [
        ("diff", None),
        ("code", "writes a file: df.to_csv('o.csv')"),
    ]
    assert calls[0]["preview"] == diff


def test_a_blocked_call_keeps_the_hooks_reason_on_its_card():
    state = folded(
        [
            START,
            ToolCallEvent(id="c1", name="run_python", args={"code": "1"}),
            ToolResultEvent(
                id="c1", name="run_python", ok=False, status="blocked", error="blocked by pre_tool hook: no shell"
            ),
        ]
    )
    [card] = state.tool_items()
    assert (card["status"], card["error"]) == ("blocked", "blocked by pre_tool hook: no shell")
    data, _ = static_bundle(state, "")
    assert "⊘ blocked blocked by pre_tool hook: no shell" in data["text/plain"]


# -- 5. Undo this turn -----------------------------------------------------------------------


class RecordingOutput:
    """The cell's outputs as a test sees them (the widget presenter's WidgetOutput)."""

    def __init__(self) -> None:
        self.shown: list[Any] = []
        self.replaced: list[tuple[Any, dict[str, str], dict[str, Any] | None]] = []

    def show(self, view: Any) -> Any:
        self.shown.append(view)
        return f"display-{len(self.shown)}"

    def replace(self, handle: Any, data: dict[str, str], metadata: dict[str, Any] | None = None) -> None:
        self.replaced.append((handle, data, metadata))

    def append(self, data: dict[str, str]) -> None:
        pass


async def _finished_widget_turn(ws: Workspace, done: TurnDone, turn_index: int = 0) -> tuple[Any, RecordingOutput]:
    from blitz_kernel.engine.turn.setup import TurnResult
    from blitz_kernel.notebook.presenters import WidgetPresenter

    controller = TurnController(ws, "s", "go")
    output = RecordingOutput()
    presenter = WidgetPresenter(controller, output=output)
    controller.state.apply(START.model_copy(update={"turn_index": turn_index}))
    presenter.catch_up()
    controller.state.apply(done)
    result = TurnResult(text="", stop_reason="end_turn", usage=UsageTotals(), session="s", turn_index=turn_index)
    await presenter.finish(result)
    return presenter, output


async def test_an_undoable_turn_leaves_an_undo_button_under_its_rendering(tmp_path: Path):
    from blitz_kernel.notebook.widgets.undo import UndoButton

    ws = _workspace(tmp_path, [])
    presenter, output = await _finished_widget_turn(ws, DONE.model_copy(update={"undoable": True}))
    assert isinstance(output.shown[-1], UndoButton) and output.shown[-1].status == "ready"
    assert presenter.undo is not None
    _, plain_output = await _finished_widget_turn(ws, DONE)  # nothing to undo: no button
    assert not any(isinstance(view, UndoButton) for view in plain_output.shown)


async def test_undo_refuses_to_skip_later_turns_and_says_how_to_rewind(tmp_path: Path):
    ws = _workspace(tmp_path, [{"text": "one"}, {"text": "two"}, {"text": "three"}])
    for prompt in ("a", "b", "c"):
        await ws.run(prompt, session="s")
    presenter, _ = await _finished_widget_turn(ws, DONE.model_copy(update={"undoable": True}), turn_index=0)
    control = presenter.undo
    control._receive(control.view, {"kind": "undo", "turn_id": control.state.turn_id}, [])
    assert (control.view.status, control.view.report) == ("blocked", "undo the later turns first (%blitz_rewind 3)")
    assert control.task is None  # nothing was undone out of order
    control._receive(control.view, {"kind": "undo", "turn_id": "another-turn"}, [])  # stale: ignored
    assert control.task is None


async def test_undo_this_turn_restores_the_file_and_marks_the_rendering(tmp_path: Path):
    ws = _workspace(tmp_path, [tool_step(call("write_file", path="new.txt", content="x")), {"text": "Wrote it."}])
    result = await ws.run("write", session="s", approver=ScriptedApprover("allow"))
    done = next(e for e in result.events if isinstance(e, TurnDone))
    assert done.undoable and (tmp_path / "new.txt").exists()
    presenter, output = await _finished_widget_turn(ws, done, turn_index=result.turn_index)
    control = presenter.undo
    control.click()
    assert control.view.status == "running" and control.task is not None
    await asyncio.wait_for(control.task, 10)
    assert control.view.status == "done", control.view.report
    assert not (tmp_path / "new.txt").exists()
    handle, data, metadata = output.replaced[-1]
    assert handle == "display-1" and "This turn was undone (" in data["text/plain"]
    assert metadata is not None and metadata["blitz"]["undone"] is True
    control.click()  # "Undone": a second click does nothing
    assert control.view.status == "done"


# -- 6. Continue past the step limit ----------------------------------------------------------


async def _cell_turn_at_the_limit(ws: Workspace, answer: Any) -> tuple[Any, Any]:
    """A widget cell turn (the probe answered by a fake front end) that stops at max_turns=1;
    `answer(controller)` is what the user does once Continue is offered."""
    from blitz_kernel.engine.turn.options import RunOptions
    from blitz_kernel.notebook.live import CellTurn
    from blitz_kernel.notebook.probe import FrontEndMemory, FrontEndProbe

    from .front_end_fakes import CommOpener, FakeClock

    probe = FrontEndProbe(open_comm=CommOpener(answer=True), call_later=FakeClock().call_later, memory=FrontEndMemory())
    turn = CellTurn(ws, "s", "Look twice.", probe=probe, plain_output=None, widget_output=RecordingOutput())
    running = asyncio.ensure_future(turn.run(RunOptions(max_turns=1)))
    async with asyncio.timeout(10):
        while turn.controller is None or not turn.controller.state.offer:  # noqa: ASYNC110 - bounded; no event marks it
            if (
                turn.controller is not None
                and turn.controller.view is not None
                and not turn.controller.rendered.is_set()
            ):
                turn.controller.receive(ReadyMessage(kind="ready", turn_id=turn.controller.turn_id))
            if running.done():
                break
            await asyncio.sleep(0)
    if not running.done():
        answer(turn.controller)
    return turn, await asyncio.wait_for(running, 10)


async def test_continue_at_the_step_limit_goes_on_in_the_same_turn_context(tmp_path: Path):
    from blitz_kernel.engine.turn.options import RunOptions
    from blitz_kernel.notebook.live import CellTurn
    from blitz_kernel.notebook.widgets.view import ContinueMessage

    m = ScriptedModel([tool_step(call("list_files")), {"text": "Found them."}])
    ws = Workspace.open(tmp_path, model=m, environ={}, home=tmp_path / "home")
    offered: list[dict[str, Any]] = []

    def press_continue(controller: TurnController) -> None:
        offered.append(controller.state.synced_value("offer"))
        offer_id = controller.state.offer["offer_id"]
        controller.receive(
            ContinueMessage(kind="continue", turn_id=controller.turn_id, offer_id=offer_id + 1, go=False)
        )
        assert controller.state.offer  # a stale offer id changes nothing
        controller.receive(ContinueMessage(kind="continue", turn_id=controller.turn_id, offer_id=offer_id, go=True))

    turn, result = await _cell_turn_at_the_limit(ws, press_continue)
    assert result.stop_reason == "max_turns"
    assert offered and offered[0]["steps"] == 1 and "Continue runs up to 1 more steps" in offered[0]["line"]
    assert turn.presenter.continue_requested and turn.state.offer == {}
    resumed = CellTurn(ws, "s", "", probe=None, resume=True, plain_output=None)
    more = await resumed.run(RunOptions(max_turns=1))
    assert (more.stop_reason, more.text) == ("end_turn", "Found them.")
    m.assert_complete()
    assert len(m.requests) == 2 and m.requests[1].messages[-1].kind == "tool_result"  # no new prompt


async def test_end_turn_or_stop_at_the_step_limit_does_not_continue(tmp_path: Path):
    from blitz_kernel.notebook.widgets.view import StopMessage

    for press in ("end", "stop"):
        ws = Workspace.open(
            tmp_path / press, model=ScriptedModel([tool_step(call("list_files"))]), environ={}, home=tmp_path / "home"
        )

        def answer(controller: TurnController, press: str = press) -> None:
            from blitz_kernel.notebook.widgets.view import ContinueMessage

            if press == "stop":
                controller.receive(StopMessage(kind="stop", turn_id=controller.turn_id))
            else:
                offer_id = controller.state.offer["offer_id"]
                controller.receive(
                    ContinueMessage(kind="continue", turn_id=controller.turn_id, offer_id=offer_id, go=False)
                )

        turn, result = await _cell_turn_at_the_limit(ws, answer)
        assert result.stop_reason == "max_turns" and not turn.presenter.continue_requested


async def test_after_the_later_turn_is_undone_elsewhere_the_earlier_button_works(tmp_path: Path):
    ws = _workspace(
        tmp_path,
        [
            tool_step(call("write_file", path="a.txt", content="a")),
            {"text": "A."},
            tool_step(call("write_file", path="b.txt", content="b")),
            {"text": "B."},
        ],
    )
    first = await ws.run("a", session="s", approver=ScriptedApprover("allow"))
    await ws.run("b", session="s", approver=ScriptedApprover("allow"))
    done = next(e for e in first.events if isinstance(e, TurnDone))
    presenter, _ = await _finished_widget_turn(ws, done, turn_index=first.turn_index)
    control = presenter.undo
    control.click()
    assert (control.view.status, control.view.report) == ("blocked", "undo the later turns first (%blitz_rewind 2)")
    await ws.undo("s")  # what %blitz_undo does: the newest turn goes first
    assert not (tmp_path / "b.txt").exists()
    control.click()
    await asyncio.wait_for(control.task, 10)
    assert control.view.status == "done" and not (tmp_path / "a.txt").exists()


class PatchArgs(BaseModel):
    text: str


async def _patch(args: PatchArgs, ctx: ToolContext) -> str:
    return "patched"


async def _patch_preview(args: PatchArgs, ctx: ToolContext) -> str:
    return f"--- a/notes\n+++ b/notes\n@@ -1 +1 @@\n-old\n+{args.text}\n"


async def test_a_call_is_shown_as_its_tool_declares_whatever_its_name(tmp_path):
    """A tool of any name that declares a diff preview gets a diff on the approval card: the
    engine puts the tool's presentation in its events and the widget reads only that."""
    ws, _ = scripted_workspace(tmp_path, [tool_step(call("patch_notes", text="new")), {"text": "ok"}])
    diff = ToolPresentation(preview_kind="diff")
    ws.tools.register(
        Tool("patch_notes", "Patch the notes.", PatchArgs, ToolKind.MUTATING, _patch, _patch_preview, diff)
    )
    approver = ScriptedApprover("allow")
    result = await ws.run("patch", session="s", approver=approver)
    [announced] = [e for e in result.events if isinstance(e, ToolCallEvent)]
    [request] = approver.requests
    assert announced.presentation == diff and request.calls[0].presentation == diff
    state = folded([START, announced, request])
    [card] = state.synced_value("pending")["calls"]
    assert (card["preview_kind"], card["preview"]) == ("diff", "--- a/notes\n+++ b/notes\n@@ -1 +1 @@\n-old\n+new\n")


def test_a_call_named_like_the_plan_tool_that_declares_no_review_is_an_ordinary_card():
    state = folded([START, ToolCallEvent(id="p1", name="exit_plan_mode", args={"plan": "p"})])
    state.open_review(1, "p")
    assert state.tool_items()[0]["status"] == "running"
    state = folded([START, ToolCallEvent(id="p1", name="x", args={}, presentation=PRESENTED["exit_plan_mode"])])
    state.open_review(1, "p")
    assert state.tool_items()[0]["status"] == "waiting"


# -- 7. the static rendering keeps the widget's structure -------------------------------------

EXCERPT = "2 import pandas as pd\n3\n4 def load(path):\n5     df = pd.read_csv(path)"
CODE = "df = load('a.csv')\nprint(df.__len__())"


def _static_turn() -> str:
    state = folded(
        [
            START,
            ToolCallEvent(id="c1", name="read_file", args={"path": "prep.py"}),
            ToolResultEvent(id="c1", name="read_file", ok=True, preview=EXCERPT),
            ToolCallEvent(id="c2", name="run_python", args={"code": CODE}, presentation=PRESENTED["run_python"]),
            ToolResultEvent(id="c2", name="run_python", ok=False, status="error", error="NameError: x <b>"),
            DONE,
        ]
    )
    return static_bundle(state, "Loaded.")[0]["text/markdown"]


def test_a_finished_turns_calls_are_folded_cards_with_a_summary_line():
    """Each call is a `<details>` whose summary is one line (`⚙ name(args)` → its mark and the
    result's first line); what it gave back is inside, folded, not a bullet of flattened text."""
    html = rendered(_static_turn())
    summaries = re.findall(r"<summary>(.*?)</summary>", html)
    assert summaries == [
        '<code>⚙ read_file(path="prep.py")</code> → ✓ 2 import pandas as pd …',
        "<code>⚙ run_python(code=\"df = load('a.csv')\\nprint(df.__len__())\")</code> → ✗ NameError: x &lt;b&gt;",
    ]
    assert html.count("<details>") == html.count("</details>") == 2
    assert "<li>" not in html and "2 3 4 def load" not in html


def test_results_keep_their_lines_and_code_shows_as_code():
    html = rendered(_static_turn())
    assert f"<pre><code>{EXCERPT}\n</code></pre>" in html  # one line per line, spaces kept
    assert f'<pre><code class="language-python">{CODE}\n</code></pre>' in html
    assert "__len__" in html and "<strong>len</strong>" not in html  # code, not Markdown
    assert "<em>error</em>" in html and "NameError: x &lt;b&gt;" in html and "<b>" not in html


def test_a_written_file_shows_as_its_lines_and_short_arguments_only_in_the_summary():
    state = folded(
        [
            START,
            ToolCallEvent(id="c1", name="write_file", args={"path": "a.py", "content": "x = 1\n\ny = 2\n"}),
            ToolResultEvent(id="c1", name="write_file", ok=True, preview="wrote a.py"),
            ToolCallEvent(id="c2", name="glob", args={"pattern": "*.py"}),
            ToolResultEvent(id="c2", name="glob", ok=True, preview="a.py"),
            DONE,
        ]
    )
    html = rendered(static_bundle(state, "")[0]["text/markdown"])
    assert "<p><em>content</em></p>\n<pre><code>x = 1\n\ny = 2\n</code></pre>" in html
    assert "language-json" not in html  # the path and the pattern are whole in their summaries
    long_path = "d/" * 60 + "a.py"
    state = folded([START, ToolCallEvent(id="c1", name="read_file", args={"path": long_path}), DONE])
    html = rendered(static_bundle(state, "")[0]["text/markdown"])
    assert f"&quot;path&quot;: &quot;{long_path}&quot;" in html  # cut in the summary: whole inside


def test_a_fence_inside_a_result_cannot_close_its_block():
    state = folded(
        [
            START,
            ToolCallEvent(id="c1", name="read_file", args={"path": "README.md"}),
            ToolResultEvent(id="c1", name="read_file", ok=True, preview="```\n<script>x</script>\n```"),
            DONE,
        ]
    )
    html = rendered(static_bundle(state, "")[0]["text/markdown"])
    assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert html.count("<pre>") == 1


def test_an_unpriced_models_footer_says_no_cost_before_its_first_call():
    """Before any call has ended there is no cost to show: "—", never a silent $0.0000 that
    turns into "unpriced" once the first call of an unpriced model ends."""
    state = folded([START])
    assert state.footer()["cost"] == "—"
    assert "0 calls · — ·" in usage_line(state)
    state.apply(TurnDone(stop_reason="end_turn", usage=UsageTotals(input_tokens=3, calls=1, priced=False)))
    assert state.footer()["cost"] == "unpriced"
    assert UsageTotals(calls=1).describe_cost() == "$0.0000"  # a call priced at nothing is $0
