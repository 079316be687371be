"""Calls from outside the notebook (an MCP client, see docs/mcp-server.md): one tool call run
as a one-call turn, so it passes exactly the checks a call of the model passes.

The turn's "model" is `OutsideCallModel`: its first step asks for the outside client's call,
its second answers with one line saying who called what. Everything between is the ordinary
turn path: the tool batch screens the call (unknown tool, bad arguments, policy), asks the
approver or lets the headless policy answer, runs hooks, redacts the result, audits it with the
client's name, and the turn's checkpoint records what it changed, so `Workspace.undo` undoes it
like any turn. The session's history shows the call too: the next turn's model knows about it.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, Field

from ...core.history import ImagePart, ToolCall, ToolResultMessage
from ...core.outside_wire import OutsideImage, OutsideStatus, OutsideTool
from ...core.terms import ToolOutcome
from ...core.usage import Price, UsageTotals
from ...models.base import ModelRequest, ModelResponse, StreamItem
from ...tools.registry import ToolError, ToolKind, tool_set
from ..events import ToolResultEvent
from ..turn.options import FrontEnd, RunOptions
from ..turn.setup import TurnResult
from .turns import Turns

OUTSIDE_MODEL = "outside-call"
"""The name the outside turn's model goes by (in the history and the usage table)."""


TURN_ONLY = frozenset({"list_agents", "invoke_agent"})
"""Tools that only make sense inside a turn (sub-agents run under the calling turn)."""


class OutsideResult(BaseModel):
    """What an outside call gives back: the text the model would read, how it ended, the
    images the tool returned, and the turn that holds it (for `%blitz_undo`)."""

    status: OutsideStatus
    text: str
    images: list[OutsideImage] = Field(default_factory=list)
    turn_index: int | None = None


class OutsideCallModel:
    """Asks for one given tool call, then ends the turn with a line naming the caller."""

    name = OUTSIDE_MODEL

    def __init__(self, call: ToolCall, caller: str) -> None:
        self.call = call
        self.caller = caller
        self._asked = False

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        if not self._asked:
            self._asked = True
            yield ModelResponse(tool_calls=[self.call], model=self.name)
            return
        yield ModelResponse(text=f"({self.caller} called {self.call.name})", model=self.name)

    def price(self, model: str) -> Price | None:
        return Price(input=0.0, output=0.0)  # nobody is paid: the client's own model chose the call

    def context_window(self) -> int | None:
        return None

    def supports_vision(self) -> bool:
        return True  # images go back to the outside client, which shows them to its own model


class OutsideCalls:
    """Runs outside clients' calls and turns in a workspace's sessions."""

    def __init__(self, turns: Turns) -> None:
        self.turns = turns

    def tools(self) -> list[OutsideTool]:
        """The root agent's own tools (workflow tools are a turn's business, not a client's)."""
        registry = self.turns.configuration.tools
        every = [registry.get(name) for name in registry.names()]
        shown = [
            tool
            for tool in every
            if tool is not None and tool.kind is not ToolKind.WORKFLOW and tool.name not in TURN_ONLY
        ]
        specs = tool_set(shown).specs
        return [
            OutsideTool(
                name=spec.name,
                description=spec.description,
                parameters=spec.parameters,
                read_only=tool.kind is ToolKind.READ_ONLY,
            )
            for spec, tool in zip(specs, shown, strict=True)
        ]

    async def call_tool(
        self, session: str, name: str, arguments: dict[str, Any], caller: str, front_end: FrontEnd | None = None
    ) -> OutsideResult:
        """Run `name(arguments)` for `caller` (e.g. "mcp:claude-code") as a one-call turn of
        `session`: the same screening, approvals, hooks, redaction, audit and checkpoint as a
        call of the model, so `undo` undoes it. A call refused before it could run (unknown
        tool, arguments that fail validation) records nothing."""
        front_end = dataclasses.replace(front_end or FrontEnd(), caller=caller)
        tool = self.turns.configuration.tools.get(name)
        if tool is None or name not in {t.name for t in self.tools()}:
            return OutsideResult(status="error", text=f"unknown tool {name!r}")
        try:
            tool.parse_arguments(json.dumps(arguments))
        except ToolError as error:
            return OutsideResult(status="error", text=str(error))
        call = ToolCall(id=f"outside-{uuid.uuid4().hex[:12]}", name=name, arguments=json.dumps(arguments))
        options = RunOptions(model=OutsideCallModel(call, caller), max_turns=2)
        prompt = f"[{caller} called {name} from outside the notebook]"
        result = await self.turns.run(prompt, session, options, front_end, None)
        return outcome(result, self.turns.sessions.get(session).history, call.id)


def outcome(result: TurnResult, history: list[Any], call_id: str) -> OutsideResult:
    """The outside call's result from its turn: the tool result in the history, its status
    from the turn's result event; a turn refused before it started says why."""
    found = next((m for m in reversed(history) if isinstance(m, ToolResultMessage) and m.call_id == call_id), None)
    if found is None:
        return OutsideResult(status="error", text=result.error or "the call did not run", turn_index=None)
    status: ToolOutcome = next(
        (e.status for e in result.events if isinstance(e, ToolResultEvent) and e.id == call_id), "error"
    )
    text = found.output if found.ok else found.error
    return OutsideResult(
        status=_status(status),
        text=text or "",
        images=[_image(image) for image in found.images],
        turn_index=result.turn_index,
    )


def _status(status: ToolOutcome) -> OutsideStatus:
    if status == "ok":
        return "ok"
    return "denied" if status in ("denied", "blocked") else "error"


def _image(image: ImagePart) -> OutsideImage:
    return OutsideImage(media_type=image.media_type, data_base64=image.data_base64)


def usage_line(usage: UsageTotals) -> str:
    """'usage: 1200 in, 80 out, $0.0012' for a turn's answer to an outside client."""
    cost = f", ${usage.cost_usd:.4f}" if usage.priced else ""
    return f"usage: {usage.input_tokens} in, {usage.output_tokens} out{cost}"
