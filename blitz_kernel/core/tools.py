"""How a tool looks to a model: its name, description and argument schema.

It lives in `core` because both sides need it and neither should import the other: `tools`
builds specs from its pydantic argument models, and `models` turns them into each provider's
wire format (docs/architecture.md: imports point inward only).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


PreviewKind = Literal["diff", "cell", "code"]
"""How an approval card shows a call's preview: a unified diff (its lines coloured), a cell's
old and new source, or code."""


class ToolPresentation(BaseModel):
    """How front ends show a tool's calls, declared by the tool itself and carried by its
    events, so that no front end tells tools apart by their names."""

    model_config = ConfigDict(frozen=True)

    preview_kind: PreviewKind | None = None
    """How the approval card shows the call's preview; None: as plain text."""
    plan_review: bool = False
    """The call waits for the user's review of a plan (`exit_plan_mode`): its card says it is
    waiting for review meanwhile and, once answered, the plan itself stands in for the card."""
    code_arg: str | None = None
    """The argument that is Python code: shown as code wherever the call is shown."""
    streams_subagent: bool = False
    """The call runs a sub-agent whose turn shows inside its card (`invoke_agent`): a running
    card opens once, so the sub-agent's work shows as it streams."""
