"""Sub-agent turns inside an `invoke_agent` card.

A sub-agent's events reach the front end wrapped in `SubagentEvent`s, one wrapper per level:
the outer wrapper names the root turn's `invoke_agent` call, the next one the sub-agent's own
`invoke_agent` call, and so on (depth ≤ 3). Each level is a `Scope`: the items of that agent's
turn (they *are* the `nested` list of the card that started it, so the card carries them to the
front end and to the static rendering) and its tool cards by call id. Call ids are only unique
within one agent's turn (two scripted agents both say `c1`), which is why a card is always
looked up in its own scope, never by id alone.

The sub-agent's permission requests are not folded here: TurnState shows them in the turn's one
permission card (it owns `pending`), using `unwrap` to learn which agent and scope ask.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ...engine.events import (
    ErrorEvent,
    Event,
    PermissionDecision,
    PermissionRequest,
    SubagentEvent,
    TextEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnDone,
)
from .items import FINAL_STATUS, OPEN_STATUSES, Item, TextItem, ToolItem

Path = tuple[str, ...]
"""The `invoke_agent` call ids from the root turn down to one sub-agent turn."""


def _now_ms() -> float:
    return time.time() * 1000.0


def new_tool(call_id: str, name: str, args: dict[str, object], agent: str = "") -> ToolItem:
    """A fresh, running tool card."""
    return {
        "kind": "tool",
        "id": call_id,
        "name": name,
        "args": dict(args),
        "status": "running",
        "started_ms": _now_ms(),
        "ended_ms": None,
        "preview": "",
        "error": None,
        "decision": None,
        "images": 0,
        "images_omitted": 0,
        "agent": agent,
        "nested": [],
    }


def unwrap(event: SubagentEvent) -> tuple[Path, str, Event]:
    """(the scope's path, the agent whose turn it is, the sub-agent's own event)."""
    path: list[str] = []
    agent = event.agent
    inner: Event = event
    while isinstance(inner, SubagentEvent):
        path.append(inner.call_id)
        agent = inner.agent
        inner = inner.event
    return tuple(path), agent, inner


@dataclass
class Scope:
    """One sub-agent turn, folded into the card of the call that started it."""

    agent: str
    items: list[Item]
    tools: dict[str, ToolItem] = field(default_factory=dict)
    live: TextItem | None = None
    """The text item still streaming (deltas so far), replaced by the exact text at the end."""

    def apply(self, event: Event) -> bool:
        """Fold the sub-agent's own event in; whether anything the front end shows changed."""
        if isinstance(event, TextEvent):
            return self._on_text(event)
        if isinstance(event, ToolCallEvent):
            self.live = None
            tool = new_tool(event.id, event.name, event.args, self.agent)
            self.tools[event.id] = tool
            self.items.append(tool)
            return True
        if isinstance(event, ToolResultEvent):
            return self._on_result(event)
        if isinstance(event, PermissionRequest):
            for call in event.calls:
                asking = self.tools.get(call.id)
                if asking is not None and asking["status"] == "running":
                    asking["status"] = "waiting"
            return True
        if isinstance(event, PermissionDecision):
            return self.decide(event)
        if isinstance(event, ErrorEvent):
            self.items.append({"kind": "error", "message": event.message})
            return True
        if isinstance(event, TurnDone):
            return self._on_done(event)
        return False

    def decide(self, event: PermissionDecision) -> bool:
        tool = self.tools.get(event.call_id)
        if tool is None:
            return False
        tool["decision"] = event.decision
        tool["status"] = "denied" if event.decision == "deny" else "running"
        return True

    def _on_text(self, event: TextEvent) -> bool:
        if event.thought:
            return False  # a sub-agent's thinking stays out of the card (its answer is enough)
        if event.delta and not event.repeat:
            if self.live is None:
                self.live = {"kind": "text", "text": ""}
                self.items.append(self.live)
            self.live["text"] += event.text
            return True
        if self.live is not None:
            self.live["text"] = event.text  # the exact text replaces the pieces
        elif event.text:
            self.items.append({"kind": "text", "text": event.text})
        self.live = None
        return True

    def _on_result(self, event: ToolResultEvent) -> bool:
        tool = self.tools.get(event.id)
        if tool is None:
            return False
        tool["status"] = FINAL_STATUS[event.status]
        tool["preview"], tool["error"], tool["ended_ms"] = event.preview, event.error, _now_ms()
        tool["images_omitted"] = len(event.images) + event.images_omitted  # nested cards show none
        return True

    def _on_done(self, event: TurnDone) -> bool:
        self.live = None
        for tool in self.tools.values():
            if tool["status"] in OPEN_STATUSES:
                tool["status"], tool["ended_ms"] = "cancelled", _now_ms()
        if event.error:
            self.items.append({"kind": "error", "message": event.error})
        return True


class SubagentCards:
    """Every sub-agent scope of one turn, found from the root turn's tool cards."""

    def __init__(self, root_tools: dict[str, ToolItem]) -> None:
        self._root_tools = root_tools
        self._scopes: dict[Path, Scope] = {}

    def scope(self, path: Path, agent: str) -> Scope | None:
        """The scope at `path`, made on first use; None when the card it nests in is unknown."""
        found = self._scopes.get(path)
        if found is not None:
            return found
        if not path:
            return None
        parent_tools = self._root_tools if len(path) == 1 else self._parent_tools(path[:-1])
        if parent_tools is None or path[-1] not in parent_tools:
            return None
        card = parent_tools[path[-1]]
        made = Scope(agent=agent, items=card["nested"])
        self._scopes[path] = made
        return made

    def _parent_tools(self, path: Path) -> dict[str, ToolItem] | None:
        parent = self._scopes.get(path)
        return parent.tools if parent is not None else None

    def apply(self, event: SubagentEvent) -> tuple[Path, str, Event, bool]:
        """Fold a wrapped event into its scope: (path, agent, inner event, changed)."""
        path, agent, inner = unwrap(event)
        scope = self.scope(path, agent)
        changed = scope.apply(inner) if scope is not None else False
        return path, agent, inner, changed

    def tool(self, path: Path, call_id: str) -> ToolItem | None:
        scope = self._scopes.get(path)
        return scope.tools.get(call_id) if scope is not None else None


def asked(event: Event) -> PermissionRequest | None:
    """The permission request `event` opens: the turn's own, or a sub-agent's, which
    comes wrapped in SubagentEvents and is answered in the same widget."""
    while isinstance(event, SubagentEvent):
        event = event.event
    return event if isinstance(event, PermissionRequest) else None
