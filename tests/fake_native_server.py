"""What the fake Gemini and Ollama servers share: a threaded HTTP server on 127.0.0.1 that
records each request, plays a queue of scripted steps, and streams chunked bodies.

Why apart from tests/fakeserver.py: that server's routes and step format are OpenAI's. A
provider with its own wire protocol (its own paths, body, stream framing and error shape)
subclasses `NativeHandler` and `NativeFakeServer` here and keeps only its protocol in its own
module; the plumbing (recording, holds, abrupt resets, clean stop) is the same for all.
"""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import struct
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar, Self
from urllib.parse import parse_qs, urlsplit

from tests.fakeserver import HOLD_LIMIT_S, RecordedRequest, RequestLog, TrackingHTTPServer

Step = dict[str, Any]


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class NativeHandler(BaseHTTPRequestHandler):
    """Routing and low-level writing; a provider implements `answer(path, query, body)`."""

    protocol_version = "HTTP/1.1"
    server: _NativeHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silent: tests read recorded requests, not a log on stderr."""

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        parts = urlsplit(self.path)
        headers = {name.lower(): value for name, value in self.headers.items()}
        owner = self.server.owner
        owner.record(RecordedRequest(method, self.path, headers, body))
        self.answer(method, parts.path, {k: v[-1] for k, v in parse_qs(parts.query).items()}, headers, body, raw)

    def answer(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any, raw: bytes
    ) -> None:
        raise NotImplementedError

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    # writing

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        """One HTTP chunk (an empty one ends the body)."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def stream(self, content_type: str, events: Iterable[bytes], hold: str | None = None, *, end: bool = True) -> None:
        """Write `events` as one chunked body; `hold` pauses after the first event until the
        test releases it; `end=False` leaves the body open (the caller aborts it)."""
        self.start_stream(content_type)
        try:
            for index, event in enumerate(events):
                self.write_chunk(event)
                if hold is not None and index == 0:
                    self.wfile.flush()
                    self.server.owner.gate(hold).wait(HOLD_LIMIT_S)
            if end:
                self.write_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def abort_connection(self) -> None:
        """Close with RST (SO_LINGER 0), as a crashed proxy would, and stop serving it."""
        with contextlib.suppress(OSError):
            self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()


class _NativeHTTPServer(TrackingHTTPServer):
    def __init__(self, address: tuple[str, int], owner: NativeFakeServer, handler: type[NativeHandler]) -> None:
        self.owner = owner
        super().__init__(address, handler)


class NativeFakeServer:
    """A provider fake: a script of steps (each generation request takes one), the requests
    received, holds a test releases. Subclasses set `handler` and check steps in `check_step`."""

    handler: ClassVar[type[NativeHandler]]

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._steps: collections.deque[Step] = collections.deque()
        self._requests = RequestLog()
        self._gates: dict[str, threading.Event] = {}
        self.stopping = threading.Event()
        self._httpd = _NativeHTTPServer((host, port), self, self.handler)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        with self._lock:
            gates = list(self._gates.values())
        for gate in gates:
            gate.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.close_connections()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # the script

    def check_step(self, step: Step) -> Step:
        """Reject a mistyped step when it is enqueued (a subclass adds its own keys)."""
        if not isinstance(step, dict):
            raise ValueError(f"a script step must be a JSON object, got {step!r}")
        return step

    def enqueue(self, *steps: Step) -> None:
        checked = [self.check_step(step) for step in steps]
        with self._lock:
            self._steps.extend(checked)

    def take(self) -> Step | None:
        with self._lock:
            return self._steps.popleft() if self._steps else None

    @property
    def pending_steps(self) -> int:
        with self._lock:
            return len(self._steps)

    def gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def release(self, name: str) -> None:
        self.gate(name).set()

    # requests

    def record(self, request: RecordedRequest) -> None:
        self._requests.add(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        return self._requests.all()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        return self._requests.wait_for(count, timeout)
