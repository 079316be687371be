"""TurnView: the anywidget that shows a running turn, and the messages its front end sends.

The JS and CSS ship inside the package (`static/turn.js`, one self-contained ES module built
from the TypeScript in labextension/widget/ and committed, and `static/turn.css`: no CDN,
nothing to build at install, docs/widget.md). State flows kernel → browser as synced traits
(one comm message per flush, see sync.py); user actions flow browser → kernel as anywidget custom
messages, i.e. `comm_msg` with `data = {"method": "custom", "content": <one of the models
below>}`. Every message names the turn it belongs to, so a click queued for an older turn is
recognised and ignored (docs/architecture.md). A message that fits none of them is logged once
per kind and ignored (dropped.py); these models are part of the front-end protocol whose
TypeScript types are generated (docs/widget.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anywidget
import traitlets
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ..dropped import drop

STATIC = Path(__file__).parent / "static"
MAX_TEXT = 20_000
"""Longest steer message or side question accepted from the front end."""


class ReadyMessage(BaseModel):
    """A view of the widget rendered: somebody can see the turn and click."""

    kind: Literal["ready"]
    turn_id: str


class DecideMessage(BaseModel):
    """One call of a permission request answered."""

    kind: Literal["decide"]
    turn_id: str
    request_id: str
    call_id: str
    decision: Literal["allow", "always", "deny"]
    reason: str | None = Field(default=None, max_length=MAX_TEXT)


class SteerMessage(BaseModel):
    kind: Literal["steer"]
    turn_id: str
    text: str = Field(min_length=1, max_length=MAX_TEXT)


class AsideMessage(BaseModel):
    kind: Literal["aside"]
    turn_id: str
    question: str = Field(min_length=1, max_length=MAX_TEXT)


class ReviewMessage(BaseModel):
    """Approve plan / Reject pressed on a proposed plan; `review_id` names the plan,
    so a click on a plan the turn no longer waits for is recognised as stale."""

    kind: Literal["review"]
    turn_id: str
    review_id: int
    approved: bool
    reason: str | None = Field(default=None, max_length=MAX_TEXT)


class ContinueMessage(BaseModel):
    """Continue (or End turn) pressed on a turn that stopped at its step limit;
    `offer_id` names the offer, so a click on one the cell no longer waits for is stale."""

    kind: Literal["continue"]
    turn_id: str
    offer_id: int
    go: bool


class StopMessage(BaseModel):
    """Stop pressed: the first stops after the current step, the second at once."""

    kind: Literal["stop"]
    turn_id: str


FrontEndMessage = Annotated[
    ReadyMessage | DecideMessage | ReviewMessage | SteerMessage | AsideMessage | StopMessage | ContinueMessage,
    Field(discriminator="kind"),
]
FRONT_END_MESSAGE: TypeAdapter[FrontEndMessage] = TypeAdapter(FrontEndMessage)


def parse_message(content: Any) -> FrontEndMessage | None:
    """The message, or None for anything malformed (never an exception in a comm callback):
    the first malformed message of each kind is logged (dropped.py)."""
    try:
        return FRONT_END_MESSAGE.validate_python(content)
    except ValidationError as error:
        drop("the turn widget", content, error)
        return None


class TurnView(anywidget.AnyWidget):  # type: ignore[misc]
    """The live turn. Traits mirror `TurnState.synced_value(name)`; the view is
    labextension/widget/src/turn.ts, built into static/turn.js."""

    _esm = STATIC / "turn.js"
    _css = STATIC / "turn.css"

    turn_id = traitlets.Unicode("").tag(sync=True)
    header = traitlets.Dict().tag(sync=True)
    items: traitlets.List[Any] = traitlets.List().tag(sync=True)
    live = traitlets.Dict().tag(sync=True)
    pending = traitlets.Dict().tag(sync=True)
    review = traitlets.Dict().tag(sync=True)
    offer = traitlets.Dict().tag(sync=True)
    steers: traitlets.List[Any] = traitlets.List().tag(sync=True)
    asides: traitlets.List[Any] = traitlets.List().tag(sync=True)
    footer = traitlets.Dict().tag(sync=True)
    phase = traitlets.Unicode("running").tag(sync=True)
    stopping = traitlets.Unicode("").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    images = traitlets.Dict().tag(sync=True)

    def __init__(self, turn_id: str, on_message: Callable[[FrontEndMessage], None], **state: Any) -> None:
        super().__init__(turn_id=turn_id, **state)
        self._on_message = on_message
        self.on_msg(self._receive)

    def _receive(self, _widget: Any, content: Any, _buffers: Any) -> None:
        """Runs on the kernel's main thread while the cell awaits (docs/architecture.md). Stale or
        malformed messages are dropped here; nothing is printed (output from a comm callback
        would be parented to the comm message, not to the cell): a malformed one is logged to
        the kernel's log, once per kind."""
        message = parse_message(content)
        if message is None or message.turn_id != self.turn_id:
            return
        self._on_message(message)
