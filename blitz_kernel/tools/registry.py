"""Tools: async functions with a pydantic argument model, a description and a kind.

The JSON schema the model sees is generated from the argument model. Invalid arguments from
the model become an error result the model can correct (`ToolError`), never a crash.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from ..core.history import ImagePart
from ..core.todos import TodoItem
from ..core.tools import PreviewKind, ToolPresentation, ToolSpec
from ..core.web_access import WebAccess
from .captured import CapturedImage


class ToolKind(enum.StrEnum):
    """Read-only tools run in plan mode and default to `allow`; mutating ones need approval."""

    READ_ONLY = "read_only"
    MUTATING = "mutating"
    WORKFLOW = "workflow"


class ToolError(Exception):
    """A tool failed in a way the model should read and can correct (bad path, no match...).

    `display_images`: what the tool showed the user before it failed (the figures of code
    that then raised), so its card still shows them; never sent to the model."""

    def __init__(self, message: str, *, display_images: list[ImagePart] | None = None) -> None:
        super().__init__(message)
        self.display_images: list[ImagePart] = display_images or []


class KernelContext(Protocol):
    """What kernel tools need from the front end; the engine never imports IPython."""

    @property
    def user_ns(self) -> dict[str, Any]:
        """The user's namespace: variables persist there for the user's later cells."""
        ...

    @property
    def hidden_names(self) -> Mapping[str, Any]:
        """Names the shell itself put in the namespace (IPython's `user_ns_hidden`), with their
        original values: listing tools leave them out unless the user rebound them."""
        ...


class TurnAccess(Protocol):
    """What workflow tools may do to the running turn (the engine's TurnRunner provides it)."""

    def enter_plan_mode(self) -> None:
        """Switch the turn to plan mode from its next tool call."""
        ...

    async def submit_plan(self, plan: str) -> str:
        """Show the plan for review; returns what the model should read."""
        ...

    def submit_output(self, arguments: dict[str, Any]) -> str:
        """The turn's structured answer (`final_result`): accepted, or ToolError says why not."""
        ...

    def set_todos(self, items: list[TodoItem]) -> None:
        """Replace the session's todo list."""
        ...

    def list_agents(self) -> list[tuple[str, str]]:
        """(name, description) of the agents the turn may invoke."""
        ...

    async def invoke_agent(self, agent: str, prompt: str, call_id: str) -> str:
        """Run `agent` as a sub-agent for call `call_id`; its final answer."""
        ...

    def checkpoint(self) -> ChangeRecorder | None:
        """The turn's change recorder (for undo): what changing tools report before and after a
        change, so the turn can be undone."""
        ...


class ChangeRecorder(Protocol):
    """What changing tools tell the running turn's checkpoint (engine/checkpoints.py): tools
    never import the engine, so they talk to it through this."""

    def before_file_change(self, path: Path, fd: int | None, folder: int | None = None) -> None:
        """`path` (a real path in the workspace) is about to be replaced; `fd` reads its
        content now (None: it does not exist yet). Only the first change in a turn keeps the
        old content: with `folder` (a descriptor of the folder the file's entry `path.name`
        is in) the recorder may link the old file itself into the checkpoint instead of
        copying it, since the tool then renames a new file over the name (tools/confined.py).
        Raises ToolError when the old content cannot be kept: then nothing is written."""
        ...

    def after_file_change(self, path: Path, content: bytes, written: os.stat_result | None = None) -> None:
        """`path` now holds `content` (its fingerprint detects a later change by someone else);
        `written` is the status of the file the tool wrote (its device and inode: an undo
        removes a file the turn created only if it is still that file)."""
        ...

    def cell_changed(self, change: Mapping[str, Any]) -> None:
        """A notebook cell was inserted, replaced or deleted: what reverses it."""
        ...

    def namespace_before(self, namespace: dict[str, Any]) -> object:
        """Taken before code runs in `namespace`: the names and their objects (no copies)."""
        ...

    def namespace_after(self, before: object, call_id: str | None, code: str) -> str:
        """What the code created, rebound and deleted, as one line for the model ("" if nothing)."""
        ...


class Passage(Protocol):
    """One hit of a transcript search, as the workspace's session book returns it."""

    @property
    def index(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def time(self) -> float | None: ...
    @property
    def excerpt(self) -> str: ...
    @property
    def compacted(self) -> bool: ...


class TranscriptSearch(Protocol):
    """What `search_session` needs from the workspace's session book: tools sit below the
    engine, so the book arrives in the tool context rather than by import."""

    def search(self, text: str, session: str | None = None) -> Sequence[Passage]: ...


def change_recorder(ctx: ToolContext) -> ChangeRecorder | None:
    """The running turn's change recorder, if there is a turn that keeps checkpoints."""
    checkpoint = getattr(ctx.turn, "checkpoint", None)
    return checkpoint() if checkpoint is not None else None


@dataclass
class ToolContext:
    """Handed to every tool call."""

    workspace: Path
    """The workspace root; file tools stay inside it."""
    kernel: KernelContext | None = None
    """None outside a kernel (scripts, unit tests): kernel tools then say they need one."""
    session: str = "default"
    turn: TurnAccess | None = None
    """The running turn, for workflow tools (plan mode, todo); None outside a turn."""
    deadline: float | None = None
    """`time.monotonic()` by which the turn must end (its --timeout), for tools that block."""
    call_id: str | None = None
    """The id of the call this context was handed to (each call gets its own copy)."""
    variable_values: bool = True
    """False (`privacy.variables = "schema"`): variable tools send names, types, shapes,
    column names and dtypes, but no values (no head, describe or reprs)."""
    home: Path | None = None
    """The user's home folder whose `.blitz/` counts (skills); None: the real one. Tests isolate it."""
    transcript: TranscriptSearch | None = None
    """The session book `search_session` searches; None where there is no session store (a
    reference's variable look-up, unit tests)."""
    vision: bool = False
    """The turn's model can see images: tools may send it pictures (notebook_run's figures)."""
    images: dict[str, CapturedImage] = field(default_factory=dict)
    """The images of this turn by name (figures run_python drew), for view_image. The context
    is made once per turn and each call's copy shares this dictionary."""
    web: WebAccess = field(default_factory=WebAccess)
    """Where web_fetch may go (`web.*`); the default reaches public addresses only."""


@dataclass
class ToolOutput:
    """A tool's answer with images for the model to see (view_image) or for the user to see
    (run_python's figures); most tools return the text alone. The engine refuses the images, as an error the model reads, when its model
    cannot see images."""

    text: str
    images: list[ImagePart] = field(default_factory=list)
    display_images: list[ImagePart] = field(default_factory=list)
    """Images shown to the user, not to the model (run_python's figures, which the model may
    ask to see with view_image): the front end puts them in the tool's card."""


ToolFunction = Callable[[Any, ToolContext], Awaitable[str | ToolOutput]]
PreviewFunction = Callable[[Any, ToolContext], Awaitable[str | None]]
"""What a call would change, as plain text for the approval card (a diff, the code)."""


@dataclass(frozen=True)
class Tool:
    """One tool: `func(args, ctx)` returns the text the model reads (or a ToolOutput with
    images), or raises ToolError."""

    name: str
    description: str
    args_model: type[BaseModel]
    kind: ToolKind
    func: ToolFunction
    preview: PreviewFunction | None = None
    """Optional: shows what a call would change before it is approved."""
    presentation: ToolPresentation = field(default_factory=ToolPresentation)
    """How front ends show its calls (the preview's kind, a plan review, a sub-agent's turn)."""
    schema: dict[str, Any] | None = field(default=None, compare=False)
    """The JSON schema the model sees, when it does not come from `args_model`: an MCP
    server's tool brings its own (with `PassthroughArgs` as the argument model)."""

    def spec(self) -> ToolSpec:
        if self.schema is not None:
            return ToolSpec(name=self.name, description=self.description, parameters=self.schema)
        return _spec(self.name, self.description, self.args_model)

    def parse_arguments(self, raw: str) -> BaseModel:
        """Validate the model's JSON argument string; ToolError says what to fix."""
        try:
            data = json.loads(raw or "{}")
        except json.JSONDecodeError as error:
            raise ToolError(f"arguments are not valid JSON ({error.msg}); send a JSON object") from None
        if not isinstance(data, dict):
            raise ToolError("arguments must be a JSON object")
        try:
            return self.args_model.model_validate(data)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}" for e in error.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None


class PassthroughArgs(BaseModel):
    """Arguments a tool takes as they come (checked by whoever defined the schema: an MCP
    server); `as_dict()` hands them on."""

    model_config = ConfigDict(extra="allow")

    def as_dict(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


@functools.lru_cache(maxsize=512)
def _spec(name: str, description: str, args_model: type[BaseModel]) -> ToolSpec:
    """Generating a JSON schema costs about a millisecond a tool: once per tool, not per turn."""
    schema = args_model.model_json_schema()
    schema.pop("title", None)
    return ToolSpec(name=name, description=description, parameters=schema)


@dataclass(frozen=True)
class ToolSet:
    """What a turn sends the model about its tools, computed once per tool set: the specs
    and their size in the prompt (about four characters a token, as the compaction check
    counts the rest of the prompt)."""

    specs: list[ToolSpec]
    schema_tokens: int


_TOOL_SETS: dict[tuple[int, ...], tuple[tuple[Tool, ...], ToolSet]] = {}
_TOOL_SETS_MAX = 64


def tool_set(tools: Iterable[Tool]) -> ToolSet:
    """The ToolSet of `tools`: every turn of an agent offers the same Tool objects, so this
    is a dictionary look-up after the first turn instead of specs and a JSON dump per turn."""
    ordered = tuple(tools)
    key = tuple(map(id, ordered))
    entry = _TOOL_SETS.get(key)
    if entry is not None:
        return entry[1]
    specs = [item.spec() for item in ordered]
    built = ToolSet(specs, len(json.dumps([spec.model_dump() for spec in specs])) // 4)
    if len(_TOOL_SETS) >= _TOOL_SETS_MAX:
        _TOOL_SETS.clear()
    _TOOL_SETS[key] = (ordered, built)  # holding the tools keeps their ids theirs
    return built


class ToolRegistry:
    """The tools a workspace knows, by name."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def with_preview(base: Tool, preview: PreviewFunction, kind: PreviewKind | None = None) -> Tool:
    """`base` with a preview for its approval card, shown as `kind` (None: plain text)."""
    presentation = base.presentation.model_copy(update={"preview_kind": kind})
    return dataclasses.replace(base, preview=preview, presentation=presentation)


def tool(
    name: str, kind: ToolKind, args: type[BaseModel], presentation: ToolPresentation | None = None
) -> Callable[[ToolFunction], Tool]:
    """Decorator: turns `async def f(args, ctx) -> str` into a Tool; the docstring is the
    description the model reads."""

    def wrap(func: ToolFunction) -> Tool:
        description = " ".join((func.__doc__ or name).split())
        return Tool(
            name=name,
            description=description,
            args_model=args,
            kind=kind,
            func=func,
            presentation=presentation or ToolPresentation(),
        )

    return wrap
