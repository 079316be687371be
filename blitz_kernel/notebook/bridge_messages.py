"""The notebook bridge's messages as pydantic models (the shapes are in bridge.py's docstring).

They are part of the front-end protocol (blitz_kernel/protocol_schema.py): the labextension's
TypeScript types are generated from them, so a change here is followed by
`npm run gen:protocol` (docs/extending.md).

The bridge checks what it sends (a request's params, against its op's model) and what it
receives (a hello, a reply, and an ok reply's result against its op's model), so a front end
that speaks another dialect is one clear error rather than a KeyError deep in a tool. Replies
and results ignore fields they do not know (a newer front end may add some); requests forbid
them. Its own module because `%load_ext` installs the bridge without loading pydantic: the
bridge imports this on its first message.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

CellType = Literal["code", "markdown", "raw"]
ErrorCode = Literal["bad_request", "bad_index", "running_cell", "unknown_op", "internal"]
Op = Literal[
    "list_cells",
    "read_cells",
    "insert_cell",
    "replace_cell",
    "delete_cell",
    "set_outputs",
    "ask_permission",
    "close_permission",
]
Answer = Literal["allow", "always", "deny"]


class _Sent(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Received(BaseModel):
    model_config = ConfigDict(extra="ignore")


# -- the handshake ------------------------------------------------------------------------------


class Hello(_Received):
    """A front end's comm_open data."""

    kind: Literal["hello"]
    protocol: int
    client: str = ""
    version: str = ""
    path: str | None = None


class Welcome(_Sent):
    """The kernel's answer to a hello, on the front end's comm."""

    kind: Literal["welcome"] = "welcome"
    protocol: int


class Ping(_Sent):
    """The comm_open data of the kernel's ping: "open your own comm" (bridge.py)."""

    kind: Literal["ping"] = "ping"
    protocol: int


class HandshakeError(_Sent):
    """The comm_close data when a hello does not fit."""

    kind: Literal["error"] = "error"
    message: str


# -- params of each op (kernel → front end) -----------------------------------------------------


class ListCellsParams(_Sent):
    pass


class ReadCellsParams(_Sent):
    indices: list[int] | None = None
    include_outputs: bool = True
    include_images: bool = False
    max_output_chars: int = Field(default=8000, ge=0)


class InsertCellParams(_Sent):
    index: int
    cell_type: CellType = "code"
    source: str
    metadata: dict[str, Any] | None = None
    """The new cell's `blitz` metadata key (the agent's mark)."""


class ReplaceCellParams(_Sent):
    index: int
    source: str
    cell_type: CellType | None = None
    """Left out (not null) when the cell keeps its type."""
    metadata: dict[str, Any] | None = None
    """The cell's `blitz` metadata key (the agent's mark); left out: unchanged."""


class DeleteCellParams(_Sent):
    index: int


class SetOutputsParams(_Sent):
    id: str
    """The cell, by id: indices shift while the cell runs if the user inserts cells."""
    outputs: list[dict[str, Any]]
    """nbformat 4 outputs, as the cell's output area takes them."""
    execution_count: int | None
    metadata: dict[str, Any] | None = None
    """The cell's `blitz` metadata key (who ran it); null removes the key."""


class AskedCall(_Sent):
    """One call of a permission request, as the notebook shows it."""

    id: str
    name: str
    preview: str
    """What the call would do, as plain text (a diff, the code, or its arguments as JSON)."""


class AskPermissionParams(_Sent):
    """Ask the person at the notebook about calls from a client outside it (`blitz mcp`,
    `blitz acp`): a card naming the client, answered Allow / Always / Deny."""

    question: str
    """Names the question, so that `close_permission` can take it back."""
    client: str
    """Who is calling, e.g. "mcp:claude-code"."""
    calls: list[AskedCall]
    timeout_s: float | None = None
    """How long the kernel waits for the answer (the card says so); null: no limit."""


class ClosePermissionParams(_Sent):
    """Take back a question: answered elsewhere first, expired, or its call was cancelled."""

    question: str


class Request(_Sent):
    kind: Literal["request"] = "request"
    id: str
    op: Op
    params: dict[str, Any]


# -- results of each op (front end → kernel) ----------------------------------------------------


class ImageInfo(_Received):
    mime_type: str
    width: int | None = None
    height: int | None = None
    data: str | None = None
    """Base64, only when the request asked for images."""


class StreamOutput(_Received):
    output_type: Literal["stream"]
    name: str
    text: str


class ErrorOutput(_Received):
    output_type: Literal["error"]
    ename: str
    evalue: str
    traceback: str


class RichOutput(_Received):
    output_type: Literal["execute_result", "display_data"]
    mime_types: list[str]
    text: str
    images: list[ImageInfo] = Field(default_factory=list)


class CellSummary(_Received):
    index: int
    id: str
    cell_type: CellType
    execution_count: int | None
    running: bool
    first_line: str
    line_count: int
    output_count: int


class Cell(_Received):
    index: int
    id: str
    cell_type: CellType
    source: str
    execution_count: int | None
    running: bool
    outputs: list[StreamOutput | ErrorOutput | RichOutput] = Field(default_factory=list)
    blitz: dict[str, Any] | None = None
    """The cell's `blitz` metadata (which session and turn made or ran it); a front end of
    an older version sends none."""


class ListCellsResult(_Received):
    path: str
    cell_count: int
    cells: list[CellSummary]


class ReadCellsResult(_Received):
    path: str
    cell_count: int
    cells: list[Cell]


class InsertCellResult(_Received):
    index: int
    id: str
    cell_count: int


class ReplaceCellResult(_Received):
    index: int
    id: str
    cell_type: CellType
    previous_source: str
    cell_count: int


class DeletedCell(_Received):
    id: str
    cell_type: CellType
    source: str


class DeleteCellResult(_Received):
    deleted: DeletedCell
    cell_count: int


class SetOutputsResult(_Received):
    index: int
    id: str
    previous_outputs: list[dict[str, Any]]
    previous_execution_count: int | None
    previous_metadata: dict[str, Any] | None = None


class AskPermissionResult(_Received):
    answer: Answer
    """For every call of the question; "always" allows the tool for the rest of the session."""
    reason: str | None = None
    """Why it was denied, when the person said (the client reads it as the tool error)."""


class ClosePermissionResult(_Received):
    closed: bool
    """False when the question was no longer shown (already answered or never asked)."""


class ReplyError(_Received):
    code: ErrorCode | str
    """One of the known codes; another one (a newer front end) is shown as it is."""
    message: str


class OkReply(_Received):
    kind: Literal["reply"]
    id: str
    ok: Literal[True]
    result: dict[str, Any]


class ErrorReply(_Received):
    kind: Literal["reply"]
    id: str
    ok: Literal[False]
    error: ReplyError


REPLY: TypeAdapter[OkReply | ErrorReply] = TypeAdapter(OkReply | ErrorReply)

OPS: dict[str, tuple[type[_Sent], type[_Received]]] = {
    "list_cells": (ListCellsParams, ListCellsResult),
    "read_cells": (ReadCellsParams, ReadCellsResult),
    "insert_cell": (InsertCellParams, InsertCellResult),
    "replace_cell": (ReplaceCellParams, ReplaceCellResult),
    "delete_cell": (DeleteCellParams, DeleteCellResult),
    "set_outputs": (SetOutputsParams, SetOutputsResult),
    "ask_permission": (AskPermissionParams, AskPermissionResult),
    "close_permission": (ClosePermissionParams, ClosePermissionResult),
}
"""Each op's params and result models."""


def request_data(request_id: str, op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The request to send, checked; ValueError names the op and what is wrong with it."""
    if op not in OPS:
        raise ValueError(f"unknown notebook bridge op {op!r}; known: {', '.join(OPS)}")
    try:
        checked = OPS[op][0].model_validate(params)
    except ValidationError as error:
        raise ValueError(f"bad params for {op}: {problems(error)}") from None
    return Request(id=request_id, op=op, params=checked.model_dump(mode="json", exclude_unset=True)).model_dump()


def checked_result(op: str, result: dict[str, Any]) -> dict[str, Any]:
    """An ok reply's result, checked against its op's model (fields it does not know dropped);
    ValueError says what is wrong with it."""
    try:
        parsed = OPS[op][1].model_validate(result)
    except ValidationError as error:
        raise ValueError(problems(error)) from None
    return parsed.model_dump(mode="json", exclude_unset=True)


def problems(error: ValidationError) -> str:
    """The first few problems of `error`, as `field: what is wrong`."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(message)'}: {e['msg']}" for e in error.errors()[:3])
