"""The cell's front end without a kernel: the probe that decides widget or plain, the plain
presenter (built on the widget's TurnState), and the widget presenter. Time, the probe comm
and the cell's outputs are the boundary, handed in as fakes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from blitz_kernel.core.usage import TokenUsage, UsageTotals
from blitz_kernel.engine.events import (
    CompactionEvent,
    Event,
    NoticeEvent,
    PendingCall,
    PermissionDecision,
    PermissionRequest,
    PlanEvent,
    ProgressEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
    UsageEvent,
)
from blitz_kernel.engine.turn.options import RunOptions
from blitz_kernel.engine.turn.setup import TurnResult
from blitz_kernel.notebook.live import CellTurn
from blitz_kernel.notebook.presenters import WidgetPresenter
from blitz_kernel.notebook.probe import (
    LATE_GRACE_S,
    LATE_REARMS,
    PROBE_TARGET,
    PROBE_TIMEOUT_AFTER_HEADLESS_S,
    PROBE_TIMEOUT_S,
    FrontEndMemory,
    FrontEndProbe,
)
from blitz_kernel.notebook.render import PlainPresenter
from blitz_kernel.notebook.widgets.controller import TurnController
from blitz_kernel.notebook.widgets.state import TurnState
from blitz_kernel.notebook.widgets.view import ReadyMessage, SteerMessage
from blitz_kernel.tools.registry import Tool, ToolContext, ToolKind
from blitz_kernel.tools.workflow import exit_plan_mode

from .conftest import call, tool_step
from .front_end_fakes import CommOpener, FakeClock, RecordingOutput

START = TurnStarted(session="s", turn_index=0, prompt="Write it.", agent="blitz", model="m")
DONE = TurnDone(stop_reason="end_turn", usage=UsageTotals(input_tokens=3, output_tokens=1, calls=1, priced=False))
ASK = PermissionRequest(request_id="perm-1", calls=[PendingCall(id="c1", name="write_file", args={"path": "a"})])


def result(text: str, stop_reason: Any = "end_turn", leftovers: list[str] | None = None) -> TurnResult:
    return TurnResult(
        text=text, stop_reason=stop_reason, usage=UsageTotals(), session="s", turn_index=0, leftovers=leftovers or []
    )


# -- the probe --------------------------------------------------------------------------------


def probing(scenario: Any) -> Any:
    """Run `scenario(probe, opener, clock, memory)` on a loop (the probe's answer is a future)."""

    async def main() -> Any:
        opener, clock, memory = CommOpener(), FakeClock(), FrontEndMemory()
        probe = FrontEndProbe(open_comm=opener, call_later=clock.call_later, memory=memory, now=clock.now)
        return scenario(probe, opener, clock, memory)

    return asyncio.run(main())


def test_a_front_end_that_closes_the_probe_gets_the_widget():
    def scenario(probe: FrontEndProbe, opener: CommOpener, clock: FakeClock, memory: FrontEndMemory) -> None:
        probe.start("turn-1")
        probe.start("turn-1")  # once only
        [comm] = opener.opened
        assert comm.data == {"turn_id": "turn-1"} and not probe.decided
        assert [delay for delay, _ in clock.armed] == [PROBE_TIMEOUT_S]
        comm.front_end_closes()
        assert probe.mode == "widget" and memory.front_end_seen and not memory.headless_seen
        assert clock.armed == []  # the timeout is off
        clock.fire()
        assert probe.mode == "widget"

    probing(scenario)


def test_no_answer_within_the_timeout_is_plain_and_later_probes_wait_less():
    def scenario(probe: FrontEndProbe, opener: CommOpener, clock: FakeClock, memory: FrontEndMemory) -> None:
        probe.start("turn-1")
        clock.fire()
        assert probe.mode == "plain" and memory.headless_seen
        assert opener.opened[0].closed  # the probe does not linger
        opener.opened[0].front_end_closes()  # an answer after the timeout changes nothing
        assert probe.mode == "plain"
        assert memory.probe_timeout() == PROBE_TIMEOUT_AFTER_HEADLESS_S
        memory.remember("widget")
        assert memory.probe_timeout() == PROBE_TIMEOUT_S

    probing(scenario)


def test_a_timeout_that_runs_late_reads_on_before_it_decides():
    """Regression: a kernel whose loop was blocked past the probe's timeout (a slow disk under
    load) decided "plain" although the front end's answer was already waiting unread."""

    def scenario(probe: FrontEndProbe, opener: CommOpener, clock: FakeClock, memory: FrontEndMemory) -> None:
        probe.start("turn-1")
        clock.advance(PROBE_TIMEOUT_S + 5)  # the loop was blocked: the timer runs 5 s late
        clock.fire()
        assert not probe.decided and [delay for delay, _ in clock.armed] == [LATE_GRACE_S]
        opener.opened[0].front_end_closes()  # the answer that was waiting
        assert probe.mode == "widget"

    probing(scenario)


def test_a_timeout_that_keeps_running_late_still_decides():
    def scenario(probe: FrontEndProbe, opener: CommOpener, clock: FakeClock, memory: FrontEndMemory) -> None:
        probe.start("turn-1")
        clock.advance(PROBE_TIMEOUT_S + 5)
        for _ in range(LATE_REARMS):
            clock.fire()
            assert not probe.decided
            clock.advance(LATE_GRACE_S + 5)
        clock.fire()
        assert probe.mode == "plain" and opener.opened[0].closed

    probing(scenario)


def test_without_comm_machinery_the_answer_is_plain_at_once():
    async def main() -> FrontEndProbe:
        clock = FakeClock()
        probe = FrontEndProbe(open_comm=CommOpener(fail=True), call_later=clock.call_later, memory=FrontEndMemory())
        probe.start("turn-1")
        assert clock.timers == []
        return probe

    assert asyncio.run(main()).mode == "plain"


def test_the_real_probe_targets_nobody():
    assert PROBE_TARGET == "blitz.frontend_probe"


# -- the plain presenter ----------------------------------------------------------------------


def plain(
    clock: FakeClock | None = None, header: str | None = None
) -> tuple[TurnState, PlainPresenter, RecordingOutput]:
    state = TurnState(turn_id="", prompt="p", session="s")
    output = RecordingOutput()
    presenter = PlainPresenter(state, header=header, output=output, clock=(clock or FakeClock()).now)
    return state, presenter, output


def feed(state: TurnState, presenter: PlainPresenter, *events: Event) -> None:
    for event in events:
        state.apply(event)
        presenter.on_event(event)


A_TURN: tuple[Event, ...] = (
    START,
    TextEvent(text="Let me ", delta=True),
    TextEvent(text="<b>write</b>.", delta=True),
    TextEvent(text="Let me <b>write</b>.", repeat=True),
    ToolCallEvent(id="c1", name="write_file", args={"path": "a", "content": "x"}),
    ToolResultEvent(id="c1", name="write_file", ok=True, preview="wrote\na"),
    ToolCallEvent(id="c2", name="read_file", args={"path": "b"}),
    ToolResultEvent(id="c2", name="read_file", ok=False, status="error", error="no such file"),
    CompactionEvent(covered_events=4, tokens_before=12000, tokens_after=900, automatic=True),
    UsageEvent(model="m", usage=TokenUsage(input_tokens=3, output_tokens=1), cost_usd=None),
    NoticeEvent(kind="unpriced_model", message="m has no price"),
    TextEvent(text="Done.", delta=True),
    TextEvent(text="Done.", repeat=True),
    DONE,
)
A_TURN_SHOWN = [
    "💬 header",
    "Let me &lt;b>write&lt;/b>.",
    '⚙ write_file(path="a", content="x")',
    "  ↳ write_file: wrote a",
    '⚙ read_file(path="b")',
    "  ↳ read_file: error: no such file",
    "⟲ compacted 4 earlier event(s) into a summary: prompt ≈12,000 → ≈900 tokens",
    "⚠ m has no price",
    "Done.",
]


def test_plain_output_is_made_from_the_turn_state():
    state, presenter, output = plain(header="💬 header")
    feed(state, presenter, *A_TURN)
    shown = output.rendered()
    assert shown[:-1] == A_TURN_SHOWN
    assert shown[-1].startswith("— m · 3 in · 1 out · 1 call · unpriced · ") and shown[-1].endswith(" s · end_turn")


def test_thinking_is_one_line_in_plain_output_never_its_text():
    state, presenter, output = plain()
    feed(
        state,
        presenter,
        START,
        TextEvent(text="The secret plan is ", delta=True, thought=True),
        TextEvent(text="to add two numbers.", delta=True, thought=True),
        TextEvent(text="Four.", delta=True),
        TextEvent(text="Four.", repeat=True),
        DONE,
    )
    shown = output.rendered()
    assert shown[:2] == ["Four.", "💭 thought (8 words; the widget shows it)"]
    assert not any("secret plan" in line for line in shown)


STARTING = ProgressEvent(message="starting MCP server docs…")


def test_a_server_starting_is_said_in_plain_output_and_on_the_widgets_footer():
    """The wait before the turn (an MCP server's first start) is said where the user looks:
    a line in plain output; in the widget, the footer's "running" until the turn starts.
    The static rendering never keeps it."""
    state, presenter, output = plain()
    feed(state, presenter, STARTING)
    assert output.rendered() == ["starting MCP server docs…"]
    assert state.footer()["progress"] == "starting MCP server docs…" and "footer" in state.take_dirty()
    feed(state, presenter, START, DONE)
    assert state.footer()["progress"] == ""
    from blitz_kernel.notebook.widgets.static import static_bundle

    data, _ = static_bundle(state, "")
    assert "starting MCP server" not in data["text/markdown"] + data["text/plain"]


def test_a_server_starting_asks_for_the_widget_at_once(make_workspace: Any):
    """The probe starts with the wait, not with the turn, so the widget can show the wait."""
    opener, clock = CommOpener(), FakeClock()
    workspace, _ = make_workspace([])

    async def main() -> None:
        probe = FrontEndProbe(open_comm=opener, call_later=clock.call_later, memory=FrontEndMemory())
        turn = CellTurn(workspace, "s", "Do it.", probe=probe, plain_output=RecordingOutput(), widget_output=None)
        assert turn.on_event(STARTING) is None  # nothing to wait for: the servers go on starting
        assert [comm.data for comm in opener.opened] == [{"turn_id": turn.state.turn_id}]
        turn.on_event(START)
        assert len(opener.opened) == 1  # asked once

    asyncio.run(main())


def test_a_turn_shown_late_looks_as_if_shown_live():
    """A turn that ran while the front end was being asked is caught up from its state."""
    state, presenter, output = plain(header="💬 header")
    for event in A_TURN[:8]:
        state.apply(event)
    presenter.catch_up()
    feed(state, presenter, *A_TURN[8:])
    assert output.rendered()[:-1] == A_TURN_SHOWN


def test_streamed_text_updates_one_display_at_most_ten_times_a_second():
    clock = FakeClock()
    state, presenter, output = plain(clock)
    feed(state, presenter, START, TextEvent(text="a", delta=True))
    clock.advance(0.05)
    feed(state, presenter, TextEvent(text="b", delta=True))
    [(_, shown)] = output.entries
    assert (shown.text, shown.updates) == ("a", 0)  # too soon to update
    clock.advance(0.06)
    feed(state, presenter, TextEvent(text="c", delta=True))
    assert (shown.text, shown.updates) == ("abc", 1)
    feed(state, presenter, TextEvent(text="abc!", repeat=True))
    assert shown.text == "abc!" and len(output.entries) == 1  # the exact text, same display


def test_the_record_goes_on_the_answer_or_on_a_one_line_summary():
    state, presenter, output = plain()
    feed(state, presenter, START, TextEvent(text="The answer.", repeat=True), DONE)
    leftovers = asyncio.run(presenter.finish(result("The answer.", leftovers=["and then?"])))
    assert leftovers == ["and then?"]
    answer = output.entries[0][1]
    assert answer.text == "The answer." and answer.metadata["blitz"]["text"] == "The answer."

    state, presenter, output = plain()
    feed(state, presenter, START, TurnDone(stop_reason="cancelled", usage=UsageTotals()))
    assert asyncio.run(presenter.finish(result("", "cancelled", leftovers=["dropped"]))) == []
    summary = output.entries[-1][1]
    assert summary.text == "*(no answer: cancelled)*" and summary.metadata["blitz"]["stop_reason"] == "cancelled"


def test_a_plan_is_the_plain_answer_with_what_became_of_it():
    state, presenter, output = plain()
    feed(
        state,
        presenter,
        START,
        ToolCallEvent(
            id="p1", name="exit_plan_mode", args={"plan": "1. <do> it"}, presentation=exit_plan_mode.presentation
        ),
        PlanEvent(plan="1. <do> it", status="rejected", reason="too <big>"),
    )
    shown = output.rendered()[-1]
    assert shown.startswith("### Proposed plan\n\n1. &lt;do> it\n\n*Proposed plan — rejected: too &lt;big>.*")
    state, presenter, output = plain()
    feed(state, presenter, START, PlanEvent(plan="1. it", status="unreviewed"))
    assert output.rendered() == [
        "### Proposed plan\n\n1. it\n\n*To carry it out, run a `%%blitz` cell such as “Carry out the plan.”*"
    ]


# -- the widget presenter ---------------------------------------------------------------------


class RecordingWidgetOutput:
    def __init__(self) -> None:
        self.shown: list[Any] = []
        self.replaced: list[tuple[dict[str, str], dict[str, Any] | None]] = []
        self.appended: list[dict[str, str]] = []

    def show(self, view: Any) -> Any:
        self.shown.append(view)
        return view

    def replace(self, handle: Any, data: dict[str, str], metadata: dict[str, Any] | None = None) -> None:
        self.replaced.append((data, metadata))

    def append(self, data: dict[str, str]) -> None:
        self.appended.append(data)


def widget_turn(make_workspace: Any, scenario: Any, render_timeout: float = 30.0) -> Any:
    workspace, _ = make_workspace([])

    async def main() -> Any:
        controller = TurnController(workspace, "s", "Write it.", render_timeout=render_timeout)
        output = RecordingWidgetOutput()
        presenter = WidgetPresenter(controller, output=output)
        return await scenario(controller, presenter, output)

    return asyncio.run(main())


def test_the_widget_catches_up_and_waits_for_its_view_before_a_permission_request(make_workspace: Any):
    async def scenario(controller: TurnController, presenter: WidgetPresenter, output: RecordingWidgetOutput) -> None:
        state = controller.state
        for event in (
            START,
            TextEvent(text="Writing.", repeat=True),
            ToolCallEvent(id="c1", name="write_file", args={"path": "a"}),
        ):
            state.apply(event)
        presenter.catch_up()
        [view] = output.shown
        assert [item["kind"] for item in view.items] == ["text", "tool"]  # the state so far
        state.apply(ASK)
        controller.observe(ASK)
        waiting = presenter.on_event(ASK)
        assert waiting is not None
        controller.receive(ReadyMessage(kind="ready", turn_id=controller.turn_id))  # the view rendered
        await asyncio.wait_for(waiting, 5)
        assert view.pending["request_id"] == "perm-1"  # still up: somebody can answer it
        assert presenter.on_event(TextEvent(text="x", delta=True)) is None

    widget_turn(make_workspace, scenario)


def test_a_widget_that_never_renders_takes_the_request_off(make_workspace: Any):
    async def scenario(controller: TurnController, presenter: WidgetPresenter, output: RecordingWidgetOutput) -> None:
        controller.state.apply(START)
        presenter.catch_up()
        controller.state.apply(ASK)
        controller.observe(ASK)
        waiting = presenter.on_event(ASK)
        assert waiting is not None
        await asyncio.wait_for(waiting, 5)
        assert controller.state.pending is None and not controller.approver.interactive

    widget_turn(make_workspace, scenario, render_timeout=0.01)


def test_the_widget_ends_as_the_static_rendering(make_workspace: Any):
    async def scenario(
        controller: TurnController, presenter: WidgetPresenter, output: RecordingWidgetOutput
    ) -> list[str]:
        controller.state.apply(START)
        presenter.catch_up()
        controller.receive(SteerMessage(kind="steer", turn_id=controller.turn_id, text="too late"))  # no turn runs
        for event in (
            ToolCallEvent(id="c1", name="write_file", args={"path": "a"}),
            ASK,
            PermissionDecision(call_id="c1", decision="deny", reason="no"),
            ToolResultEvent(id="c1", name="write_file", ok=False, status="denied", error="write_file was denied: no"),
            TextEvent(text="Did not write.", repeat=True),
            DONE,
        ):
            controller.state.apply(event)
            waiting = presenter.on_event(event)
            if waiting is not None:  # the permission request: the view has spoken, so at once
                await asyncio.wait_for(waiting, 5)
        follow_up = await presenter.finish(result("Did not write."))
        [(data, metadata)] = output.replaced
        assert "→ ⊘ denied write_file was denied: no" in data["text/plain"]
        assert metadata is not None and metadata["blitz"]["text"] == "Did not write."
        assert controller.state.phase == "done"
        return follow_up

    assert widget_turn(make_workspace, scenario) == ["too late"]


def test_an_abandoned_widget_that_never_started_leaves_nothing(make_workspace: Any):
    async def scenario(controller: TurnController, presenter: WidgetPresenter, output: RecordingWidgetOutput) -> None:
        presenter.catch_up()
        presenter.abandon()
        assert output.replaced == [({"text/plain": ""}, None)]

    widget_turn(make_workspace, scenario)


# -- the cell turn: probe, then one presenter --------------------------------------------------


class NoArgs(BaseModel):
    pass


@dataclass
class Ran:
    turn: CellTurn
    plain: RecordingOutput
    widget: RecordingWidgetOutput
    result: TurnResult
    seen_by_tool: list[list[str]]


def cell_turn(
    make_workspace: Any,
    steps: list[Any],
    opener: CommOpener,
    clock: FakeClock,
    memory: FrontEndMemory,
    during: Any = None,
) -> Ran:
    """Run one real turn (scripted model) through a CellTurn whose probe talks to fakes;
    `during(turn, plain_output)` runs beside the turn once it started. The read-only tool
    `look` records what the cell showed at the moment it ran."""
    workspace, model = make_workspace(steps)
    plain_output, widget_output = RecordingOutput(), RecordingWidgetOutput()
    seen_by_tool: list[list[str]] = []

    async def look(args: NoArgs, ctx: ToolContext) -> str:
        seen_by_tool.append(plain_output.rendered())
        return "looked"

    workspace.tools.register(
        Tool(name="look", description="Look.", args_model=NoArgs, kind=ToolKind.READ_ONLY, func=look)
    )

    async def main() -> tuple[CellTurn, TurnResult]:
        probe = FrontEndProbe(open_comm=opener, call_later=clock.call_later, memory=memory)
        turn = CellTurn(workspace, "s", "Do it.", probe=probe, plain_output=plain_output, widget_output=widget_output)
        running = asyncio.ensure_future(turn.run(RunOptions()))
        if during is not None:
            await during(turn, plain_output)
        return turn, await asyncio.wait_for(running, 10)

    turn, outcome = asyncio.run(main())
    model.assert_complete()
    return Ran(turn, plain_output, widget_output, outcome, seen_by_tool)


def test_a_kernel_that_never_saw_a_front_end_does_not_wait_at_the_end(make_workspace: Any):
    """Nothing answers the probe and the turn ends first: plain at once, no timeout waited."""
    opener, clock, memory = CommOpener(), FakeClock(), FrontEndMemory()
    ran = cell_turn(make_workspace, [{"text": "Hello <b>."}], opener, clock, memory)
    shown = ran.plain.rendered()
    assert shown[0] == "Hello &lt;b>." and " · end_turn" in shown[1] and len(shown) == 2
    assert ran.plain.entries[0][1].metadata["blitz"]["text"] == "Hello <b>."
    assert ran.widget.shown == [] and opener.opened[0].closed and clock.armed == []
    assert memory.headless_seen and not memory.front_end_seen and ran.result.stop_reason == "end_turn"


async def until(condition: Any) -> None:
    """Let the loop run until `condition()` holds (5 s at most). Nothing in the code under
    test marks the moment with an event, so this yields to the loop and looks again."""
    async with asyncio.timeout(5):
        while not condition():  # noqa: ASYNC110 - a zero-length yield, bounded by the timeout
            await asyncio.sleep(0)


def test_a_tool_call_waits_for_the_answer_then_shows_in_order(make_workspace: Any):
    """Nothing runs unseen: the first tool call waits for the probe's answer (here its
    timeout, so plain), and its line is shown before the tool runs."""
    opener, clock, memory = CommOpener(), FakeClock(), FrontEndMemory()

    async def nobody_answers(turn: CellTurn, plain_output: RecordingOutput) -> None:
        await until(lambda: bool(turn.state.tool_items()))  # the call came; the probe is unanswered
        assert turn.probe is not None and not turn.probe.decided
        clock.fire()

    steps = [tool_step(call("look")), {"text": "Done."}]
    ran = cell_turn(make_workspace, steps, opener, clock, memory, nobody_answers)
    assert ran.seen_by_tool == [["⚙ look()"]]
    assert ran.plain.rendered()[:3] == ["⚙ look()", "  ↳ look: looked", "Done."]


def test_a_front_end_that_answers_gets_the_widget_and_then_the_static_rendering(make_workspace: Any):
    opener, clock, memory = CommOpener(answer=True), FakeClock(), FrontEndMemory()
    ran = cell_turn(make_workspace, [{"text": "Hi <b>."}], opener, clock, memory)
    [view] = ran.widget.shown
    [(data, metadata)] = ran.widget.replaced
    assert data["text/markdown"].startswith("Hi &lt;b>.") and metadata is not None
    assert metadata["blitz"]["text"] == "Hi <b>."
    assert ran.plain.entries == [] and memory.front_end_seen and clock.armed == []
    assert view.comm is None  # the widget was closed
