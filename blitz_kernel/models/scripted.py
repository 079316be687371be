"""ScriptedModel: replays a fixed list of steps instead of calling a model.

It is how unit tests, demos and offline notebooks run, and it says so in its name
(`scripted:PATH`); it is never presented as a real model. It records every request it
receives, raises `ScriptExhaustedError` when asked for more steps than it holds, and
`assert_complete()` proves a test used every step.

A step is a dict (the same shape the tests' fake server plays):
    {"text": "...", "thought": "...",
     "tool_calls": [{"name": "read_file", "arguments": {"path": "a.csv"}, "id": "optional"}],
     "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 0}}
or an error: {"error": "rate_limit" | "unavailable" | "timeout" | "context_window" | "bad_request" |
"auth", "message": "..."}; or a callable taking the ModelRequest and returning such a dict
(tests use it to look at what the model was sent).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from ..core.history import ToolCall
from ..core.usage import Price, TokenUsage
from ..errors import (
    ContextWindowError,
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelRateLimitError,
    ModelTimeoutError,
    ModelUnavailableError,
    ScriptExhaustedError,
)
from .base import ModelRequest, ModelResponse, StreamItem, TextDelta

Step = dict[str, Any] | Callable[[ModelRequest], dict[str, Any]]

_ERRORS: dict[str, type[ModelError]] = {
    "rate_limit": ModelRateLimitError,
    "unavailable": ModelUnavailableError,
    "timeout": ModelTimeoutError,
    "context_window": ContextWindowError,
    "bad_request": ModelBadRequestError,
    "auth": ModelAuthError,
}


class ScriptedModel:
    """Plays `steps` in order, one per model call."""

    def __init__(
        self,
        steps: list[Step],
        *,
        name: str = "scripted",
        price: Price | None = None,
        context_window: int | None = None,
        delay_s: float = 0.0,
        stream_delay_s: float = 0.0,
        vision: bool = True,
        response_schema: bool = False,
    ) -> None:
        self.name = name
        self.steps = list(steps)
        self.requests: list[ModelRequest] = []
        self._price = price
        self._context_window = context_window
        self._delay_s = delay_s
        self._stream_delay_s = stream_delay_s
        self._call_ids = 0
        self._vision = vision
        self._response_schema = response_schema

    @classmethod
    def from_file(cls, path: str | Path, **kwargs: Any) -> ScriptedModel:
        """Load steps from a JSON file: a list of steps, or {"steps": [...], "vision": bool,
        "delay_s": float, "stream_delay_s": float} ("vision": false plays a model that cannot
        see images; the delays, the seconds before each step and between streamed words, pace
        a demo so a person can read it, steer it and stop it in the live widget)."""
        source = Path(path)
        try:
            data = json.loads(_read_script(source).decode("utf-8"))
        except UnicodeDecodeError:
            raise ValueError(f"{source.name} is not UTF-8 text") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{source.name} is not JSON ({exc.msg} at line {exc.lineno})") from None
        except RecursionError:
            raise ValueError(f"{source.name}: nested too deeply to be a scripted model file") from None
        if isinstance(data, dict):
            if "steps" not in data:
                raise ValueError(f'{source.name}: an object needs a "steps" list')
            steps = data["steps"]
            if "vision" in data:
                if not isinstance(data["vision"], bool):
                    raise ValueError(f'{source.name}: "vision" must be true or false, got {data["vision"]!r}')
                kwargs.setdefault("vision", data["vision"])
            for key in ("delay_s", "stream_delay_s"):
                if key in data:
                    kwargs.setdefault(key, _seconds(source.name, key, data[key]))
        else:
            steps = data
        if not isinstance(steps, list):
            raise ValueError(f"{source.name}: a scripted model file holds a list of steps")
        for index, step in enumerate(steps, start=1):
            problem = step_problem(step)
            if problem:
                raise ValueError(f"{source.name}: step {index}: {problem}")
        kwargs.setdefault("name", f"scripted:{path}")
        return cls(steps, **kwargs)

    @property
    def remaining(self) -> int:
        return len(self.steps) - len(self.requests)

    def assert_complete(self) -> None:
        """Fail unless every scripted step was used."""
        if self.remaining:
            raise AssertionError(f"{self.name}: {self.remaining} scripted step(s) were never used")

    def price(self, model: str) -> Price | None:
        return self._price

    def context_window(self) -> int | None:
        return self._context_window

    def supports_vision(self) -> bool:
        """Scripted models see images unless told otherwise (`vision=False`)."""
        return self._vision

    def supports_response_schema(self) -> bool:
        """Whether to play a model with native structured output (`response_schema=True`):
        then a turn with a schema asks for the data in a final request of its own."""
        return self._response_schema

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        index = len(self.requests)
        if index >= len(self.steps):
            raise ScriptExhaustedError(f"{self.name}: asked for step {index + 1} but the script has {len(self.steps)}")
        self.requests.append(request.model_copy(deep=True))
        raw = self.steps[index]
        step = raw(request) if callable(raw) else raw
        if "error" in step:
            error_type = _ERRORS.get(step["error"], ModelError)
            raise error_type(self.name, str(step.get("message", step["error"])))
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        thought = step.get("thought", "")
        if thought:
            yield TextDelta(text=thought, thought=True)
        text = step.get("text", "")
        for piece in _pieces(text):
            yield TextDelta(text=piece)
            await asyncio.sleep(self._stream_delay_s)
        yield ModelResponse(
            text=text,
            thought=thought,
            tool_calls=[self._tool_call(call) for call in step.get("tool_calls", [])],
            usage=_usage(step.get("usage", {}), request, text),
            model=self.name,
        )

    def _tool_call(self, call: dict[str, Any]) -> ToolCall:
        self._call_ids += 1
        arguments = call.get("arguments", {})
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return ToolCall(id=call.get("id") or f"call_{self._call_ids}", name=call["name"], arguments=raw)


MAX_SCRIPT_BYTES = 10 * 1024 * 1024
"""A scripted model file is a few steps of JSON; anything larger is not one."""


def _read_script(source: Path) -> bytes:
    """The file's bytes: a regular file only, opened without blocking and read up to the cap.
    A FIFO would block the kernel for good on open or read, `/dev/zero` would fill its memory:
    a model name may come from a repository's config, so neither may get that far."""
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{source.name} is not a regular file (a pipe, device or folder); a script is a JSON file")
        if info.st_size > MAX_SCRIPT_BYTES:
            raise ValueError(f"{source.name} is {info.st_size:,} bytes, over the {MAX_SCRIPT_BYTES:,}-byte limit")
        os.set_blocking(fd, True)
        pieces: list[bytes] = []
        size = 0
        while size <= MAX_SCRIPT_BYTES and (piece := os.read(fd, 1 << 20)):
            pieces.append(piece)
            size += len(piece)
    finally:
        os.close(fd)
    if size > MAX_SCRIPT_BYTES:
        raise ValueError(f"{source.name} is over the {MAX_SCRIPT_BYTES:,}-byte limit")
    return b"".join(pieces)


STEP_KEYS = frozenset({"text", "thought", "tool_calls", "usage", "error", "message"})
USAGE_KEYS = frozenset({"prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens"})


def step_problem(step: Any) -> str | None:
    """What is wrong with one step read from a file (None: it plays), in a few words."""
    if not isinstance(step, dict):
        return f"expected an object, got {type(step).__name__}"
    unknown = sorted(set(step) - STEP_KEYS)
    if unknown:
        return f"unknown key {unknown[0]!r} (known: {', '.join(sorted(STEP_KEYS))})"
    for key in ("text", "thought", "error", "message"):
        if key in step and not isinstance(step[key], str):
            return f"{key!r} must be a string"
    if "error" in step and step["error"] not in _ERRORS:
        return f"unknown error {step['error']!r} (known: {', '.join(_ERRORS)})"
    calls = step.get("tool_calls", [])
    if not isinstance(calls, list):
        return "'tool_calls' must be a list"
    for number, call in enumerate(calls, start=1):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            return f'tool call {number} needs a "name" string'
        if not isinstance(call.get("arguments", {}), dict | str) or not isinstance(call.get("id", ""), str):
            return f'tool call {number}: "arguments" must be an object (or JSON text) and "id" a string'
    usage = step.get("usage", {})
    if not isinstance(usage, dict) or any(
        key not in USAGE_KEYS or type(value) is not int or value < 0 for key, value in usage.items()
    ):
        return f"'usage' must map {', '.join(sorted(USAGE_KEYS))} to whole numbers >= 0"
    return None


def _seconds(file: str, key: str, value: Any) -> float:
    """A pacing value from a script file: a number of seconds in [0, 10]."""
    if type(value) not in (int, float) or not 0 <= value <= 10:
        raise ValueError(f"{file}: {key!r} must be a number of seconds from 0 to 10")
    return float(value)


def _pieces(text: str) -> list[str]:
    """Split text the way a real stream would: a few words at a time."""
    return [piece for piece in re.findall(r"\S+\s*|\s+", text) if piece]


def _usage(given: dict[str, Any], request: ModelRequest, text: str) -> TokenUsage:
    """The step's usage, or a rough count (4 characters a token) so limits can be tested."""
    if given:
        return TokenUsage(
            input_tokens=given.get("prompt_tokens", 0),
            cached_tokens=given.get("cached_tokens", 0),
            cache_write_tokens=given.get("cache_write_tokens", 0),
            output_tokens=given.get("completion_tokens", 0),
        )
    prompt_chars = len(request.system) + sum(len(m.model_dump_json(exclude={"subagent"})) for m in request.messages)
    return TokenUsage(input_tokens=prompt_chars // 4, output_tokens=max(1, len(text) // 4))
