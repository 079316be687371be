"""The front-end protocol's schema (docs/widget.md): it names every message, it describes what
the widget really is sent, the committed copy the TypeScript types are generated from is
current, and a malformed message from a front end is logged once and ignored, never raised.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import TypeAdapter, ValidationError

from blitz_kernel.core.usage import TokenUsage, UsageTotals
from blitz_kernel.engine.events import (
    Event,
    PendingCall,
    PermissionDecision,
    PermissionRequest,
    PlanEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
    TurnStarted,
    UsageEvent,
)
from blitz_kernel.notebook import bridge_messages, dropped
from blitz_kernel.notebook.bridge import NotebookBridge
from blitz_kernel.notebook.widgets.items import TurnWidgetState, UndoWidgetState
from blitz_kernel.notebook.widgets.state import SYNCED, TurnState
from blitz_kernel.notebook.widgets.undo import UndoButton, UndoControl
from blitz_kernel.notebook.widgets.view import FrontEndMessage, TurnView
from blitz_kernel.protocol_schema import MESSAGES, protocol_schema

GENERATED = Path(__file__).resolve().parents[2] / "labextension" / "src" / "generated"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def logged() -> Iterator[list[str]]:
    """What the dropped-message log says (it does not propagate to the root logger: a comm
    callback's stderr would be the running cell)."""
    dropped.forget()
    handler = Records()
    logger = logging.getLogger(dropped.LOGGER)
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        logger.removeHandler(handler)
        dropped.forget()


def test_the_committed_schema_is_what_the_models_say() -> None:
    committed = json.loads((GENERATED / "protocol.schema.json").read_text())
    assert committed == protocol_schema(), "labextension/src/generated is stale: run npm run gen:protocol"


def test_every_message_is_in_the_schema() -> None:
    defs = protocol_schema()["$defs"]
    for params, result in bridge_messages.OPS.values():
        assert params.__name__ in defs and result.__name__ in defs
    commands = get_args(get_args(FrontEndMessage)[0])
    assert commands and all(command.__name__ in defs for command in commands)
    events = {schema["$ref"].rsplit("/", 1)[1] for schema in defs["EngineEvent"]["oneOf"]}
    assert events == {event.__name__ for event in get_args(get_args(Event)[0])}
    assert set(MESSAGES) == set(protocol_schema()["properties"])


def test_a_field_with_a_default_is_required_where_python_dumps_and_optional_where_it_validates() -> None:
    defs = protocol_schema()["$defs"]
    assert "type" in defs["TextEvent"]["required"]  # dumped: the front end may rely on it
    assert "cell_type" not in defs["InsertCellParams"].get("required", [])  # sent as the tool set it
    assert "reason" not in defs["DecideMessage"]["required"]  # the front end may leave it out


def _rich_turn() -> TurnState:
    state = TurnState(turn_id="t1", prompt="", session="")
    for event in (
        TurnStarted(session="s", turn_index=0, prompt="Write it.", agent="blitz", model="m"),
        TextEvent(text="Let me ", delta=True),
        ToolCallEvent(id="c1", name="write_file", args={"path": "a"}),
        PermissionRequest(
            request_id="perm-1", calls=[PendingCall(id="c1", name="write_file", args={"path": "a"}, preview="+x")]
        ),
    ):
        state.apply(event)
    state.open_review(1, "the plan")
    state.set_offer(2, steps=5)
    state.add_steer("use pandas")
    state.add_aside("why?")
    return state


def test_the_widget_state_python_sends_fits_the_schema() -> None:
    """Every synced value of a real turn, at each stage, validates against TurnWidgetState,
    whose pieces forbid keys they do not declare: a key added to the state without the
    schema (and so without the TypeScript types) fails here."""
    adapter = TypeAdapter(TurnWidgetState)
    state = _rich_turn()

    def check() -> None:
        adapter.validate_python({"turn_id": state.turn_id, **{name: state.synced_value(name) for name in SYNCED}})

    check()
    for event in (
        PermissionDecision(call_id="c1", decision="allow"),
        ToolResultEvent(id="c1", name="write_file", ok=True, preview="wrote a"),
        PlanEvent(plan="1. do it", status="approved"),
        UsageEvent(model="m", usage=TokenUsage(input_tokens=5, output_tokens=2), cost_usd=0.01),
        TurnDone(stop_reason="end_turn", usage=UsageTotals(input_tokens=5, output_tokens=2, calls=1)),
    ):
        state.apply(event)
        check()
    state.close_review()
    state.set_offer(None)
    check()
    with pytest.raises(ValidationError):  # the check can fail: an undeclared key
        adapter.validate_python(
            {"turn_id": "t1", **{name: state.synced_value(name) for name in SYNCED}, "live": {"text": "", "x": 1}}
        )


def test_the_schema_covers_every_synced_trait() -> None:
    import anywidget

    def synced(view: Any) -> set[str]:
        """The traits the widget adds to anywidget's own (its `_esm`, layout and the like)."""
        return set(view.class_traits(sync=True)) - set(anywidget.AnyWidget.class_traits(sync=True))

    assert synced(TurnView) == set(TurnWidgetState.__annotations__)
    assert synced(UndoButton) == set(UndoWidgetState.__annotations__)


def test_a_malformed_widget_command_is_logged_once_per_kind_and_ignored(logged: list[str]) -> None:
    received: list[Any] = []
    view = TurnView("t1", received.append)
    for content in (
        {"kind": "decide", "turn_id": "t1", "decision": "perhaps"},
        {"kind": "decide", "turn_id": "t1", "decision": "never"},
        {"kind": "launch", "turn_id": "t1"},
        "not even a dict",
        None,
    ):
        view._receive(view, content, [])  # never raises
    assert received == []
    assert len(logged) == 4  # decide, launch, (str), (NoneType): the second decide is silent
    assert logged[0].startswith("the turn widget ignored a decide message it cannot use (")
    assert "decision" in logged[0] and "further ones of this kind are ignored silently" in logged[0]
    view._receive(view, {"kind": "stop", "turn_id": "t1"}, [])
    assert [message.kind for message in received] == ["stop"]  # a good one still gets through


def test_a_malformed_undo_click_is_logged_once_and_ignored(logged: list[str]) -> None:
    state = TurnState(turn_id="t1", prompt="", session="s")
    control = UndoControl(workspace=Any, state=state, output=Any, rendering=None, final_text="")  # type: ignore[arg-type]
    clicks: list[bool] = []
    control.click = lambda: clicks.append(True)  # type: ignore[method-assign]
    for content in ({"kind": "undo"}, {"kind": "undo", "turn_id": 3}, {"kind": "redo", "turn_id": "t1"}):
        control._receive(control.view, content, [])
    assert clicks == []
    assert [message.split(" message ")[0] for message in logged] == [
        "the Review changes and Undo all controls ignored a undo",
        "the Review changes and Undo all controls ignored a redo",
    ]
    control._receive(control.view, {"kind": "undo", "turn_id": "another-turn"}, [])  # stale: ignored, not logged
    control._receive(control.view, {"kind": "undo", "turn_id": "t1"}, [])
    assert clicks == [True] and len(logged) == 2


def test_a_bridge_message_that_is_no_reply_is_logged_once_and_ignored(logged: list[str]) -> None:
    bridge = NotebookBridge()
    bridge._on_msg({"content": {"data": {"kind": "chatter"}}})
    bridge._on_msg({"content": {"data": {"kind": "chatter", "n": 2}}})
    bridge._on_msg({"content": {"data": ["no", "dict"]}})
    assert len(logged) == 2 and logged[0].startswith("the notebook bridge ignored a chatter message")


def test_what_python_dumps_fits_the_exported_schema_with_every_field() -> None:
    """The exported JSON Schema itself (what the TypeScript types are made of), checked with
    jsonschema against what Python really sends: events and the widget's state, dumped."""
    import jsonschema

    schema = protocol_schema()

    def validator(name: str) -> jsonschema.Draft202012Validator:
        return jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": f"#/$defs/{name}"})

    events = validator("EngineEvent")
    sent = [
        TurnStarted(session="s", turn_index=0, prompt="p", agent="a", model="m"),
        TextEvent(text="x", delta=True),
        ToolCallEvent(id="c1", name="write_file", args={"path": "a"}),
        TurnDone(stop_reason="end_turn", usage=UsageTotals(input_tokens=1, calls=1)),
    ]
    for event in sent:
        events.validate(event.model_dump(mode="json"))
    with pytest.raises(jsonschema.ValidationError):  # dumped: a field with a default is still required
        events.validate({k: v for k, v in TextEvent(text="x").model_dump(mode="json").items() if k != "delta"})
    state = _rich_turn()
    validator("TurnWidgetState").validate(
        {"turn_id": state.turn_id, **{name: state.synced_value(name) for name in SYNCED}}
    )
    validator("Welcome").validate({"kind": "welcome", "protocol": 1})


async def test_what_the_bridge_sends_fits_its_models() -> None:
    """The welcome and the requests the bridge writes as plain dicts (it loads pydantic only
    on its first message) are the models the TypeScript types are generated from."""
    from .test_notebook_tools import NO_CELLS, FakeComm, hello, next_request

    bridge, comm = NotebookBridge(), FakeComm()
    hello(comm, bridge)
    assert bridge_messages.Welcome.model_validate(comm.sent[0]).model_dump() == comm.sent[0]
    task = asyncio.ensure_future(bridge.request("list_cells", {}))
    request = await next_request(comm)
    assert bridge_messages.Request.model_validate(request).model_dump() == request
    comm.reply({"kind": "reply", "id": request["id"], "ok": True, "result": NO_CELLS})
    assert await task == NO_CELLS
