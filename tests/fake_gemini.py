"""A fake Gemini API (Google AI Studio, v1beta) for wire tests: `models/{model}:generateContent`
and `models/{model}:streamGenerateContent?alt=sse`.

Why it exists: `gemini/<model>` goes through litellm's own Gemini code (a different request
body, SSE framing, usage block and error shape from OpenAI's), and only a server that checks
requests the way Google's does shows whether blitz's histories survive that translation. So
every request is validated first, and a wrong one gets the service's own 400 answer
(`{"error": {"code", "message", "status"}}`); the messages quoted are the service's where
known. The request body is read in both spellings the service accepts (camelCase and the
snake_case litellm sends).

Step format (each generation request takes one step; an empty script answers 500):

- answer: ``{"text": "...", "thought": "...", "tool_calls": [{"name": "f", "arguments": {...},
  "signature": "a thoughtSignature"}], "usage": {"prompt": 10, "candidates": 5, "cached": 0,
  "thoughts": 0}, "hold": "NAME"}`` (usage keys may also be Google's own, `promptTokenCount`…) —
  thought text streams first as ``thought: true`` parts, then text in word-sized parts, then
  all function calls in one chunk (as Gemini sends parallel calls), then the finish chunk with
  ``usageMetadata``. ``prompt`` defaults to the fake's estimate of the request (4 characters a
  token, 258 per image).
- ``{"fault": "status", "status": 429, "message": "...", "retry_delay": "1s"}``: a Google
  error (429 as RESOURCE_EXHAUSTED with the quota details and RetryInfo the service sends).
- ``{"fault": "reset_mid_stream", "text": "...", "tool_calls": [...]}``: what is given is
  streamed (no finish chunk), then the connection is reset.
- ``{"fault": "stream_error", "status": 503, "text": "..."}``: a 200 stream that carries
  Google's error object as an event (after the given text), as the service reports a failure
  once the stream has begun.
- ``{"fault": "blocked_prompt"}``: ``promptFeedback.blockReason`` SAFETY and no candidates.
- ``{"fault": "blocked_candidate", "text": "..."}`` (or ``"safety"``): a candidate ending with
  finishReason SAFETY and its safety ratings (after the given text, if any).

`max_input_tokens` (None: no limit) makes a longer request fail as the service fails it.

The explicit context cache (`cachedContents`, and `cachedContent` in a generation request) is
tests/fake_gemini_cache.py; `server.cache` holds it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.fake_gemini_cache import MIN_CACHE_TOKENS, CacheRefusal, CacheStore, read_cached_prompt
from tests.fake_native_server import NativeFakeServer, NativeHandler, Step, dumps
from tests.fakeserver import split_text

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_DEFAULT_MESSAGES = {
    429: (
        "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
    ),
    500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    503: "The model is overloaded. Please try again later.",
}
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\-]{0,63}$")
_IMAGE_TYPES = {"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif"}
_FAULTS = {"status", "reset_mid_stream", "stream_error", "blocked_prompt", "blocked_candidate", "safety"}
IMAGE_TOKENS = 258
"""What the service counts for one image of up to 384 px."""


class GeminiError(Exception):
    """A request the service refuses: the HTTP status and the message of its error body."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def error_body(code: int, message: str, details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Google's error shape."""
    error: dict[str, Any] = {"code": code, "message": message, "status": _STATUS_NAMES.get(code, "UNKNOWN")}
    if details:
        error["details"] = details
    return {"error": error}


def _get(mapping: Any, camel: str) -> Any:
    """A field in either spelling the service accepts (`functionCall` or `function_call`)."""
    if not isinstance(mapping, dict):
        return None
    if camel in mapping:
        return mapping[camel]
    return mapping.get(re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower())


# -- validation -------------------------------------------------------------------------------


def estimate_tokens(body: dict[str, Any]) -> int:
    """Roughly what the service would count: 4 characters a token, a fixed cost per image."""
    characters, images = 0, 0
    parts: list[Any] = []
    for content in body.get("contents") or []:
        parts.extend(_get(content, "parts") or [])
    parts.extend(_get(_get(body, "systemInstruction"), "parts") or [])
    for part in parts:
        if not isinstance(part, dict):
            continue
        if _get(part, "inlineData") is not None:
            images += 1
        else:
            characters += len(
                dumps({k: v for k, v in part.items() if k not in ("thought_signature", "thoughtSignature")})
            )
    characters += len(dumps(body.get("tools") or []))
    return max(characters // 4, 1) + images * IMAGE_TOKENS


def _check_tools(body: dict[str, Any]) -> None:
    seen: set[str] = set()
    for tool in body.get("tools") or []:
        for declaration in _get(tool, "functionDeclarations") or []:
            name = str((declaration or {}).get("name", ""))
            if not _FUNCTION_NAME.match(name):
                raise GeminiError(
                    400,
                    "* GenerateContentRequest.tools[0].function_declarations: Invalid function name. Must start "
                    "with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots "
                    "(.), colons (:), or dashes (-), with a maximum length of 64.",
                )
            if name in seen:
                raise GeminiError(400, f"Duplicate function declaration found: {name}")
            seen.add(name)


def _check_part(part: Any, where: str, issued: dict[str, str]) -> None:
    if not isinstance(part, dict) or not part:
        raise GeminiError(400, f"* GenerateContentRequest.{where}: a part must hold one kind of data")
    call = _get(part, "functionCall")
    expected = issued.get(call_key(call.get("name"), call.get("args", {}))) if call else None
    if expected is not None and _get(part, "thoughtSignature") != expected:
        raise GeminiError(
            400, f"* {where}: Function call is missing a thought_signature or carries one that is not valid."
        )
    inline = _get(part, "inlineData")
    if inline is not None:
        mime = str(_get(inline, "mimeType") or "")
        if mime.startswith("image/") and mime not in _IMAGE_TYPES:
            raise GeminiError(400, f"Unsupported MIME type: {mime}")
        if not _get(inline, "data"):
            raise GeminiError(400, f"* GenerateContentRequest.{where}.inline_data.data: required field is not set")
    response = _get(part, "functionResponse")
    if response is not None and not isinstance(_get(response, "response"), dict):
        raise GeminiError(
            400,
            f"Invalid value at '{where}.function_response.response' (type.googleapis.com/google.protobuf.Struct)",
        )


def call_key(name: Any, arguments: Any) -> str:
    """A function call's identity: its name and canonical arguments."""
    return json.dumps([name, arguments], sort_keys=True)


def check_request(body: Any, issued: dict[str, str] | None = None) -> None:
    """Raise GeminiError for what the service refuses: no contents, a role other than user and
    model, a first turn that is not the user's, two turns of one role in a row, an empty part
    list, function responses
    that do not answer the previous turn's calls one for one by name, a function call this
    server sent with a thought signature (`issued`, by call_key) coming back without it, bad or
    duplicate function names."""
    if not isinstance(body, dict):
        raise GeminiError(400, "Invalid JSON payload received.")
    contents = body.get("contents")
    if not contents:
        raise GeminiError(400, "* GenerateContentRequest.contents: contents is not specified")
    _check_tools(body)
    previous_calls: list[str] | None = None  # names called by the previous model turn
    for index, content in enumerate(contents):
        role = content.get("role", "user") if isinstance(content, dict) else None
        if role not in ("user", "model"):
            raise GeminiError(400, "Please use a valid role: user, model.")
        if index == 0 and role != "user":
            raise GeminiError(400, "Please ensure that the first turn is a user turn.")
        if index > 0 and role == (contents[index - 1].get("role", "user")):
            raise GeminiError(400, "Please ensure that multiturn requests alternate between user and model.")
        parts = _get(content, "parts") or []
        if not parts:
            raise GeminiError(
                400, f"* GenerateContentRequest.contents[{index}].parts: contents.parts must not be empty."
            )
        for number, part in enumerate(parts):
            _check_part(part, f"contents[{index}].parts[{number}]", issued or {})
        calls = [str(_get(_get(part, "functionCall"), "name")) for part in parts if _get(part, "functionCall")]
        responses = [
            str(_get(_get(part, "functionResponse"), "name")) for part in parts if _get(part, "functionResponse")
        ]
        if responses:
            if role != "user" or previous_calls is None:
                raise GeminiError(
                    400, "Please ensure that function response turn comes immediately after a function call turn."
                )
            if len(responses) != len(previous_calls):
                raise GeminiError(
                    400,
                    "Please ensure that the number of function response parts is equal to the number of function "
                    "call parts of the function call turn.",
                )
            if sorted(responses) != sorted(previous_calls):
                raise GeminiError(
                    400, f"function response names {responses} do not match the function calls {previous_calls}."
                )
        elif previous_calls is not None:
            raise GeminiError(
                400, "Please ensure that function response turn comes immediately after a function call turn."
            )
        previous_calls = calls if role == "model" and calls else None
    if previous_calls is not None:
        raise GeminiError(
            400, "Please ensure that function response turn comes immediately after a function call turn."
        )


# -- answers ----------------------------------------------------------------------------------


def usage_metadata(step: Step, estimate: int, pieces: int, cached_tokens: int = 0) -> dict[str, Any]:
    """The answer's usage block; `cached_tokens` is what the request read from a cachedContent."""
    given = step.get("usage") or {}
    prompt = int(given.get("prompt", given.get("promptTokenCount", estimate)))
    candidates = int(given.get("candidates", given.get("candidatesTokenCount", max(pieces, 1))))
    thoughts = int(given.get("thoughts", given.get("thoughtsTokenCount", 0)))
    cached = int(given.get("cached", given.get("cachedContentTokenCount", cached_tokens)))
    usage: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if cached:
        usage["cachedContentTokenCount"] = cached
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


class _Response:
    """The GenerateContentResponse objects of one answer, as the stream sends them."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.response_id = f"fake-{time.monotonic_ns()}"

    def chunk(self, parts: list[dict[str, Any]] | None, **extra: Any) -> dict[str, Any]:
        candidate: dict[str, Any] = {"index": 0}
        if parts is not None:
            candidate["content"] = {"role": "model", "parts": parts}
        candidate.update(extra.pop("candidate", {}))
        response: dict[str, Any] = {
            "candidates": [candidate],
            "modelVersion": self.model,
            "responseId": self.response_id,
        }
        response.update(extra)
        return response


def answer_parts(step: Step) -> Iterator[list[dict[str, Any]]]:
    """The parts of an answer, one list per streamed chunk."""
    for piece in split_text(step.get("thought", "")):
        yield [{"text": piece, "thought": True}]
    for piece in split_text(step.get("text", "")):
        yield [{"text": piece}]
    calls = step.get("tool_calls") or []
    if calls:
        yield [_call_part(call) for call in calls]


def _call_part(call: dict[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": call["name"], "args": call.get("arguments", {})}}
    if call.get("signature"):
        part["thoughtSignature"] = call["signature"]
    return part


_SAFETY_RATINGS = [
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
]


class _GeminiHandler(NativeHandler):
    server: Any

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def answer(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: Any, raw: bytes
    ) -> None:
        owner: FakeGeminiServer = self.server.owner
        if re.fullmatch(r"/v1(?:beta)?/cachedContents(?:/[^/]*)?", path):
            self._cache_route(owner, method, path, query, headers, body)
            return
        match = re.fullmatch(r"/v1(?:beta)?/models/([^/:]+):(generateContent|streamGenerateContent)", path)
        if method != "POST" or match is None:
            self.send_json(404, error_body(404, f"fake Gemini: no route {method} {path}"))
            return
        model, action = match.groups()
        stream = action == "streamGenerateContent"
        cached_tokens = 0
        try:
            self._check_access(owner, model, headers, query, stream)
            cache, whole = read_cached_prompt(owner.cache, body, model) if isinstance(body, dict) else (None, body)
            check_request(whole, owner.issued)
            if cache is not None:
                cached_tokens = cache.tokens
            estimate = estimate_tokens(body) + cached_tokens
            if owner.max_input_tokens is not None and estimate > owner.max_input_tokens:
                raise GeminiError(
                    400,
                    f"The input token count ({estimate}) exceeds the maximum number of tokens allowed "
                    f"({owner.max_input_tokens}).",
                )
        except (GeminiError, CacheRefusal) as error:
            owner.refusals.append(error.message)
            self.send_json(error.code, error_body(error.code, error.message))
            return
        step = owner.take()
        if step is None:
            self.send_json(500, error_body(500, "fake Gemini: script exhausted"))
            return
        self._play(step, model, estimate, stream, cached_tokens)

    def _cache_route(
        self,
        owner: FakeGeminiServer,
        method: str,
        path: str,
        query: dict[str, str],
        headers: dict[str, str],
        body: Any,
    ) -> None:
        """cachedContents: create and list on the collection, get and delete on one."""
        name = path.split("/", 2)[2]  # "cachedContents" or "cachedContents/<id>"
        try:
            self._check_key(owner, headers, query)
            if name == "cachedContents" and method == "POST":
                fault = owner.cache_faults.pop(0) if owner.cache_faults else None
                if fault is not None:
                    raise CacheRefusal(int(fault["status"]), str(fault["message"]))
                created = owner.cache.create(
                    body, estimate_tokens, lambda contents, tools: check_request({"contents": contents, **tools})
                )
                self.send_json(200, created.metadata())
            elif name == "cachedContents" and method == "GET":
                page_size = int(query.get("pageSize") or owner.cache_page_size)
                self.send_json(200, owner.cache.listing(page_size, query.get("pageToken")))
            elif name != "cachedContents" and method == "GET":
                self.send_json(200, owner.cache.live(name).metadata())
            elif name != "cachedContents" and method == "DELETE":
                owner.cache.delete(name)
                self.send_json(200, {})
            else:
                self.send_json(404, error_body(404, f"fake Gemini: no route {method} {path}"))
        except (GeminiError, CacheRefusal) as error:
            owner.refusals.append(error.message)
            self.send_json(error.code, error_body(error.code, error.message))

    def _check_key(self, owner: FakeGeminiServer, headers: dict[str, str], query: dict[str, str]) -> None:
        key = headers.get("x-goog-api-key") or query.get("key")
        if not key:
            raise GeminiError(
                403,
                "Method doesn't allow unregistered callers (callers without established identity). Please use "
                "API Key or other form of API consumer identity to call this API.",
            )
        if owner.api_key is not None and key != owner.api_key:
            raise GeminiError(400, "API key not valid. Please pass a valid API key.")

    def _check_access(
        self, owner: FakeGeminiServer, model: str, headers: dict[str, str], query: dict[str, str], stream: bool
    ) -> None:
        self._check_key(owner, headers, query)
        if owner.models is not None and model not in owner.models:
            raise GeminiError(
                404, f"models/{model} is not found for API version v1beta, or is not supported for generateContent."
            )
        if stream and query.get("alt") != "sse":
            raise GeminiError(400, "fake Gemini: only the alt=sse stream is served")

    def _play(self, step: Step, model: str, estimate: int, stream: bool, cached_tokens: int = 0) -> None:
        fault = step.get("fault")
        if fault == "status":
            code = int(step.get("status", 500))
            message = step.get("message") or _DEFAULT_MESSAGES.get(code, f"fake Gemini: injected HTTP {code}")
            details = _rate_limit_details(step) if code == 429 else None
            self.send_json(code, error_body(code, message, details))
            return
        for call in step.get("tool_calls") or []:
            if call.get("signature"):
                self.server.owner.issued[call_key(call["name"], call.get("arguments", {}))] = call["signature"]
        response = _Response(model)
        chunks = [response.chunk(parts) for parts in answer_parts(step)]
        pieces = len(chunks)
        if fault == "reset_mid_stream":
            self._sse(chunks, stream, step.get("hold"), end=False)
            self.abort_connection()
            return
        if fault == "stream_error":
            code = int(step.get("status", 503))
            message = step.get("message") or _DEFAULT_MESSAGES.get(code, f"fake Gemini: injected HTTP {code}")
            self._sse([*chunks, error_body(code, message)], stream, step.get("hold"))
            return
        usage = usage_metadata(step, estimate, pieces, cached_tokens)
        if fault == "blocked_prompt":
            chunks = [
                {
                    "promptFeedback": {"blockReason": "SAFETY", "safetyRatings": _SAFETY_RATINGS},
                    "usageMetadata": {"promptTokenCount": estimate, "totalTokenCount": estimate},
                    "modelVersion": model,
                }
            ]
        elif fault in ("blocked_candidate", "safety"):
            chunks.append(
                response.chunk(
                    None, candidate={"finishReason": "SAFETY", "safetyRatings": _SAFETY_RATINGS}, usageMetadata=usage
                )
            )
        else:
            chunks.append(response.chunk([{"text": ""}], candidate={"finishReason": "STOP"}, usageMetadata=usage))
        if stream:
            self._sse(chunks, True, step.get("hold"))
        else:
            self.send_json(200, _merged(chunks))

    def _sse(self, chunks: list[dict[str, Any]], stream: bool, hold: str | None, *, end: bool = True) -> None:
        events = (b"data: " + dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks)
        self.stream("text/event-stream", events, hold, end=end)


def _rate_limit_details(step: Step) -> list[dict[str, Any]]:
    """What the service attaches to a 429: the quota that ran out and when to retry."""
    quota = step.get("quota_id", "GenerateRequestsPerMinutePerProjectPerModel-FreeTier")
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                    "quotaId": quota,
                    "quotaValue": "10",
                }
            ],
        },
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [
                {
                    "description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                }
            ],
        },
    ]
    if step.get("retry_delay") is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": step["retry_delay"]})
    return details


def _merged(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The non-streamed answer: every chunk's parts in one candidate."""
    parts: list[dict[str, Any]] = []
    last = chunks[-1]
    for chunk in chunks:
        for candidate in chunk.get("candidates") or []:
            parts.extend((candidate.get("content") or {}).get("parts") or [])
    merged = dict(last)
    if last.get("candidates"):
        candidate = dict(last["candidates"][0])
        candidate["content"] = {"role": "model", "parts": [p for p in parts if p.get("text") != ""] or [{"text": ""}]}
        merged["candidates"] = [candidate]
    return merged


class FakeGeminiServer(NativeFakeServer):
    """The fake Gemini API on 127.0.0.1; `base_url` is the api_base to give litellm.

    `api_key`: when set, only this key is accepted; `models`: when set, other model names are
    404; `max_input_tokens`: a longer request is refused as too long; `min_cache_tokens`: the
    smallest content `cachedContents` takes; `clock`: the cache's time (seconds since the epoch).
    `cache_faults` (`{"status", "message"}`, oldest first) answer the next cache creations.
    """

    handler = _GeminiHandler

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        models: set[str] | None = None,
        max_input_tokens: int | None = None,
        min_cache_tokens: int = MIN_CACHE_TOKENS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(host, port)
        self.cache = CacheStore(min_tokens=min_cache_tokens, served=models, clock=clock)
        self.cache_faults: list[dict[str, Any]] = []
        self.cache_page_size = 50
        self.api_key = api_key
        self.models = models
        self.max_input_tokens = max_input_tokens
        self.refusals: list[str] = []
        """The messages of the requests refused, oldest first (a test expects none)."""
        self.issued: dict[str, str] = {}
        """The thought signatures this server handed out, by call_key."""

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1beta"

    def check_step(self, step: Step) -> Step:
        step = super().check_step(step)
        fault = step.get("fault")
        if fault is not None and fault not in _FAULTS:
            raise ValueError(f"unknown fault {fault!r} (known: {', '.join(sorted(_FAULTS))})")
        for call in step.get("tool_calls") or []:
            if "name" not in call or not isinstance(call.get("arguments", {}), dict):
                raise ValueError(f"a Gemini function call needs a name and an arguments object: {call!r}")
        return step

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The bodies of the generation requests received, oldest first."""
        return self.generation_bodies()

    def generation_bodies(self) -> list[dict[str, Any]]:
        """The bodies of the generation requests received, oldest first."""
        return [r.body for r in self.requests if ":generateContent" in r.path or ":streamGenerateContent" in r.path]

    def cache_requests(self) -> list[tuple[str, str]]:
        """(method, path) of each cachedContents request received, oldest first."""
        return [(r.method, r.path.split("?")[0]) for r in self.requests if "/cachedContents" in r.path]
