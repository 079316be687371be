"""How a tool looks to a model: its name, description and argument schema.

It lives in `core` because both sides need it and neither should import the other: `tools`
builds specs from its pydantic argument models, and `models` turns them into each provider's
wire format (docs/architecture.md: imports point inward only).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ToolSpec(BaseModel):
    """A tool as the model sees it: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
