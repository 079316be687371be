"""Unit-test helpers: a workspace on a ScriptedModel, plus small real tools and approvers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from blitz_kernel.core.history import Message, ToolResultMessage
from blitz_kernel.engine.events import PermissionDecision, PermissionRequest, Verdict
from blitz_kernel.engine.workspace import Workspace
from blitz_kernel.models.base import ModelRequest
from blitz_kernel.models.scripted import ScriptedModel, Step
from blitz_kernel.tools.registry import Tool, ToolContext, ToolKind
from tests.helpers.tiers import mark_tier
from tests.helpers.workspaces import scripted_workspace

HOLD_LIMIT_S = 60
"""How long a held call waits for its release at most (a test that forgot it fails, not hangs)."""


class SleepArgs(BaseModel):
    seconds: float = Field(description="how long to sleep")
    label: str = Field(default="", description="echoed back")


class ConcurrencyProbe:
    """A real tool that sleeps and records how many of its calls overlap.

    With `hold`, a call waits for `release` instead of sleeping: a test that must act while
    the call runs (steer, stop, ask aside) does so after `started` and then sets `release`,
    so no sleep's length decides whether it was in time."""

    def __init__(self, kind: ToolKind = ToolKind.READ_ONLY, name: str = "sleep", *, hold: bool = False) -> None:
        self.running = 0
        self.peak = 0
        self.calls: list[str] = []
        self.started = asyncio.Event()
        self.release = asyncio.Event()

        async def sleep(args: SleepArgs, ctx: ToolContext) -> str:
            self.calls.append(args.label)
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.started.set()
            try:
                if hold:
                    await asyncio.wait_for(self.release.wait(), HOLD_LIMIT_S)
                else:
                    await asyncio.sleep(args.seconds)
            finally:
                self.running -= 1
            return f"slept {args.seconds} ({args.label})"

        self.tool = Tool(name=name, description="Sleep a while.", args_model=SleepArgs, kind=kind, func=sleep)


class ScriptedApprover:
    """Answers permission requests the way a person clicking the widget would."""

    interactive = True

    def __init__(
        self, answer: Callable[[PermissionRequest], list[PermissionDecision]] | Verdict, reason: str | None = None
    ):
        self.requests: list[PermissionRequest] = []
        self._answer = answer
        self._reason = reason

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        self.requests.append(request)
        if callable(self._answer):
            return self._answer(request)
        return [PermissionDecision(call_id=c.id, decision=self._answer, reason=self._reason) for c in request.calls]


class NeverAnswers:
    """A person who sees the permission request and never clicks (for expiry and Stop)."""

    interactive = True

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def decide(self, request: PermissionRequest) -> list[PermissionDecision]:
        self.asked.set()
        await asyncio.Event().wait()
        return []


def tool_results(source: ModelRequest | list[Message]) -> list[ToolResultMessage]:
    """The tool results in what a model was sent (a request) or in a history, in order."""
    messages = source.messages if isinstance(source, ModelRequest) else source
    return [m for m in messages if isinstance(m, ToolResultMessage)]


def result_of(model: ScriptedModel, call_id: str | None = None, request: int = -1) -> ToolResultMessage:
    """The result of call `call_id` (default: the first call) as the model read it in its
    `request`-th request (default: the last one)."""
    results = tool_results(model.requests[request])
    if call_id is None:
        return results[0]
    [found] = [r for r in results if r.call_id == call_id]
    return found


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def tool_step(*calls: dict[str, Any], text: str = "") -> dict[str, Any]:
    return {"text": text, "tool_calls": list(calls)}


@pytest.fixture
def make_workspace(tmp_path: Path) -> Callable[..., tuple[Workspace, ScriptedModel]]:
    def make(steps: list[Step], **overrides: Any) -> tuple[Workspace, ScriptedModel]:
        return scripted_workspace(tmp_path, steps, **overrides)

    return make


# -- the tier: every test here is marked `unit` and gets the tier's timeout ---------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_tier(config, items, Path(__file__).parent, "unit")
