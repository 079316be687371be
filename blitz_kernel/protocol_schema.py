"""The front-end protocol in one place: every message that crosses between Python and the
browser, and its JSON Schema, from which the labextension's TypeScript types are generated.

The models stay where their owners use them (the notebook bridge's in
notebook/bridge_messages.py, the widget's state and commands in notebook/widgets/, the
engine's events in engine/events.py, inline completion's in server/completion.py); this
module only names them, at the package's top because it reads several rooms. Each is
exported as it travels: what Python dumps whole with every field present (the front end may
rely on them); what Python validates (what it receives, and the bridge's params, sent with
only the fields a tool set) with the fields that have a default optional.
`python -m blitz_kernel.protocol_schema` prints the schema; `npm run gen:protocol` turns it
into labextension/src/generated/protocol.ts, and the labextension's checks fail when that
file is stale (docs/widget.md, docs/extending.md).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode

from .engine.events import Event
from .engine.undo.changes import ReviewedChange
from .notebook import bridge_messages as bridge
from .notebook.widgets.items import TurnWidgetState, UndoWidgetState
from .notebook.widgets.undo import ControlMessage
from .notebook.widgets.view import FrontEndMessage
from .server.completion import CompletionChunk, CompletionRequest, CompletionSettings
from .tools.variable_names import VariablesReply

Shape = Literal["dumped", "validated"]

MESSAGES: dict[str, tuple[Any, Shape]] = {
    # the notebook bridge (comm `blitz.notebook`)
    "CellType": (bridge.CellType, "validated"),
    "ErrorCode": (bridge.ErrorCode, "validated"),
    "Op": (bridge.Op, "validated"),
    "BridgeHello": (bridge.Hello, "validated"),
    "BridgeWelcome": (bridge.Welcome, "dumped"),
    "BridgePing": (bridge.Ping, "dumped"),
    "BridgeHandshakeError": (bridge.HandshakeError, "dumped"),
    "BridgeRequest": (bridge.Request, "dumped"),
    "ListCellsParams": (bridge.ListCellsParams, "validated"),
    "ReadCellsParams": (bridge.ReadCellsParams, "validated"),
    "InsertCellParams": (bridge.InsertCellParams, "validated"),
    "ReplaceCellParams": (bridge.ReplaceCellParams, "validated"),
    "DeleteCellParams": (bridge.DeleteCellParams, "validated"),
    "SetOutputsParams": (bridge.SetOutputsParams, "validated"),
    "AskPermissionParams": (bridge.AskPermissionParams, "validated"),
    "ClosePermissionParams": (bridge.ClosePermissionParams, "validated"),
    "ListCellsResult": (bridge.ListCellsResult, "validated"),
    "ReadCellsResult": (bridge.ReadCellsResult, "validated"),
    "InsertCellResult": (bridge.InsertCellResult, "validated"),
    "ReplaceCellResult": (bridge.ReplaceCellResult, "validated"),
    "DeleteCellResult": (bridge.DeleteCellResult, "validated"),
    "SetOutputsResult": (bridge.SetOutputsResult, "validated"),
    "AskPermissionResult": (bridge.AskPermissionResult, "validated"),
    "ClosePermissionResult": (bridge.ClosePermissionResult, "validated"),
    "BridgeOkReply": (bridge.OkReply, "validated"),
    "BridgeErrorReply": (bridge.ErrorReply, "validated"),
    # the turn widget and the Review changes / Undo all controls (anywidget traits and custom messages)
    "TurnWidgetState": (TurnWidgetState, "dumped"),
    "TurnWidgetCommand": (FrontEndMessage, "validated"),
    "UndoWidgetState": (UndoWidgetState, "dumped"),
    "UndoWidgetCommand": (ControlMessage, "validated"),
    "ReviewedChange": (ReviewedChange, "dumped"),  # one entry of UndoWidgetState.changes, less its `summary`
    # the engine's events, which the widget's state is made from
    "EngineEvent": (Event, "dumped"),
    # inline completion (the server extension's settings and NDJSON stream)
    "CompletionSettings": (CompletionSettings, "dumped"),
    "CompletionRequest": (CompletionRequest, "validated"),
    "CompletionChunk": (CompletionChunk, "validated"),  # sent without its None fields
    # the kernel's answer on the comm `blitz.variables` (inline completion's variable names)
    "VariablesReply": (VariablesReply, "dumped"),
}
"""Every message, by its name in the protocol, and how it travels. A model's TypeScript type
keeps its class's name; a union is named here."""

_MODE: dict[Shape, JsonSchemaMode] = {"dumped": "serialization", "validated": "validation"}


class _Schema(GenerateJsonSchema):
    """What Python dumps has every field, defaults included: say so, so that the TypeScript
    type of a field with a default (an event's `type`) is not optional."""

    def field_is_required(self, field: Any, total: bool) -> bool:
        if self.mode == "serialization" and field.get("type") in ("model-field", "dataclass-field"):
            return not field.get("serialization_exclude", False)
        return super().field_is_required(field, total)

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False  # a titled field would become a TypeScript type of its own (`Kind1`)


def protocol_schema() -> dict[str, Any]:
    """One JSON Schema document: each message a definition, the top level naming them all."""
    inputs = [(name, _MODE[direction], TypeAdapter(kind)) for name, (kind, direction) in MESSAGES.items()]
    refs, top = TypeAdapter.json_schemas(inputs, schema_generator=_Schema, ref_template="#/$defs/{model}")
    defs: dict[str, Any] = dict(top.get("$defs", {}))
    properties: dict[str, Any] = {}
    for name, mode, _ in inputs:
        ref = refs[(name, mode)]
        if set(ref) != {"$ref"}:  # a union (or a TypedDict schema inlined): named here
            defs[name] = {**ref, "title": name}
            ref = {"$ref": f"#/$defs/{name}"}
        properties[name] = ref  # a model keeps its class's name
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "BlitzProtocol",
        "description": "Every message between blitz_kernel and its front ends (generated; see docs/widget.md).",
        "type": "object",
        "properties": properties,
        "required": list(MESSAGES),
        "additionalProperties": False,
        "$defs": dict(sorted(defs.items())),
    }


def main() -> None:
    """Print the schema (`npm run gen:protocol` reads it)."""
    json.dump(protocol_schema(), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
