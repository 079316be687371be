"""Inline completion for JupyterLab's code cells (docs/completion.md): the code around the
cursor and the neighbouring cells go to the workspace's `completion.model`, and the suggestion
streams back as ghost text.

It runs in the Jupyter server, not the kernel, so a suggestion comes while the kernel is busy
running a turn. The workspace is the notebook's folder (the kernel's working directory), read
with the same configuration layers, trust and redaction as a turn there: a cloned repository
cannot switch completion on or choose its model, and secrets are redacted on the way out and
on the way back. Its usage is kept apart from every session's.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..config.loading import config_source_paths
from ..config.policy import find_policy
from ..core.history import user_prompt
from ..core.usage import PriceBook, UsageLedger
from ..engine.workspace.configuration import Configuration
from ..errors import BlitzError
from ..models.base import Model, ModelRequest, ModelResponse, TextDelta
from ..models.placeholder import PlaceholderModel
from ..tools import builtin_tools
from ..tools.registry import ToolRegistry
from ..tools.variable_names import MAX_VARIABLES, UserVariable

MAX_CELL_CHARS = 20_000
"""What one cell may send (the cursor's cell: each side of the cursor)."""
MAX_NEIGHBOURS = 8
"""Cells above and below the cursor's cell that go along, the nearest first."""
SYSTEM = (
    "You complete code in a Jupyter notebook cell. Answer with only the text to insert at "
    "<CURSOR>: no explanation, no code fences, nothing already written before or after it. "
    "Answer with nothing when no completion fits."
)


class CompletionRequest(BaseModel):
    """What the front end sends for one suggestion."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(max_length=4096)
    """The notebook's path relative to the server's root (its folder is the workspace)."""
    prefix: str = Field(max_length=MAX_CELL_CHARS)
    suffix: str = Field(default="", max_length=MAX_CELL_CHARS)
    language: str = Field(default="python", max_length=40)
    before: list[str] = Field(default_factory=list, max_length=MAX_NEIGHBOURS)
    """Sources of the cells above, nearest last."""
    after: list[str] = Field(default_factory=list, max_length=MAX_NEIGHBOURS)
    """Sources of the cells below, nearest first."""
    variables: list[UserVariable] = Field(default_factory=list, max_length=MAX_VARIABLES)
    """The user's variables, names and types, when the kernel was idle (the comm
    `blitz.variables`); none while it runs a cell."""


class CompletionSettings(BaseModel):
    """What the front end needs to know before it asks (`GET /blitz/completion`)."""

    enabled: bool
    model: str | None = None
    debounce_ms: int = 250
    max_tokens: int = 64
    reason: str | None = None
    """Why completion is off (no model chosen, the configuration does not load)."""


class CompletionChunk(BaseModel):
    """One line of the streamed answer: text so far grows; `done` ends it; `error` says why."""

    kind: Literal["text", "done", "error"]
    text: str = ""
    message: str | None = None
    first_byte_ms: float | None = None
    """On `done`: the time from the request to the first text (ours plus the model's)."""


class CompletionError(BlitzError):
    """A request the completion service refuses (a path outside the server's root)."""


class Workspaces:
    """The workspaces' configurations, read again when one of their config files changes."""

    def __init__(self, root_dir: Path, home: Path | None = None) -> None:
        self.root_dir, self.home = root_dir.resolve(), home
        self._known: dict[Path, tuple[tuple[float, ...], Configuration]] = {}
        self._tools = ToolRegistry(builtin_tools())

    def folder_of(self, notebook: str) -> Path:
        folder = (self.root_dir / notebook).resolve().parent
        if folder != self.root_dir and self.root_dir not in folder.parents:
            raise CompletionError(f"{notebook!r} is outside the server's root folder")
        return folder

    def configuration(self, folder: Path) -> Configuration:
        """The folder's configuration, read again when a file it depends on changed: its config
        files, the user's trust record (a revoked trust must hold back at once) and the admin
        policy."""
        home = self.home if self.home is not None else Path.home()
        policy = find_policy(os.environ)
        watched = [*config_source_paths(folder, self.home), home / ".blitz" / "trusted.toml"]
        stamp = tuple(_mtime(path) for path in [*watched, *([policy] if policy is not None else [])])
        known = self._known.get(folder)
        if known is None or known[0] != stamp:
            configuration = Configuration(folder, self._tools, {}, model=None, environ=None, home=self.home)
            self._known[folder] = (stamp, configuration)
            return configuration
        return known[1]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class Completer:
    """Answers completion requests for the notebooks under one server's root."""

    def __init__(self, root_dir: Path, home: Path | None = None) -> None:
        self.workspaces = Workspaces(root_dir, home)
        self.usage = UsageLedger()
        """Completion's own usage, apart from every session's (`GET /blitz/completion`)."""
        self._models: dict[tuple[Path, str, str, str], Model] = {}

    def settings(self, notebook: str) -> CompletionSettings:
        try:
            config = self.workspaces.configuration(self.workspaces.folder_of(notebook)).config
        except BlitzError as error:  # a bad config: say so once, suggest nothing
            return CompletionSettings(enabled=False, reason=str(error))
        settings = config.completion
        reason = None if settings.model else "completion.model is not set (docs/completion.md)"
        return CompletionSettings(
            enabled=settings.model is not None,
            model=settings.model,
            debounce_ms=settings.debounce_ms,
            max_tokens=settings.max_tokens,
            reason=reason,
        )

    async def stream(self, request: CompletionRequest) -> AsyncIterator[CompletionChunk]:
        """The suggestion as it grows; one `error` chunk instead when it cannot come."""
        started = time.perf_counter()
        try:
            folder = self.workspaces.folder_of(request.path)
            configuration = self.workspaces.configuration(folder)
        except BlitzError as error:
            yield CompletionChunk(kind="error", message=str(error))
            return
        settings = configuration.config.completion
        if settings.model is None:
            yield CompletionChunk(kind="error", message="completion.model is not set (docs/completion.md)")
            return
        model = self._model(folder, settings.model, configuration)
        if isinstance(model, PlaceholderModel):
            yield CompletionChunk(kind="error", message=f"completion.model {settings.model!r}: {model.reason}")
            return
        redactor = configuration.redactor
        prompt = redactor.redact(prompt_text(request))
        model_request = ModelRequest(
            system=SYSTEM, messages=[user_prompt(prompt)], max_tokens=settings.max_tokens, temperature=0.0
        )
        text, shown, first_byte = "", "", None
        try:
            async for item in model.stream(model_request):
                if isinstance(item, TextDelta) and not item.thought and item.text:
                    first_byte = first_byte if first_byte is not None else time.perf_counter()
                    text += item.text
                    grown = redactor.redact(settled(text, request.suffix))
                    if grown != shown and grown.startswith(shown):  # ghost text only grows
                        shown = grown
                        yield CompletionChunk(kind="text", text=shown)
                elif isinstance(item, ModelResponse):
                    price = PriceBook(dict(configuration.config.prices), model.price).lookup(item.model)
                    self.usage.record(item.model, item.usage, price.cost(item.usage) if price is not None else None)
        except BlitzError as error:
            yield CompletionChunk(kind="error", message=f"{settings.model}: {error}")
            return
        waited = (first_byte - started) * 1000 if first_byte is not None else None
        yield CompletionChunk(kind="done", text=redactor.redact(clean(text, request.suffix)), first_byte_ms=waited)

    def _model(self, folder: Path, name: str, configuration: Configuration) -> Model:
        config = configuration.config  # where the calls go and with which key are part of it
        key = (folder, name, str(config.api_base), str(config.api_key_env))
        if key not in self._models:
            self._models[key] = configuration.build(name)
        return self._models[key]


def prompt_text(request: CompletionRequest) -> str:
    """The user's variables, the neighbouring cells and the cursor's cell, with <CURSOR>
    where the text goes."""
    fence = f"```{request.language}"
    variables = "\n".join(f"{variable.name}: {variable.type}" for variable in request.variables)
    above = "\n\n".join(f"{fence}\n{source}\n```" for source in request.before)
    below = "\n\n".join(f"{fence}\n{source}\n```" for source in request.after)
    parts = [
        f"Variables defined in the kernel (name: type):\n{variables}" if variables else "",
        f"Cells above:\n{above}" if above else "",
        f"The cell being edited:\n{fence}\n{request.prefix}<CURSOR>{request.suffix}\n```",
        f"Cells below:\n{below}" if below else "",
    ]
    return "\n\n".join(part for part in parts if part)


def settled(text: str, suffix: str) -> str:
    """What of a suggestion still streaming can be shown: a trailing newline or backticks may
    be the start of a closing fence, so they wait for the next piece."""
    return re.sub(r"\n?`{0,3}$", "", clean(text, suffix))


def clean(text: str, suffix: str) -> str:
    """The suggestion without fences a model added anyway, and without repeating what already
    follows the cursor."""
    lines = text.split("\n")
    if lines and lines[0].lstrip().startswith("```"):
        lines = lines[1:]
    if lines and lines[-1].strip().startswith("```"):
        lines = lines[:-1]
    cleaned = "\n".join(lines).replace("<CURSOR>", "")
    following = suffix.strip()
    if following and cleaned.rstrip().endswith(following):
        cleaned = cleaned.rstrip()[: -len(following)]
    return cleaned
