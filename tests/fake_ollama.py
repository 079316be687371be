"""A fake Ollama server for wire tests: `POST /api/chat` (streamed NDJSON or one JSON object)
and `GET /api/tags`.

Why it exists: `ollama_chat/<model>` goes through litellm's Ollama code, with its own body
(`messages` with `images` and `tool_calls` whose arguments are objects, `options`), its own
stream (one JSON object a line, `done`/`done_reason`, `prompt_eval_count`/`eval_count`) and
its own errors (`{"error": "..."}` with the HTTP status). Every request is checked first: the
model is named and pulled, roles are system/user/assistant/tool, a tool message follows an
assistant message with tool calls, call arguments are objects, tools only go to a model that
supports them, images only to one that sees.

Like Ollama itself, a prompt longer than the context (`num_ctx`, 2048 unless the request's
options say otherwise) is not refused: it is cut to fit, and `prompt_eval_count` says so.

Step format (each chat request takes one; an empty script answers 500):

- answer: ``{"text": "...", "thinking": "...", "tool_calls": [{"name": "f", "arguments": {...}}],
  "usage": {"prompt": 10, "eval": 5}, "done_reason": "stop", "hold": "NAME"}`` (usage keys
  may also be Ollama's own, `prompt_eval_count` and `eval_count`).
- ``{"fault": "status", "status": 503, "message": "..."}``: an error body with that status.
- ``{"fault": "reset_mid_stream", "text": "...", "tool_calls": [...]}`` (or ``"cut"``): what is
  given, then the connection is reset before the ``done`` line.
- ``{"fault": "stream_error", "text": "...", "message": "..."}``: after the text, an
  ``{"error": ...}`` line in the 200 stream, as Ollama reports a failure mid-answer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from tests.fake_native_server import NativeFakeServer, NativeHandler, Step, dumps
from tests.fakeserver import split_text

_ROLES = {"system", "user", "assistant", "tool"}
_FAULTS = {"status", "reset_mid_stream", "cut", "stream_error"}
_DEFAULT_MESSAGES = {
    503: "server busy, please try again.  maximum pending requests exceeded",
    500: "llama runner process has terminated: exit status 2",
}
DEFAULT_NUM_CTX = 2048
IMAGE_TOKENS = 576


class OllamaError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _message_tokens(message: dict[str, Any]) -> int:
    text = str(message.get("content") or "") + dumps(message.get("tool_calls") or [])
    return len(text) // 4 + 4 + IMAGE_TOKENS * len(message.get("images") or [])


def check_request(body: Any, models: dict[str, set[str]] | None) -> None:
    """Raise OllamaError for a request Ollama refuses (see the module doc)."""
    if not isinstance(body, dict):
        raise OllamaError(400, "invalid request body")
    model = body.get("model")
    if not model:
        raise OllamaError(400, "model is required")
    if models is not None and model not in models:
        raise OllamaError(404, f'model "{model}" not found, try pulling it first')
    capabilities = models.get(model, set()) if models is not None else {"tools", "vision"}
    if body.get("tools") and "tools" not in capabilities:
        raise OllamaError(400, f"registry.ollama.ai/library/{model} does not support tools")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise OllamaError(400, "messages must be a list")
    open_calls = False  # the last non-tool message was an assistant message with tool calls
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in _ROLES:
            raise OllamaError(400, f"invalid role {role!r} in message {index}: use system, user, assistant or tool")
        if message.get("images"):
            if "vision" not in capabilities:
                raise OllamaError(500, f"{model} does not support images")
            if not all(isinstance(image, str) and image for image in message["images"]):
                raise OllamaError(400, "illegal base64 data in images")
        for call in message.get("tool_calls") or []:
            arguments = (call.get("function") or {}).get("arguments") if isinstance(call, dict) else None
            if not isinstance(arguments, dict):
                raise OllamaError(
                    400,
                    "json: cannot unmarshal string into Go struct field ToolCallFunction.messages.tool_calls."
                    "function.arguments of type api.ToolCallFunctionArguments",
                )
        if role == "tool":
            if not open_calls:
                raise OllamaError(
                    400, f"message {index}: a tool message must follow an assistant message with tool_calls"
                )
            continue
        open_calls = role == "assistant" and bool(message.get("tool_calls"))


def _chunk(model: str, message: dict[str, Any], **extra: Any) -> bytes:
    line = {
        "model": model,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
        "message": {"role": "assistant", "content": "", **message},
        "done": False,
    }
    line.update(extra)
    return (dumps(line) + "\n").encode()


def answer_lines(step: Step, model: str) -> Iterator[bytes]:
    """The NDJSON lines of an answer before its `done` line."""
    for piece in split_text(step.get("thinking", "")):
        yield _chunk(model, {"thinking": piece})
    for piece in split_text(step.get("text", "")):
        yield _chunk(model, {"content": piece})
    calls = step.get("tool_calls") or []
    if calls:
        tool_calls = [
            {"function": {"index": index, "name": call["name"], "arguments": call.get("arguments", {})}}
            for index, call in enumerate(calls)
        ]
        yield _chunk(model, {"tool_calls": tool_calls})


class _OllamaHandler(NativeHandler):
    server: Any

    def answer(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any, raw: bytes
    ) -> None:
        owner: FakeOllamaServer = self.server.owner
        if method == "GET" and path == "/api/tags":
            names = sorted(owner.models or {})
            self.send_json(200, {"models": [{"name": name, "model": name} for name in names]})
            return
        if method == "POST" and path == "/api/show":
            self._show(owner, body)
            return
        if method != "POST" or path != "/api/chat":
            self.send_json(404, {"error": f"fake Ollama: no route {method} {path}"})
            return
        try:
            check_request(body, owner.models)
        except OllamaError as error:
            if error.code != 404:
                owner.refusals.append(error.message)
            self.send_json(error.code, {"error": error.message})
            return
        step = owner.take()
        if step is None:
            self.send_json(500, {"error": "fake Ollama: script exhausted"})
            return
        self._play(step, body)

    def _show(self, owner: FakeOllamaServer, body: Any) -> None:
        """The model's details as Ollama gives them: capabilities, parameters, model_info."""
        name = str((body.get("model") or body.get("name")) if isinstance(body, dict) else "")
        if owner.models is not None and name not in owner.models:
            self.send_json(404, {"error": f"model '{name}' not found"})
            return
        capabilities = sorted(owner.models[name]) if owner.models is not None else ["completion", "tools", "vision"]
        answer: dict[str, Any] = {
            "modelfile": f"FROM {name}",
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": "fake"},
            "model_info": {"general.architecture": "fake", "fake.context_length": owner.context_length},
            "capabilities": capabilities,
        }
        if owner.num_ctx is not None:
            answer["parameters"] = (
                f'num_ctx                        {owner.num_ctx}\nstop                           "<|im_end|>"'
            )
        self.send_json(200, answer)

    def _play(self, step: Step, body: dict[str, Any]) -> None:
        model = str(body["model"])
        fault = step.get("fault")
        if fault == "status":
            code = int(step.get("status", 500))
            text = step.get("message") or _DEFAULT_MESSAGES.get(code, f"fake Ollama: injected HTTP {code}")
            self.send_json(code, {"error": text})
            return
        lines = list(answer_lines(step, model))
        if fault in ("reset_mid_stream", "cut"):
            self.stream("application/x-ndjson", lines, step.get("hold"), end=False)
            self.abort_connection()
            return
        if fault == "stream_error":
            lines.append(
                (
                    dumps({"error": step.get("message", "an error was encountered while running the model")}) + "\n"
                ).encode()
            )
            self.stream("application/x-ndjson", lines, step.get("hold"))
            return
        num_ctx = int((body.get("options") or {}).get("num_ctx") or self.server.owner.num_ctx or DEFAULT_NUM_CTX)
        estimate = min(
            sum(_message_tokens(m) for m in body["messages"]) + len(dumps(body.get("tools") or [])) // 4, num_ctx
        )
        given = step.get("usage") or {}
        calls = step.get("tool_calls") or []
        done = {
            "done_reason": step.get("done_reason", "stop"),
            "done": True,
            "total_duration": 1_000_000,
            "load_duration": 100_000,
            "prompt_eval_count": int(given.get("prompt", given.get("prompt_eval_count", estimate))),
            "prompt_eval_duration": 200_000,
            "eval_count": int(given.get("eval", given.get("eval_count", max(len(lines), 1)))),
            "eval_duration": 700_000,
        }
        if body.get("stream", True):
            lines.append(_chunk(model, {}, **done))
            self.stream("application/x-ndjson", lines, step.get("hold"))
            return
        message: dict[str, Any] = {"role": "assistant", "content": step.get("text", "")}
        if step.get("thinking"):
            message["thinking"] = step["thinking"]
        if calls:
            message["tool_calls"] = [
                {"function": {"name": c["name"], "arguments": c.get("arguments", {})}} for c in calls
            ]
        self.send_json(200, {"model": model, "created_at": "2026-01-01T00:00:00Z", "message": message, **done})


class FakeOllamaServer(NativeFakeServer):
    """The fake Ollama on 127.0.0.1; `base_url` is the api_base to give litellm.

    `models`: the pulled models and what each can do ({"tools", "vision"}), or just their
    names (then each has tools only); None accepts any name with both. `/api/show` reports `num_ctx` in the model's parameters when it is set
    (the context the server runs it with, and the one a longer prompt is cut to), and
    `context_length` as the model's trained length.
    """

    handler = _OllamaHandler

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        models: dict[str, set[str]] | tuple[str, ...] | None = ("llama3.1",),
        num_ctx: int | None = None,
        context_length: int = 40960,
    ) -> None:
        super().__init__(host, port)
        self.models = models if models is None or isinstance(models, dict) else dict.fromkeys(models, {"tools"})
        self.refusals: list[str] = []
        """The messages of the requests refused (a model not pulled aside), oldest first."""
        self.num_ctx = num_ctx
        self.context_length = context_length

    @property
    def base_url(self) -> str:
        return self.root_url

    def check_step(self, step: Step) -> Step:
        step = super().check_step(step)
        fault = step.get("fault")
        if fault is not None and fault not in _FAULTS:
            raise ValueError(f"unknown fault {fault!r} (known: {', '.join(sorted(_FAULTS))})")
        for call in step.get("tool_calls") or []:
            if "name" not in call or not isinstance(call.get("arguments", {}), dict):
                raise ValueError(f"an Ollama tool call needs a name and an arguments object: {call!r}")
        return step

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The bodies of the chat requests received, oldest first."""
        return self.chat_bodies()

    def chat_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the chat requests received, oldest first."""
        return [r.body for r in self.requests if r.path == "/api/chat"]
