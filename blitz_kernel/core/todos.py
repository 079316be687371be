"""A todo list item: what the `todo` tool receives, the session keeps and the store saves.

In the core because three layers share it (the tool, the running turn, the store), and its
field descriptions are part of the JSON schema the model sees for `todo`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TodoStatus = Literal["pending", "in_progress", "done"]


class TodoItem(BaseModel):
    """One line of the agent's todo list; frozen, so a copied session can share its items."""

    model_config = ConfigDict(frozen=True)

    content: str = Field(description="what to do, one short line")
    status: TodoStatus = Field(default="pending", description="progress")
