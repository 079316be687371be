"""One model step: the request built from the session's history, streamed to the front end
(text deltas, model switches), inside its own span; returns the final response."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ...core.tools import ToolSpec
from ...errors import ModelError
from ...models.base import ModelRequest, ModelResponse, ModelSwitch, TextDelta
from ..events import Event, ModelSwitchEvent, TextEvent
from .setup import TurnSetup
from .structured import OutputFlow


async def model_step(
    setup: TurnSetup,
    system: str,
    specs: list[ToolSpec],
    emit: Callable[[Event], Awaitable[None]],
    output: OutputFlow | None = None,
) -> ModelResponse:
    """Ask the turn's model for its next step on the history as it is now. Once a structured
    answer is asked for natively (`output`), the request carries its schema and no tools."""
    shape = output.request_schema() if output is not None else None
    # Every part is valid already (committed messages, the tool set's specs): constructed,
    # not validated, so a step does not re-check the whole history.
    request = ModelRequest.model_construct(
        system=system,
        messages=setup.session.model_history(),  # a sub-agent's nested turn stays behind
        tools=[] if shape is not None else specs,
        temperature=setup.choice.temperature,
        max_tokens=setup.choice.max_tokens,
        reasoning=setup.choice.reasoning,
        response_schema=shape,
    )
    response: ModelResponse | None = None
    with setup.observers.telemetry.child_span("blitz.model_call", {"blitz.model": setup.choice.model.name}) as span:
        async for item in setup.choice.model.stream(request):
            if isinstance(item, TextDelta):
                await emit(TextEvent(text=item.text, delta=True, thought=item.thought))
            elif isinstance(item, ModelSwitch):  # every switch is visible
                await emit(ModelSwitchEvent(failed=item.failed, reason=item.reason, answered_by=item.next))
            else:
                response = item
        if response is None:
            raise ModelError(setup.choice.model.name, "the response stream ended without a final message")
        span.set_attributes(
            {
                "blitz.answered_by": response.model,
                "blitz.input_tokens": response.usage.input_tokens,
                "blitz.output_tokens": response.usage.output_tokens,
                "blitz.tool_calls": len(response.tool_calls),
            }
        )
    if response.text:
        await emit(TextEvent(text=response.text, repeat=True))
    return response
