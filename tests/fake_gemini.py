"""A fake Gemini API server (`models/{model}:streamGenerateContent?alt=sse`) for wire tests.

Why it exists: a `gemini/...` model goes through litellm's own Gemini path (contents and
function declarations, SSE chunks, usage metadata, safety finishes, Google's error bodies),
which neither the OpenAI nor the Anthropic fake reaches. Like the real service it checks each
request before answering: an API key in `x-goog-api-key`; `contents` alternate between `user`
and `model` and start with the user; a turn with function calls is answered by the next turn
with exactly as many function responses, of the same names; a function call this server sent
with a `thoughtSignature` comes back with that signature. A wrong request gets Google's 400
body (`INVALID_ARGUMENT`).

Script steps (a queue; each request takes one):

- answer: ``{"text": "...", "thought": "...", "tool_calls": [{"name": "f", "arguments": {...},
  "signature": "optional thoughtSignature"}], "usage": {"promptTokenCount": .., "candidatesTokenCount":
  .., "cachedContentTokenCount": .., "thoughtsTokenCount": ..}}``
- ``{"fault": "safety"}``: the answer stops with finishReason SAFETY and no content (a
  blocked response); ``{"fault": "blocked_prompt"}``: promptFeedback.blockReason SAFETY and no
  candidates (a blocked prompt).
- ``{"fault": "status", "status": 429|503|400, "message": "..."}``: Google's error body.
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Iterator
from typing import Any

from tests.fakeserver import RecordedRequest, _dumps, _Handler, _Server, split_text

Step = dict[str, Any]
_FAULTS = {"status", "safety", "blocked_prompt"}
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


class RequestError(Exception):
    """What the real API would refuse, with its message."""


def _part(part: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A part's field by its proto JSON name in either spelling (litellm sends snake_case)."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
    value = part.get(name, part.get(snake))
    return value if isinstance(value, dict) else None


def call_key(name: Any, arguments: Any) -> str:
    """A function call's identity: its name and canonical arguments."""
    return json.dumps([name, arguments], sort_keys=True)


def validate(body: dict[str, Any], issued: dict[str, str]) -> None:
    """Raise RequestError with Google's wording for a request it would refuse."""
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        raise RequestError("* GenerateContentRequest.contents: contents is not specified")
    previous = ""
    calls: list[str] = []
    for index, content in enumerate(contents):
        role = content.get("role")
        parts = content.get("parts") or []
        if not parts:
            raise RequestError(f"* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty.")
        if index == 0 and role != "user":
            raise RequestError("Please ensure that the first turn is a user turn.")
        if role == previous:
            raise RequestError("Please ensure that multiturn requests alternate between user and model.")
        responses = [str(r.get("name")) for r in (_part(part, "functionResponse") for part in parts) if r is not None]
        if calls and sorted(responses) != sorted(calls):
            raise RequestError(
                "Please ensure that the number of function response parts is equal to the number of function "
                "call parts of the function call turn."
            )
        if responses and not calls:
            raise RequestError(
                "Please ensure that function response turn comes immediately after a function call turn."
            )
        made = [c.get("name") for c in (_part(part, "functionCall") for part in parts) if c is not None]
        calls = [str(name) for name in made] if role == "model" else []
        for position, part in enumerate(parts):
            call = _part(part, "functionCall")
            expected = issued.get(call_key(call.get("name"), call.get("args", {}))) if call is not None else None
            signature = part.get("thoughtSignature", part.get("thought_signature"))
            if expected is not None and signature != expected:
                raise RequestError(
                    f"* contents[{index}].parts[{position}]: Function call is missing a thought_signature "
                    "or carries one that is not valid."
                )
        previous = role
    if calls:
        raise RequestError("Please ensure that function call turn is followed by a function response turn.")


def _chunk(parts: list[dict[str, Any]], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    data: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-fake"}
    if usage is not None:
        data["usageMetadata"] = usage
    return f"data: {_dumps(data)}\r\n\r\n".encode()


def stream_events(step: Step) -> Iterator[bytes]:
    """The SSE chunks of one answer, as streamGenerateContent sends them."""
    pieces = 0
    for piece in split_text(step.get("thought", "")):
        pieces += 1
        yield _chunk([{"text": piece, "thought": True}])
    for piece in split_text(step.get("text", "")):
        pieces += 1
        yield _chunk([{"text": piece}])
    calls = []
    for call in step.get("tool_calls") or []:
        part: dict[str, Any] = {"functionCall": {"name": call["name"], "args": call.get("arguments", {})}}
        if call.get("signature"):
            part["thoughtSignature"] = call["signature"]
        calls.append(part)
    given = step.get("usage") or {}
    usage = {
        "promptTokenCount": int(given.get("promptTokenCount", 10)),
        "candidatesTokenCount": int(given.get("candidatesTokenCount", max(pieces, 1))),
    }
    for key in ("cachedContentTokenCount", "thoughtsTokenCount"):
        if key in given:
            usage[key] = int(given[key])
    usage["totalTokenCount"] = sum(usage.values()) - usage.get("cachedContentTokenCount", 0)
    yield _chunk(calls or [{"text": ""}], "STOP", usage)


class _GeminiHandler(_Handler):
    server: _GeminiServer  # type: ignore[assignment]

    def do_GET(self) -> None:
        self._send_json(404, self._error(404, f"fake server: no route GET {self.path}"))

    def do_POST(self) -> None:
        body = self._read_body()
        path = self.path.split("?", 1)[0]
        if not path.endswith(":streamGenerateContent"):
            self._send_json(404, self._error(404, f"fake server: no route POST {self.path}"))
            return
        fake = self.server.fake
        headers = {name.lower(): value for name, value in self.headers.items()}
        fake.record(RecordedRequest("POST", self.path, headers, body))
        if not headers.get("x-goog-api-key"):
            self._send_json(403, self._error(403, "Method doesn't allow unregistered callers."))
            return
        try:
            validate(body if isinstance(body, dict) else {}, fake.issued)
        except RequestError as error:
            fake.refusals.append(str(error))
            self._send_json(400, self._error(400, str(error)))
            return
        step = fake.take()
        if step is None:
            self._send_json(500, self._error(500, "fake server: script exhausted"))
        elif step.get("fault") == "status":
            status = int(step.get("status", 500))
            self._send_json(status, self._error(status, step.get("message") or f"fake server: injected HTTP {status}"))
        elif step.get("fault") == "safety":
            usage = {"promptTokenCount": 10, "totalTokenCount": 10}
            self._send_events([_chunk([], "SAFETY", usage)])
        elif step.get("fault") == "blocked_prompt":
            data = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 10}}
            self._send_events([f"data: {_dumps(data)}\r\n\r\n".encode()])
        else:
            for call in step.get("tool_calls") or []:
                if call.get("signature"):
                    fake.issued[call_key(call["name"], call.get("arguments", {}))] = call["signature"]
            self._send_events(stream_events(step))

    @staticmethod
    def _error(status: int, message: str) -> dict[str, Any]:
        return {"error": {"code": status, "message": message, "status": _STATUS_NAMES.get(status, "UNKNOWN")}}


class _GeminiServer(_Server):
    fake: FakeGeminiServer

    def __init__(self, address: tuple[str, int], fake: FakeGeminiServer) -> None:
        self.fake = fake
        self.owner = fake  # type: ignore[assignment]  # the base's handler reads owner.stopping only
        self.connections = set()
        self.connections_lock = threading.Lock()
        super(_Server, self).__init__(address, _GeminiHandler)


class FakeGeminiServer:
    """The Gemini API on 127.0.0.1, playing a script (see the module doc)."""

    def __init__(self) -> None:
        self.refusals: list[str] = []
        self.issued: dict[str, str] = {}
        """The thoughtSignatures this server handed out, by call_key."""
        self.stopping = threading.Event()
        self._steps: collections.deque[Step] = collections.deque()
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._httpd = _GeminiServer(("127.0.0.1", 0), self)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The api_base to give litellm (it appends /models/{model}:streamGenerateContent)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> FakeGeminiServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
        self._httpd.close_connections()
        self._httpd.server_close()

    def enqueue(self, *steps: Step) -> None:
        for step in steps:
            if step.get("fault") is not None and step["fault"] not in _FAULTS:
                raise ValueError(f"unknown fault {step['fault']!r} (known: {', '.join(sorted(_FAULTS))})")
        with self._lock:
            self._steps.extend(steps)

    def take(self) -> Step | None:
        with self._lock:
            return self._steps.popleft() if self._steps else None

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(request.body)) for request in self.requests]
