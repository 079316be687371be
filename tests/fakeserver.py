"""A fake OpenAI-compatible chat-completions server for wire tests and benchmarks.

Why it exists: the litellm adapter must be tested through its real HTTP path (request shape,
SSE parsing, retries, error mapping) without ever reaching a real provider. The server plays a
*script*, a queue of steps (their format: `Script`); each POST /v1/chat/completions consumes
one. Control in process (`FakeOpenAIServer`) or over HTTP from another process.

Run alone: ``python tests/fakeserver.py --port 0 [--script FILE] [--repeat-script FILE]
[--loop] [--no-record]``; prints the base URL on stdout once listening.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import re
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Step = dict[str, Any]

_WORD = re.compile(r"\s*\S+\s*|\s+")
_ARGUMENT_PIECE = 8
"""Characters per tool-argument fragment: small enough that every call arrives in pieces."""
RESET_WAIT_S = 10.0
"""How long `reset` waits for answers still being written (a released stall ends at once)."""
HOLD_LIMIT_S = 60.0
"""How long a held stream waits for its release at most (a test that forgot it fails, not hangs)."""


@dataclass
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    """The parsed JSON body (None when there was none or it was not JSON)."""
    received_at: float = field(default_factory=time.monotonic)

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "headers": self.headers, "body": self.body}


# -- rendering ------------------------------------------------------------------------------


def split_text(text: str) -> list[str]:
    """Word-sized pieces (a word with its surrounding spaces), like a tokenizer would stream."""
    return _WORD.findall(text) or ([text] if text else [])


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class RequestLog:
    """The requests a fake server received, oldest first; a test waits on it for the state it
    needs (a request arriving) rather than for time."""

    def __init__(self) -> None:
        self._requests: list[RecordedRequest] = []
        self._changed = threading.Condition()

    def add(self, request: RecordedRequest) -> None:
        with self._changed:
            self._requests.append(request)
            self._changed.notify_all()

    def clear(self) -> None:
        with self._changed:
            self._requests.clear()
            self._changed.notify_all()

    def all(self) -> list[RecordedRequest]:
        with self._changed:
            return list(self._requests)

    def wait_for(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `count` requests arrived; raise TimeoutError otherwise."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._requests) >= count, timeout):
                raise TimeoutError(f"fake server got {len(self._requests)} requests, wanted {count}")
            return list(self._requests)


class _ChunkWriter:
    """Builds the SSE events of one streamed completion.

    Every chunk shares id/created/model, so the common prefix is encoded once and each event
    is a string concatenation plus one small ``json.dumps`` of the delta — cheap enough that a
    benchmark measures the client, not this server.
    """

    def __init__(self, model: str) -> None:
        self.completion_id = f"chatcmpl-fake{next(_ids)}"
        self._prefix = (
            'data: {"id":' + _dumps(self.completion_id) + ',"object":"chat.completion.chunk",'
            '"created":' + str(int(time.time())) + ',"model":' + _dumps(model) + ","
            '"system_fingerprint":"fp_fake","choices":'
        )

    def choice(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        finish = "null" if finish_reason is None else _dumps(finish_reason)
        return (
            self._prefix
            + '[{"index":0,"delta":'
            + _dumps(delta)
            + ',"logprobs":null,"finish_reason":'
            + finish
            + "}]}\n\n"
        ).encode()

    def usage(self, usage: dict[str, Any]) -> bytes:
        return (self._prefix + '[],"usage":' + _dumps(usage) + "}\n\n").encode()


_ids = iter(range(1, 1 << 62))


def _tool_arguments(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else _dumps(arguments)


def _tool_call_id(call: dict[str, Any], index: int) -> str:
    return str(call.get("id") or f"call_{index}")


def usage_payload(step: Step, pieces: int) -> dict[str, Any]:
    """The OpenAI usage object for a step (defaults: 10 prompt tokens, one per streamed piece)."""
    given = step.get("usage") or {}
    prompt = int(given.get("prompt_tokens", 10))
    completion = int(given.get("completion_tokens", max(pieces, 1)))
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": int(given.get("cached_tokens", 0))},
        "completion_tokens_details": {"reasoning_tokens": int(given.get("reasoning_tokens", 0))},
    }
    if "cache_creation_input_tokens" in given:
        usage["cache_creation_input_tokens"] = int(given["cache_creation_input_tokens"])
    return usage


def step_text(step: Step) -> str:
    """A step's answer text: its `text`, or its `json` value written as JSON (the answer to a
    request with `response_format`)."""
    if "json" in step:
        return json.dumps(step["json"])
    return str(step.get("text", ""))


# -- response_format, checked as OpenAI checks it ----------------------------------------------

_SCHEMA_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")


def response_format_problem(request: dict[str, Any]) -> dict[str, Any] | None:
    """OpenAI's 400 error object for a `response_format` it would refuse, or None. The checks
    and their wording are the real service's: the format type, the json_schema name (pattern,
    64 characters), a root that is an object, and in strict mode every object closed with every
    property required."""
    shape = request.get("response_format")
    if shape is None:
        return None
    kind = shape.get("type") if isinstance(shape, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        message = f"Invalid value: {kind!r}. Supported values are: 'json_object', 'json_schema', and 'text'."
        return _invalid(message, "response_format.type", "invalid_value")
    if kind != "json_schema":
        return None
    spec = shape.get("json_schema")
    if not isinstance(spec, dict):
        return _invalid(
            "Missing required parameter: 'response_format.json_schema'.",
            "response_format.json_schema",
            "missing_required_parameter",
        )
    name = spec.get("name")
    if not isinstance(name, str):
        return _invalid(
            "Missing required parameter: 'response_format.json_schema.name'.",
            "response_format.json_schema.name",
            "missing_required_parameter",
        )
    if not _SCHEMA_NAME.match(name):
        message = (
            "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
        return _invalid(message, "response_format.json_schema.name", "invalid_value")
    if len(name) > 64:
        message = (
            "Invalid 'response_format.json_schema.name': string too long. Expected a string with maximum "
            f"length 64, but got a string with length {len(name)} instead."
        )
        return _invalid(message, "response_format.json_schema.name", "string_above_max_length")
    schema = spec.get("schema", {})
    if not isinstance(schema, dict) or schema.get("type") != "object":
        got = schema.get("type") if isinstance(schema, dict) else None
        message = (
            f"Invalid schema for response_format '{name}': schema must be a JSON Schema of 'type: \"object\"', "
            f"got 'type: \"{got}\"'."
        )
        return _invalid(message, "response_format", "invalid_json_schema")
    if spec.get("strict"):
        problem = _strict_problem(schema, ())
        if problem is not None:
            return _invalid(
                f"Invalid schema for response_format '{name}': {problem}", "response_format", "invalid_json_schema"
            )
    return None


def _strict_problem(schema: Any, context: tuple[str, ...]) -> str | None:
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object":
        where = f"In context={context!r}, "
        if schema.get("additionalProperties") is not False:
            return where + "'additionalProperties' is required to be supplied and to be false."
        properties = schema.get("properties") or {}
        missing = [key for key in properties if key not in (schema.get("required") or [])]
        if missing:
            return (
                where + "'required' is required to be supplied and to be an array including every key in "
                f"properties. Missing '{missing[0]}'."
            )
        for key, value in properties.items():
            problem = _strict_problem(value, (*context, "properties", key))
            if problem is not None:
                return problem
    if "items" in schema:
        return _strict_problem(schema["items"], (*context, "items"))
    return None


def _invalid(message: str, param: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def stream_events(step: Step, model: str, include_usage: bool) -> Iterator[bytes]:
    """The SSE events of a normal answer, in the order OpenAI sends them."""
    writer = _ChunkWriter(step.get("model") or model)
    yield writer.choice({"role": "assistant", "content": "", "refusal": None})
    pieces = 0
    for piece in split_text(step.get("reasoning", "")):
        pieces += 1
        yield writer.choice({"reasoning_content": piece})
    for piece in step.get("chunks") or split_text(step_text(step)):
        pieces += 1
        yield writer.choice({"content": piece})
    calls = step.get("tool_calls") or []
    for index, call in enumerate(calls):
        head = {
            "index": index,
            "id": _tool_call_id(call, index),
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        yield writer.choice({"tool_calls": [head]})
        arguments = _tool_arguments(call)
        for start in range(0, len(arguments), _ARGUMENT_PIECE):
            pieces += 1
            fragment = {"index": index, "function": {"arguments": arguments[start : start + _ARGUMENT_PIECE]}}
            yield writer.choice({"tool_calls": [fragment]})
    yield writer.choice({}, "tool_calls" if calls else "stop")
    if include_usage:
        yield writer.usage(usage_payload(step, pieces))
    yield b"data: [DONE]\n\n"


def completion_body(step: Step, model: str) -> dict[str, Any]:
    """A non-streamed chat.completion object for a step."""
    calls = step.get("tool_calls") or []
    message: dict[str, Any] = {"role": "assistant", "content": step_text(step) or None}
    if step.get("reasoning"):
        message["reasoning_content"] = step["reasoning"]
    if calls:
        message["tool_calls"] = [
            {
                "id": _tool_call_id(call, index),
                "type": "function",
                "function": {"name": call["name"], "arguments": _tool_arguments(call)},
            }
            for index, call in enumerate(calls)
        ]
    return {
        "id": f"chatcmpl-fake{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": step.get("model") or model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": usage_payload(step, len(split_text(step_text(step)))),
    }


def error_body(step: Step) -> dict[str, Any]:
    """An OpenAI-style error object for a status fault."""
    status = int(step.get("status", 500))
    default_type = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_error",
    }.get(status, "server_error")
    message = step.get("message") or f"fake server: injected HTTP {status}"
    return {
        "error": {"message": message, "type": step.get("type", default_type), "param": None, "code": step.get("code")}
    }


# -- the script -------------------------------------------------------------------------------


class Script:
    """A thread-safe queue of steps; in loop mode it cycles through a fixed list forever.

    Step format (a JSON object):

    - answer: ``{"text": "...", "reasoning": "...", "tool_calls": [{"name": "f", "arguments":
      {...} or "raw json", "id": "call_1"}], "usage": {"prompt_tokens": 10, "completion_tokens":
      5, "cached_tokens": 2, "cache_creation_input_tokens": 1, "reasoning_tokens": 0},
      "model": "name in chunks", "chunks": ["explicit", " text", " pieces"]}`` — every key is
      optional. ``"json": VALUE`` answers with VALUE written as JSON (the text a request with
      ``response_format`` gets). A ``response_format`` OpenAI would refuse gets its 400 error
      (``response_format_problem``) and leaves the script as it is. ``"delay_s": 0.05`` waits that long after each streamed event (a slow model).
      ``"hold": "NAME"`` pauses the stream after its first piece (text or tool call) until
      ``release("NAME")``: a test does what must happen mid-answer (a steer, a click) and then
      lets it finish, instead of hoping a delay is long enough (a stream never released goes on
      after HOLD_LIMIT_S).
      Text is streamed in word-sized deltas (or as ``chunks``), tool calls as OpenAI
      does: index/id/name first, then argument fragments; then the finish reason, then a usage
      chunk with empty ``choices`` when ``stream_options.include_usage`` is set, then ``[DONE]``.
    - ``{"fault": "status", "status": 429, "retry_after": 0.1, "message": "...", "code": "..."}``:
      an HTTP error with an OpenAI-style error body (and a ``Retry-After`` header when given).
    - ``{"fault": "reset_mid_stream", "text": "Hel"}``: the role chunk and the given text (none by
      default), then the socket is closed abruptly (RST) without finishing the chunked body.
    - ``{"fault": "stall", "seconds": 5}``: nothing is sent for ``seconds``; with ``"text"`` the
      text is streamed first and the stall happens mid-stream; with ``"started": true`` (and no
      text) only the headers and the role chunk come first, a stream that began but shows nothing.
      The connection is then closed.
    - ``{"fault": "malformed"}``: a normal start, then an SSE data line that is not JSON.

    An empty script answers HTTP 500 "fake server: script exhausted" so tests fail loudly; in loop
    mode the script replays forever instead (for benchmarks).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._steps: collections.deque[Step] = collections.deque()
        self._loop: list[Step] = []
        self._loop_index = 0

    def append(self, steps: Iterable[Step]) -> None:
        checked = [_check_step(step) for step in steps]
        with self._lock:
            self._steps.extend(checked)

    def set_loop(self, steps: Iterable[Step]) -> None:
        checked = [_check_step(step) for step in steps]
        with self._lock:
            self._loop = checked
            self._loop_index = 0

    def clear(self) -> None:
        with self._lock:
            self._steps.clear()
            self._loop = []
            self._loop_index = 0

    def take(self) -> tuple[Step | None, bool]:
        """The next step, and whether it came from the loop (its rendering may be reused)."""
        with self._lock:
            if self._steps:
                return self._steps.popleft(), False
            if self._loop:
                step = self._loop[self._loop_index % len(self._loop)]
                self._loop_index += 1
                return step, True
            return None, False

    def __len__(self) -> int:
        with self._lock:
            return len(self._steps)


_FAULTS = {"status", "reset_mid_stream", "stall", "malformed"}


def _check_step(step: Any) -> Step:
    """Reject a mistyped step when it is enqueued, not when a request happens to reach it."""
    if not isinstance(step, dict):
        raise ValueError(f"a script step must be a JSON object, got {step!r}")
    fault = step.get("fault")
    if fault is not None and fault not in _FAULTS:
        raise ValueError(f"unknown fault {fault!r} (known: {', '.join(sorted(_FAULTS))})")
    for call in step.get("tool_calls") or []:
        if "name" not in call:
            raise ValueError(f"a tool call needs a name: {call!r}")
    if "hold" in step and not isinstance(step["hold"], str):
        raise ValueError(f"hold names the release to wait for (a string), got {step['hold']!r}")
    return step


# -- HTTP -----------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real provider; streams use chunked encoding
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silent: tests read recorded requests, not a log on stderr."""

    def setup(self) -> None:
        super().setup()
        # Many small SSE writes: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms stalls.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # routing

    def do_GET(self) -> None:
        if self.path == "/_control/requests":
            self._send_json(200, [request.to_json() for request in self.server.owner.requests])
        else:
            self._send_json(404, {"error": {"message": f"fake server: no route GET {self.path}"}})

    def do_POST(self) -> None:
        body = self._read_body()
        if self.path == "/_control/script":
            self._control_script(body)
        elif self.path == "/_control/reset":
            self.server.owner.reset()
            self._send_json(200, {"ok": True})
        elif self.path == "/_control/release" and isinstance(body, dict) and isinstance(body.get("name"), str):
            self.server.owner.release(body["name"])
            self._send_json(200, {"ok": True})
        elif self.path.rstrip("/").endswith("/chat/completions"):
            headers = {name.lower(): value for name, value in self.headers.items()}
            with self.server.owner.answering():
                self.server.owner.record(RecordedRequest("POST", self.path, headers, body))
                self._answer(body if isinstance(body, dict) else {})
        else:
            self._send_json(404, {"error": {"message": f"fake server: no route POST {self.path}"}})

    def _control_script(self, body: Any) -> None:
        steps = body if isinstance(body, list) else [body]
        try:
            self.server.owner.enqueue(*steps)
        except ValueError as error:
            self._send_json(400, {"error": {"message": str(error)}})
            return
        self._send_json(200, {"ok": True, "pending": len(self.server.owner.script)})

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return None

    # answers

    def _answer(self, request: dict[str, Any]) -> None:
        refused = response_format_problem(request)
        if refused is not None:  # refused before any answer: the script's next step stays
            self._send_json(400, refused)
            return
        step, looped = self.server.owner.script.take()
        if step is None:
            self._send_json(500, {"error": {"message": "fake server: script exhausted", "type": "server_error"}})
            return
        model = str(request.get("model", "fake-model"))
        stream = bool(request.get("stream"))
        include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
        fault = step.get("fault")
        if fault == "status":
            self._send_status_fault(step)
        elif fault == "reset_mid_stream":
            self._send_reset(step, model)
        elif fault == "stall":
            self._send_stall(step, model)
        elif fault == "malformed":
            self._send_malformed(model)
        elif stream:
            events = (
                self.server.owner.rendered(step, model, include_usage)
                if looped
                else stream_events(step, model, include_usage)
            )
            self._send_events(events, float(step.get("delay_s", 0)), step.get("hold"))
        else:
            self._send_json(200, completion_body(step, model))

    def _send_status_fault(self, step: Step) -> None:
        headers = {}
        if step.get("retry_after") is not None:
            headers["Retry-After"] = str(step["retry_after"])
        self._send_json(int(step.get("status", 500)), error_body(step), headers)

    def _send_reset(self, step: Step, model: str) -> None:
        writer = _ChunkWriter(model)
        self._start_stream()
        self._write_chunk(writer.choice({"role": "assistant", "content": ""}))
        for piece in split_text(step.get("text", "")):
            self._write_chunk(writer.choice({"content": piece}))
        self._abort_connection()

    def _send_stall(self, step: Step, model: str) -> None:
        seconds = float(step.get("seconds", 5))
        if step.get("text") or step.get("started"):
            writer = _ChunkWriter(model)
            self._start_stream()
            self._write_chunk(writer.choice({"role": "assistant", "content": ""}))
            for piece in split_text(step.get("text", "")):
                self._write_chunk(writer.choice({"content": piece}))
        # Wait on the release event, so neither stopping nor resetting the server waits for a
        # stall to end: a stalled stream of a finished test must not linger into the next one.
        self.server.owner.stall_release.wait(seconds)
        self._abort_connection()

    def _send_malformed(self, model: str) -> None:
        writer = _ChunkWriter(model)
        self._start_stream()
        self._write_chunk(writer.choice({"role": "assistant", "content": ""}))
        self._write_chunk(b"data: {this is not json\n\n")
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")

    # low level

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        """One HTTP chunk (an empty one ends the body)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _send_events(self, events: Iterable[bytes], delay_s: float = 0.0, hold: str | None = None) -> None:
        self._start_stream()
        try:
            for index, event in enumerate(events):
                self._write_chunk(event)
                if hold is not None and index == 1:  # the role chunk and the first piece are out
                    self.wfile.flush()
                    self.server.owner.gate(hold).wait(HOLD_LIMIT_S)
                if delay_s:  # a slow model
                    self.server.owner.stopping.wait(delay_s)
            self._write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = _dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _abort_connection(self) -> None:
        """Close with RST (SO_LINGER 0), as a crashed proxy would, and stop serving it."""
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()


class TrackingHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its open connections, so `close_connections` wakes
    every keep-alive handler thread and a fake's stop() leaves nothing behind; a client hanging
    up mid-answer (timeouts, resets) is normal for a fake and stays quiet. Every fake provider
    server in tests/ is one."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, (ConnectionError, OSError)):
            super().handle_error(request, client_address)

    def close_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Server(TrackingHTTPServer):
    owner: FakeOpenAIServer

    def __init__(self, address: tuple[str, int], owner: FakeOpenAIServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)


class FakeOpenAIServer:
    """An OpenAI-compatible chat-completions server on 127.0.0.1 that plays a script.

    ``record=False`` keeps no request bodies (for long benchmark runs).

    Control: in process (``FakeOpenAIServer``) or over HTTP from another process:
    POST /_control/script (JSON list of steps, appended), POST /_control/reset (script and
    recorded requests cleared), POST /_control/release (``{"name": "NAME"}``: a held stream goes
    on), GET /_control/requests (recorded requests as JSON).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, record: bool = True) -> None:
        self.script = Script()
        self.stopping = threading.Event()
        self.stall_release = threading.Event()
        """Set to end every stall now (reset, stop); a new one is made for later stalls."""
        self._answering = 0
        self._answering_changed = threading.Condition()
        self._record = record
        self._requests = RequestLog()
        self._rendered: dict[tuple[int, str, bool], list[bytes]] = {}
        self._gates: dict[str, threading.Event] = {}
        self._gates_lock = threading.Lock()
        self._httpd = _Server((host, port), self)
        self._thread: threading.Thread | None = None

    # lifecycle

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give a client as its api_base ("http://127.0.0.1:PORT/v1")."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"fake-openai-{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.stall_release.set()
        self._open_gates()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.close_connections()
        self._httpd.server_close()

    def serve_forever(self) -> None:
        """Serve on the calling thread (the command-line mode)."""
        self._httpd.serve_forever(poll_interval=0.1)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # script

    def enqueue(self, *steps: Step) -> None:
        """Append steps to the script (each request consumes one)."""
        self.script.append(steps)

    def set_loop(self, steps: Iterable[Step]) -> None:
        """Replay `steps` forever once the queued steps are used up."""
        self._rendered.clear()
        self.script.set_loop(steps)

    @property
    def pending_steps(self) -> int:
        return len(self.script)

    def rendered(self, step: Step, model: str, include_usage: bool) -> list[bytes]:
        """The SSE events of a loop step, rendered once: a benchmark measures the client."""
        key = (id(step), model, include_usage)
        events = self._rendered.get(key)
        if events is None:
            events = self._rendered[key] = list(stream_events(step, model, include_usage))
        return events

    def gate(self, name: str) -> threading.Event:
        """The release a stream with ``"hold": name`` waits for."""
        with self._gates_lock:
            return self._gates.setdefault(name, threading.Event())

    def release(self, name: str) -> None:
        """Let the stream held as `name` go on (now, or at once when it reaches its hold)."""
        self.gate(name).set()

    def _open_gates(self) -> None:
        with self._gates_lock:
            gates, self._gates = list(self._gates.values()), {}
        for gate in gates:
            gate.set()

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """A chat request being answered: `reset` waits until none is."""
        with self._answering_changed:
            self._answering += 1
        try:
            yield
        finally:
            with self._answering_changed:
                self._answering -= 1
                self._answering_changed.notify_all()

    def reset(self) -> None:
        """Forget the script and every recorded request. Held and stalled streams are let go
        first, and the answers still being written end, so that nothing of the test before
        reaches the script or the requests of the test after (waited on, up to RESET_WAIT_S)."""
        released, self.stall_release = self.stall_release, threading.Event()
        released.set()
        self._open_gates()
        with self._answering_changed:
            self._answering_changed.wait_for(lambda: self._answering == 0, RESET_WAIT_S)
        self.script.clear()
        self._rendered.clear()
        self._requests.clear()

    # requests

    def record(self, request: RecordedRequest) -> None:
        if self._record:
            self._requests.add(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the chat-completion requests received so far, oldest first."""
        return self._requests.all()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `count` requests arrived; raise TimeoutError otherwise."""
        return self._requests.wait_for(count, timeout)


def _load_steps(path: str) -> list[Step]:
    with open(path, encoding="utf-8") as file:
        steps = json.load(file)
    return steps if isinstance(steps, list) else [steps]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible chat-completions server.")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--script", help="JSON file with a list of steps, played once")
    parser.add_argument("--repeat-script", help="JSON file with a list of steps, replayed forever")
    parser.add_argument("--loop", action="store_true", help="replay --script forever")
    parser.add_argument("--no-record", action="store_true", help="keep no request bodies")
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(port=args.port, record=not args.no_record)
    if args.script:
        steps = _load_steps(args.script)
        if args.loop:
            server.set_loop(steps)
        else:
            server.enqueue(*steps)
    if args.repeat_script:
        server.set_loop(_load_steps(args.repeat_script))
    print(server.base_url, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stopping.set()
        server._httpd.server_close()


if __name__ == "__main__":
    main()
