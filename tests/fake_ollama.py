"""A fake Ollama server (POST /api/chat, newline-delimited JSON) for wire tests.

Why it exists: an `ollama_chat/...` model goes through litellm's own Ollama path (its message
shape with `images`, tool calls whose arguments are objects, NDJSON chunks, `prompt_eval_count`
and `eval_count`), which the other fakes do not reach. Like a real Ollama it answers a model it
has not pulled with 404 `model "x" not found, try pulling it first`, and a message with an
unknown role with 400.

Script steps (a queue; each request takes one): ``{"text": "...", "tool_calls": [{"name": "f",
"arguments": {...}}], "usage": {"prompt_eval_count": .., "eval_count": ..}}``;
``{"fault": "status", "status": 500, "message": "..."}``; ``{"fault": "cut", "text": "Hel"}``
(the given text, then the connection is reset before `done`).
"""

from __future__ import annotations

import collections
import json
import threading
from typing import Any

from tests.fakeserver import RecordedRequest, _dumps, _Handler, _Server, split_text

Step = dict[str, Any]
_ROLES = {"system", "user", "assistant", "tool"}
_FAULTS = {"status", "cut"}


def _line(model: str, message: dict[str, Any], done: bool = False, **extra: Any) -> bytes:
    data = {"model": model, "created_at": "2026-01-01T00:00:00Z", "message": message, "done": done, **extra}
    return (_dumps(data) + "\n").encode()


class _OllamaHandler(_Handler):
    server: _OllamaServer  # type: ignore[assignment]

    def do_GET(self) -> None:
        self._send_json(404, {"error": "404 page not found"})

    def do_POST(self) -> None:
        body = self._read_body()
        if self.path != "/api/chat":
            self._send_json(404, {"error": "404 page not found"})
            return
        fake = self.server.fake
        headers = {name.lower(): value for name, value in self.headers.items()}
        fake.record(RecordedRequest("POST", self.path, headers, body))
        body = body if isinstance(body, dict) else {}
        model = str(body.get("model", ""))
        if model not in fake.models:
            self._send_json(404, {"error": f'model "{model}" not found, try pulling it first'})
            return
        for message in body.get("messages") or []:
            if message.get("role") not in _ROLES:
                fake.refusals.append(f"invalid role: {message.get('role')}")
                self._send_json(400, {"error": f"invalid role: {message.get('role')}"})
                return
        step = fake.take()
        if step is None:
            self._send_json(500, {"error": "fake server: script exhausted"})
        elif step.get("fault") == "status":
            self._send_json(int(step.get("status", 500)), {"error": step.get("message") or "fake server: injected"})
        elif step.get("fault") == "cut":
            self._start_stream()
            for piece in split_text(step.get("text", "")):
                self._write_chunk(_line(model, {"role": "assistant", "content": piece}))
            self.wfile.flush()
            self._abort_connection()
        else:
            self._send_events(self._answer_lines(step, model))

    @staticmethod
    def _answer_lines(step: Step, model: str) -> list[bytes]:
        lines = [_line(model, {"role": "assistant", "content": piece}) for piece in split_text(step.get("text", ""))]
        calls = [
            {"function": {"name": call["name"], "arguments": call.get("arguments", {})}}
            for call in step.get("tool_calls") or []
        ]
        if calls:
            lines.append(_line(model, {"role": "assistant", "content": "", "tool_calls": calls}))
        usage = step.get("usage") or {}
        lines.append(
            _line(
                model,
                {"role": "assistant", "content": ""},
                done=True,
                done_reason="stop",
                prompt_eval_count=int(usage.get("prompt_eval_count", 20)),
                eval_count=int(usage.get("eval_count", max(len(lines), 1))),
            )
        )
        return lines


class _OllamaServer(_Server):
    fake: FakeOllamaServer

    def __init__(self, address: tuple[str, int], fake: FakeOllamaServer) -> None:
        self.fake = fake
        self.owner = fake  # type: ignore[assignment]  # the base's handler reads owner.stopping only
        self.connections = set()
        self.connections_lock = threading.Lock()
        super(_Server, self).__init__(address, _OllamaHandler)


class FakeOllamaServer:
    """Ollama's chat API on 127.0.0.1 with the `models` it has "pulled", playing a script."""

    def __init__(self, models: tuple[str, ...] = ("llama3.1",)) -> None:
        self.models = set(models)
        self.refusals: list[str] = []
        self.stopping = threading.Event()
        self._steps: collections.deque[Step] = collections.deque()
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._httpd = _OllamaServer(("127.0.0.1", 0), self)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> FakeOllamaServer:
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
    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(json.dumps(request.body)) for request in self._requests]
