"""A fake Anthropic Messages API server (POST /v1/messages) for wire tests and benchmarks.

Why it exists: an `anthropic/...` model goes through litellm's own Anthropic path (request
translation, SSE event parsing, thinking blocks, cache accounting, error mapping), which the
OpenAI-compatible fake cannot reach. This server speaks that protocol and, like the real
service, *validates* each request before answering: roles alternate and start with the user; a
`tool_use` is answered by its `tool_result` in the very next message and a `tool_result` names
a `tool_use` of the message before; with thinking on, the assistant message that made the
latest tool calls starts with a thinking block whose signature this server issued for that
text; at most 4 `cache_control` breakpoints; `max_tokens` is set and above the thinking budget;
images are base64 blocks. A wrong request gets the real 400 body, so a test fails the way a
user's turn would.

Prompt caching is simulated: each breakpoint's prefix (tools, then system, then message
blocks, in Anthropic's order) is remembered by hash; a later request whose prefix matches
reads it (`cache_read_input_tokens`), the rest up to its last breakpoint is written
(`cache_creation_input_tokens`), and what follows is plain `input_tokens`. Tokens are counted
as characters / 4 of the canonical JSON of each block (the minimum cacheable length is not
enforced).

Script steps (a queue; each /v1/messages request takes one):

- answer: ``{"text": "...", "thinking": "...", "redacted_thinking": "opaque data",
  "tool_calls": [{"name": "f", "arguments": {...}, "id": "toolu_1"}], "usage": {"input_tokens":
  .., "output_tokens": .., "cache_read_input_tokens": .., "cache_creation_input_tokens": ..}}``
  (every key optional; usage defaults to the simulated counts).
- ``{"fault": "status", "status": 429|529|500|400, "type": "...", "message": "...",
  "retry_after": 0.1}``: the real error body ``{"type": "error", "error": {...}}``.
- ``{"fault": "cut_mid_tool", "tool_calls": [...]}``: the stream starts a tool_use block, sends
  half its input JSON, then the connection is reset.
- ``{"fault": "overloaded_mid_stream"}``: message_start, then an SSE ``error`` event
  (overloaded_error), as Anthropic does when it sheds load mid-answer.

With ``context_window=N`` a request whose counted input exceeds N tokens gets Anthropic's
"prompt is too long" 400 instead of an answer.
"""

from __future__ import annotations

import collections
import hashlib
import json
import threading
from collections.abc import Iterator
from typing import Any

from tests.fakeserver import RecordedRequest, RequestLog, _dumps, _Handler, _Server, split_text

Step = dict[str, Any]

MAX_CACHE_BREAKPOINTS = 4
_ARGUMENT_PIECE = 8
_FAULTS = {"status", "cut_mid_tool", "overloaded_mid_stream"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def signature_for(thinking: str) -> str:
    """The signature this server issues for a thinking text (and checks when it comes back)."""
    return "sig-" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def tokens_of(value: Any) -> int:
    """The fake's token count of one block: a quarter of its canonical JSON's characters."""
    return max(1, len(json.dumps(value, sort_keys=True, separators=(",", ":"))) // 4)


class RequestError(Exception):
    """A request the real API would refuse: the status, the error type and its message."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


# -- validation -------------------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise RequestError("messages: content must be a string or a list of blocks")
    return content


def validate(body: dict[str, Any]) -> None:
    """Raise RequestError with the real API's wording for what it would refuse."""
    if not isinstance(body.get("max_tokens"), int):
        raise RequestError("max_tokens: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages: at least one message is required")
    thinking_on = _validate_thinking_settings(body)
    breakpoints = _count_breakpoints(body)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        raise RequestError(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )
    previous_role = ""
    open_uses: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise RequestError(f"messages.{index}.role: Input should be 'user' or 'assistant'")
        if index == 0 and role != "user":
            raise RequestError('messages: first message must use the "user" role')
        if role == previous_role:
            raise RequestError(
                f'messages: roles must alternate between "user" and "assistant", but found multiple "{role}" roles in a row'
            )
        blocks = _blocks(message.get("content"))
        _validate_results(index, blocks, open_uses)
        for position, block in enumerate(blocks):
            _validate_block(block, f"messages.{index}.content.{position}", role)
        open_uses = [block["id"] for block in blocks if block.get("type") == "tool_use"] if role == "assistant" else []
        previous_role = role
    if open_uses:
        raise RequestError("messages: the final message may not be an assistant message with `tool_use` blocks")
    if thinking_on:
        _validate_thinking_turn(messages)


def _validate_thinking_settings(body: dict[str, Any]) -> bool:
    """Whether thinking is on; its budget must fit under max_tokens, and temperature stays 1."""
    thinking = body.get("thinking") or {}
    if thinking.get("type") != "enabled":
        return False
    budget = int(thinking.get("budget_tokens", 0))
    if budget < 1024:
        raise RequestError("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    if body["max_tokens"] <= budget:
        raise RequestError("`max_tokens` must be greater than `thinking.budget_tokens`")
    if body.get("temperature") not in (None, 1):
        raise RequestError("`temperature` may only be set to 1 when thinking is enabled")
    return True


def _validate_results(index: int, blocks: list[dict[str, Any]], open_uses: list[str]) -> None:
    """Every tool_use of the message before is answered here, and nothing else is."""
    results = [block.get("tool_use_id") for block in blocks if block.get("type") == "tool_result"]
    missing = [use for use in open_uses if use not in results]
    if missing:
        raise RequestError(
            f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
            f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block "
            "in the next message."
        )
    for result in results:
        if result not in open_uses:
            raise RequestError(
                f"messages.{index}.content: unexpected `tool_use_id` found in `tool_result` blocks: {result}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            )


def _validate_block(block: dict[str, Any], where: str, role: str) -> None:
    kind = block.get("type")
    if kind == "thinking":
        if role != "assistant":
            raise RequestError(f"{where}: thinking blocks may only appear in assistant messages")
        if block.get("signature") != signature_for(str(block.get("thinking", ""))):
            raise RequestError(f"{where}: Invalid `signature` in `thinking` block")
    elif kind == "redacted_thinking":
        if not isinstance(block.get("data"), str) or not block["data"]:
            raise RequestError(f"{where}.data: Field required")
    elif kind == "image":
        source = block.get("source") or {}
        if source.get("type") != "base64" or not source.get("data") or not source.get("media_type"):
            raise RequestError(f"{where}.source: an image needs a base64 source with media_type and data")
    elif kind == "text":
        if not isinstance(block.get("text"), str) or not block["text"]:
            raise RequestError(f"{where}: text content blocks must be non-empty")
    elif kind == "tool_use":
        if role != "assistant" or not block.get("id") or not isinstance(block.get("input"), dict):
            raise RequestError(f"{where}: a tool_use block needs id, name and an input object")
    elif kind == "tool_result":
        if role != "user":
            raise RequestError(f"{where}: tool_result blocks may only appear in user messages")
    else:
        raise RequestError(
            f"{where}.type: Input tag '{kind}' found using 'type' does not match any of the expected tags"
        )


def _validate_thinking_turn(messages: list[dict[str, Any]]) -> None:
    """With thinking on, the assistant message whose tool calls the request answers last must
    start with a thinking (or redacted thinking) block."""
    last = messages[-1]
    if last["role"] != "user" or not any(b.get("type") == "tool_result" for b in _blocks(last["content"])):
        return
    index = len(messages) - 2
    first = _blocks(messages[index]["content"])[0]
    if first.get("type") not in ("thinking", "redacted_thinking"):
        raise RequestError(
            f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{first.get('type')}`. When `thinking` is enabled, a final `assistant` message must start with a "
            "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you "
            "include thinking blocks from previous turns. To avoid this requirement, disable `thinking`."
        )


def _count_breakpoints(body: dict[str, Any]) -> int:
    return sum(1 for block in prefix_blocks(body) if block.get("cache_control"))


# -- prompt caching --------------------------------------------------------------------------


def prefix_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's blocks in cache order: tools, system blocks, then each message's blocks."""
    blocks: list[dict[str, Any]] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, str) and system:
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks.extend(system)
    for message in body.get("messages") or []:
        for block in _blocks(message.get("content")):
            blocks.append({"role": message.get("role"), **block})
    return blocks


class PromptCache:
    """Prefixes written at breakpoints, by hash of their blocks (cache_control left out)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._prefixes: set[str] = set()

    def account(self, body: dict[str, Any]) -> dict[str, int]:
        """Usage of a request: read from cache, written to cache, and the plain rest."""
        blocks = prefix_blocks(body)
        digest = hashlib.sha256()
        hashes: list[str] = []
        counts: list[int] = []
        for block in blocks:
            plain = {key: value for key, value in block.items() if key != "cache_control"}
            digest.update(json.dumps(plain, sort_keys=True).encode())
            hashes.append(digest.copy().hexdigest())
            counts.append(tokens_of(plain))
        marks = [index for index, block in enumerate(blocks) if block.get("cache_control")]
        total = sum(counts)
        if not marks:
            return {"input_tokens": total, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        last_mark = marks[-1]
        with self._lock:
            hit = max((index for index in range(last_mark + 1) if hashes[index] in self._prefixes), default=-1)
            self._prefixes.update(hashes[index] for index in marks)
        read = sum(counts[: hit + 1])
        written = sum(counts[hit + 1 : last_mark + 1])
        return {
            "input_tokens": total - read - written,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }


# -- rendering -------------------------------------------------------------------------------


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {_dumps({'type': name, **data})}\n\n".encode()


_ids = iter(range(1, 1 << 62))


def stream_events(step: Step, model: str, usage: dict[str, int]) -> Iterator[bytes]:
    """The SSE events of one answer, in the order the Messages API sends them."""
    start_usage = {**usage, "output_tokens": 1}
    message: dict[str, Any] = {
        "id": f"msg_fake{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    yield _event("message_start", {"message": message})
    index = 0
    pieces = 0
    if step.get("thinking"):
        thinking = str(step["thinking"])
        yield _event(
            "content_block_start",
            {"index": index, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        )
        for piece in split_text(thinking):
            pieces += 1
            yield _event(
                "content_block_delta", {"index": index, "delta": {"type": "thinking_delta", "thinking": piece}}
            )
        yield _event(
            "content_block_delta",
            {"index": index, "delta": {"type": "signature_delta", "signature": signature_for(thinking)}},
        )
        yield _event("content_block_stop", {"index": index})
        index += 1
    if step.get("redacted_thinking"):
        block = {"type": "redacted_thinking", "data": str(step["redacted_thinking"])}
        yield _event("content_block_start", {"index": index, "content_block": block})
        yield _event("content_block_stop", {"index": index})
        index += 1
    if step.get("text"):
        yield _event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})
        for piece in split_text(str(step["text"])):
            pieces += 1
            yield _event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": piece}})
        yield _event("content_block_stop", {"index": index})
        index += 1
    calls = step.get("tool_calls") or []
    for number, call in enumerate(calls):
        yield from _tool_use_events(call, index, number)
        pieces += 1
        index += 1
    given = step.get("usage") or {}
    output = int(given.get("output_tokens", max(pieces, 1)))
    delta_usage = {**usage, "output_tokens": output}
    stop = "tool_use" if calls else "end_turn"
    yield _event("message_delta", {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": delta_usage})
    yield _event("message_stop", {})


def _tool_use_events(call: dict[str, Any], index: int, number: int, *, cut: bool = False) -> Iterator[bytes]:
    block = {"type": "tool_use", "id": call.get("id") or f"toolu_fake{number}", "name": call["name"], "input": {}}
    yield _event("content_block_start", {"index": index, "content_block": block})
    arguments = call.get("arguments", {})
    text = arguments if isinstance(arguments, str) else _dumps(arguments)
    if cut:
        text = text[: max(1, len(text) // 2)]
    for start in range(0, len(text), _ARGUMENT_PIECE):
        piece = text[start : start + _ARGUMENT_PIECE]
        yield _event(
            "content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}
        )
    if not cut:
        yield _event("content_block_stop", {"index": index})


def error_body(status: int, kind: str | None, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind or _ERROR_TYPES.get(status, "api_error"), "message": message}}


# -- HTTP ------------------------------------------------------------------------------------


class _AnthropicHandler(_Handler):
    server: _AnthropicServer  # type: ignore[assignment]

    def do_POST(self) -> None:
        body = self._read_body()
        if self.path.rstrip("/").endswith("/messages"):
            headers = {name.lower(): value for name, value in self.headers.items()}
            self.server.fake.record(RecordedRequest("POST", self.path, headers, body))
            self._answer(body if isinstance(body, dict) else {})
        else:
            self._send_json(404, error_body(404, None, f"fake server: no route POST {self.path}"))

    def do_GET(self) -> None:
        self._send_json(404, error_body(404, None, f"fake server: no route GET {self.path}"))

    def _answer(self, body: dict[str, Any]) -> None:
        fake = self.server.fake
        if not self.headers.get("x-api-key"):
            self._send_json(401, error_body(401, None, "x-api-key header is required"))
            return
        try:
            validate(body)
            usage = fake.cache.account(body)
            if fake.context_window is not None:
                total = sum(usage.values())
                if total > fake.context_window:
                    raise RequestError(f"prompt is too long: {total} tokens > {fake.context_window} maximum")
        except RequestError as error:
            fake.refusals.append(str(error))
            self._send_json(error.status, error_body(error.status, error.kind, str(error)))
            return
        step = fake.take()
        if step is None:
            self._send_json(500, error_body(500, "api_error", "fake server: script exhausted"))
            return
        model = str(body.get("model", "claude-fake"))
        given = step.get("usage") or {}
        usage = {key: int(given.get(key, value)) for key, value in usage.items()}
        fault = step.get("fault")
        if fault == "status":
            status = int(step.get("status", 500))
            headers = {"retry-after": str(step["retry_after"])} if step.get("retry_after") is not None else {}
            message = step.get("message") or ("Overloaded" if status == 529 else f"fake server: injected HTTP {status}")
            self._send_json(status, error_body(status, step.get("type"), message), headers)
        elif fault == "cut_mid_tool":
            self._start_stream()
            events = list(stream_events({"text": step.get("text", "")}, model, usage))[:-2]  # no message_delta/stop
            for event in events:
                self._write_chunk(event)
            for event in _tool_use_events(step["tool_calls"][0], len(events), 0, cut=True):
                self._write_chunk(event)
            self.wfile.flush()
            self._abort_connection()
        elif fault == "overloaded_mid_stream":
            self._start_stream()
            self._write_chunk(next(stream_events({}, model, usage)))
            self._write_chunk(_event("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}}))
            self._write_chunk(b"")
        else:
            self._send_events(stream_events(step, model, usage))


class _AnthropicServer(_Server):
    fake: FakeAnthropicServer

    def __init__(self, address: tuple[str, int], fake: FakeAnthropicServer) -> None:
        self.fake = fake
        self.owner = fake  # type: ignore[assignment]  # the base's handler reads owner.stopping only
        self.connections = set()
        self.connections_lock = threading.Lock()
        super(_Server, self).__init__(address, _AnthropicHandler)


class FakeAnthropicServer:
    """The Anthropic Messages API on 127.0.0.1, playing a script (see the module doc).

    `requests` are the bodies received (validated or not); `refusals` the messages of the
    requests it refused as the real API would.
    """

    def __init__(self, *, context_window: int | None = None, record: bool = True) -> None:
        self.cache = PromptCache()
        self.context_window = context_window
        self.refusals: list[str] = []
        self.stopping = threading.Event()
        self._record = record
        self._steps: collections.deque[Step] = collections.deque()
        self._loop: list[Step] = []
        self._loop_index = 0
        self._lock = threading.Lock()
        self._requests = RequestLog()
        self._httpd = _AnthropicServer(("127.0.0.1", 0), self)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The api_base to give litellm (it appends /v1/messages)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> FakeAnthropicServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.close_connections()
        self._httpd.server_close()

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def enqueue(self, *steps: Step) -> None:
        for step in steps:
            fault = step.get("fault")
            if fault is not None and fault not in _FAULTS:
                raise ValueError(f"unknown fault {fault!r} (known: {', '.join(sorted(_FAULTS))})")
            if fault == "cut_mid_tool" and not step.get("tool_calls"):
                raise ValueError("cut_mid_tool needs the tool call it cuts")
        with self._lock:
            self._steps.extend(steps)

    def set_loop(self, steps: list[Step]) -> None:
        """Replay `steps` forever once the queue is empty (benchmarks)."""
        with self._lock:
            self._loop, self._loop_index = list(steps), 0

    def take(self) -> Step | None:
        with self._lock:
            if self._steps:
                return self._steps.popleft()
            if self._loop:
                step = self._loop[self._loop_index % len(self._loop)]
                self._loop_index += 1
                return step
            return None

    @property
    def pending_steps(self) -> int:
        with self._lock:
            return len(self._steps)

    def record(self, request: RecordedRequest) -> None:
        if self._record:
            self._requests.add(request)

    @property
    def requests(self) -> list[RecordedRequest]:
        return self._requests.all()
