"""The litellm adapter: any litellm model as a `Model` (streaming, retries, typed errors).

This is the only module that imports litellm, and it does so lazily: `import litellm` costs
seconds, and `%load_ext blitz_kernel` must stay fast (KERNEL.md). `warm_up_in_background`
starts the import in a daemon thread right after loading the extension; the first call that
finds it not yet loaded finishes the import in a worker thread so the kernel's event loop
keeps ticking.

Streaming (the hot path). `litellm.acompletion(stream=True)` returns a `CustomStreamWrapper`
whose per-chunk processing, end-of-stream `stream_chunk_builder` (run in a worker thread) and
success-logging tasks cost several times what the raw OpenAI SDK spends on a turn. When the
wrapper sits on an OpenAI SDK stream (every OpenAI-compatible provider) and nobody registered
litellm callbacks that would expect to see the call, we read the SDK's chunks directly and
assemble text, reasoning, tool calls and usage ourselves; otherwise we read the wrapper.
Either way the request is built, authenticated and sent by litellm.

Retries are ours only (litellm and the SDK get `num_retries=0`/`max_retries=0`): exponential
backoff with jitter, honouring `Retry-After`, on rate limits, 5xx, timeouts and broken
connections, but only while nothing was shown to the user — streamed text cannot be taken
back, so a failure after output is raised at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import os
import random
import re
import threading
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Iterable
from typing import Any

from ..core.history import (
    AssistantMessage,
    ImagePart,
    Message,
    SummaryMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ..core.tools import ToolSpec
from ..core.usage import Price, TokenUsage
from ..errors import (
    ContextWindowError,
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from .base import ModelRequest, ModelResponse, StreamItem, TextDelta

SUMMARY_PREFIX = "[Summary of earlier conversation]\n"

# -- loading litellm -----------------------------------------------------------------------

_load_lock = threading.Lock()
_litellm_module: Any = None


def load_litellm() -> Any:
    """Import litellm once (thread-safe) with the settings this project relies on.

    `LITELLM_LOCAL_MODEL_COST_MAP` must be set before the import, or litellm fetches its price
    map over the network (and retries for seconds when offline). `suppress_debug_info` stops
    the banner litellm prints to stdout on failed look-ups, which would land in cell output.
    Nothing else is set globally: the user may use litellm in the same kernel, and per-call
    arguments keep our choices (no retries) from changing their calls.
    """
    global _litellm_module
    if _litellm_module is not None:
        return _litellm_module
    with _load_lock:
        if _litellm_module is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            _silence_litellm_warnings()
            import litellm

            litellm.suppress_debug_info = True
            _litellm_module = litellm
    return _litellm_module


def _silence_litellm_warnings() -> None:
    """Narrow filters for warnings litellm's own types trigger on first use; a UserWarning
    would otherwise show up in the output of the user's cell. Nothing else is filtered."""
    warnings.filterwarnings(
        "ignore", message=r"Item '.*' on TypedDict class '.*' is using the `ReadOnly` qualifier",
        category=UserWarning,
    )
    warnings.filterwarnings(
        "ignore", message=r"Accessing the 'model_(computed_)?fields' attribute on the instance",
        category=DeprecationWarning, module=r"litellm\.",
    )


def _warm_up() -> None:
    # A failed import is not reported here: the first model call imports again and raises it.
    with contextlib.suppress(Exception):
        load_litellm()


def warm_up_in_background() -> threading.Thread:
    """Start importing litellm in a daemon thread so the first model call does not wait."""
    thread = threading.Thread(target=_warm_up, name="blitz-litellm-warm-up", daemon=True)
    thread.start()
    return thread


async def _load_litellm_async() -> Any:
    """litellm, imported in a worker thread when needed so the event loop is never blocked."""
    if _litellm_module is not None:
        return _litellm_module
    return await asyncio.to_thread(load_litellm)


# -- history → OpenAI chat messages ----------------------------------------------------------


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if all(isinstance(part, TextPart) for part in message.parts):
        return message.text
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ImagePart):
            url = f"data:{part.media_type};base64,{part.data_base64}"
            content.append({"type": "image_url", "image_url": {"url": url}})
        else:
            content.append({"type": "text", "text": part.text})
    return content


def _assistant_message(message: AssistantMessage) -> dict[str, Any]:
    converted: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        converted["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments or "{}"}}
            for call in message.tool_calls
        ]
    elif not message.text:
        converted["content"] = ""  # an assistant turn needs content or tool calls
    return converted


def to_openai_messages(system: str, messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Our history as OpenAI chat messages (the format litellm takes for every provider).

    Reasoning text is not sent back: it is shown to the user, not part of the conversation.
    A summary becomes a user message, because it stands in for earlier turns of both sides.
    """
    converted: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    seen: list[ImagePart] = []  # images of the current run of tool results (view_image)
    for message in messages:
        if seen and not isinstance(message, ToolResultMessage):
            converted.append(_tool_images_message(seen))
            seen = []
        if isinstance(message, UserMessage):
            converted.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            converted.append(_assistant_message(message))
        elif isinstance(message, ToolResultMessage):
            converted.append({"role": "tool", "tool_call_id": message.call_id,
                              "content": message.to_model_content()})
            seen.extend(message.images)
        elif isinstance(message, SummaryMessage):
            converted.append({"role": "user", "content": SUMMARY_PREFIX + message.text})
        else:  # pragma: no cover - the Message union is closed
            raise TypeError(f"cannot send {type(message).__name__} to a model")
    if seen:
        converted.append(_tool_images_message(seen))
    return converted


def _tool_images_message(images: list[ImagePart]) -> dict[str, Any]:
    """Tool messages carry text only, so the images of a step's results follow them as a user
    message (works with every provider litellm maps the OpenAI format to)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": "[images returned by the tool calls above]"}]
    for part in images:
        url = f"data:{part.media_type};base64,{part.data_base64}"
        content.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": content}


def to_openai_tools(tools: Iterable[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs in the OpenAI function-tool format."""
    return [
        {"type": "function",
         "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}
        for tool in tools
    ]


# -- reading a stream ------------------------------------------------------------------------


class _ToolCallAssembler:
    """Joins streamed tool-call fragments: the first fragment of a call carries its index, id
    and name, later ones carry pieces of the argument string."""

    def __init__(self) -> None:
        self._calls: dict[int, list[Any]] = {}  # index -> [id, name, argument pieces]

    def add(self, fragments: Iterable[Any]) -> None:
        for fragment in fragments:
            index = self._index_of(fragment)
            call = self._calls.get(index)
            if call is None:
                call = self._calls[index] = ["", "", []]
            if fragment.id and not call[0]:
                call[0] = fragment.id
            function = fragment.function
            if function is not None:
                if function.name and not call[1]:
                    call[1] = function.name
                if function.arguments:
                    call[2].append(function.arguments)

    def _index_of(self, fragment: Any) -> int:
        """The fragment's index; providers that omit it get one call per new id."""
        index = getattr(fragment, "index", None)
        if index is not None:
            return int(index)
        if fragment.id and all(call[0] != fragment.id for call in self._calls.values()):
            return len(self._calls)
        return max(self._calls, default=0)

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=call_id or f"call_{uuid.uuid4().hex[:24]}", name=name,
                     arguments="".join(pieces))
            for call_id, name, pieces in (self._calls[index] for index in sorted(self._calls))
        ]


def _usage_from(usage: Any) -> TokenUsage:
    """ENG-80 counts from an OpenAI-style usage object (SDK or litellm; extra fields allowed)."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    cache_write = getattr(usage, "cache_creation_input_tokens", None)
    if cache_write is None and details is not None:
        cache_write = getattr(details, "cache_write_tokens", None)
    return TokenUsage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        cached_tokens=int(cached or 0),
        cache_write_tokens=int(cache_write or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _reasoning_of(delta: Any) -> str | None:
    """Reasoning text of a delta: `reasoning_content` (litellm, DeepSeek, vLLM) or `reasoning`."""
    reasoning = getattr(delta, "reasoning_content", None)
    if reasoning is None:
        reasoning = getattr(delta, "reasoning", None)
    return reasoning if isinstance(reasoning, str) else None


class _StreamReader:
    """Accumulates one streamed response; `feed` returns the deltas to show for a chunk."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thought: list[str] = []
        self.tool_calls = _ToolCallAssembler()
        self.usage: TokenUsage | None = None
        self.finished = False

    def feed(self, chunk: Any) -> list[TextDelta]:
        shown: list[TextDelta] = []
        choices = chunk.choices
        if choices:
            choice = choices[0]
            delta = choice.delta
            if delta is not None:
                reasoning = _reasoning_of(delta)
                if reasoning:
                    self.thought.append(reasoning)
                    shown.append(TextDelta(text=reasoning, thought=True))
                content = delta.content
                if content:
                    self.text.append(content)
                    shown.append(TextDelta(text=content))
                if delta.tool_calls:
                    self.tool_calls.add(delta.tool_calls)
            if choice.finish_reason:
                self.finished = True
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = _usage_from(usage)
        return shown

    def response(self, model: str) -> ModelResponse:
        return ModelResponse(
            text="".join(self.text),
            thought="".join(self.thought),
            tool_calls=self.tool_calls.calls(),
            usage=self.usage or TokenUsage(),
            model=model,
        )


# -- errors ------------------------------------------------------------------------------------

_PREFIXES = re.compile(
    r"^(?:(?:litellm\.)?[A-Za-z]*(?:Error|Exception|Timeout)(?:\s*:\s*|\s+-\s+))+"
)
_SECRET_PATTERNS = (
    re.compile(r"\b(sk-[A-Za-z0-9]{0,8})[A-Za-z0-9_\-]{12,}"),
    re.compile(r"(Bearer\s+)\S+", re.IGNORECASE),
)
_CONTEXT_WORDS = ("context length", "context window", "maximum context", "too many tokens",
                  "prompt is too long", "context_length_exceeded")
_FINAL_WORDS = ("insufficient_quota", "exceeded your current quota", "budget")
_MAX_CAUSE = 400


def _environment_secrets() -> list[str]:
    """Keys litellm may have read from the environment (OPENAI_API_KEY and friends)."""
    return [
        value for name, value in os.environ.items()
        if len(value) >= 12 and any(word in name.upper() for word in ("KEY", "TOKEN", "SECRET"))
    ]


class _AttemptFailed(Exception):
    """One attempt failed: the typed error for the user, the wait the server asked for, and
    the original exception to chain — None when its text holds a secret, because a chained
    exception is printed in full in a traceback."""

    def __init__(
        self, error: ModelError, retry_after: float | None = None, original: BaseException | None = None
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after
        self.original = original
        # A 429 for an exhausted quota or budget will not clear by waiting.
        self.retryable = error.retryable and not any(word in error.cause.lower() for word in _FINAL_WORDS)


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    try:
        return int(status) if status is not None else None
    except (TypeError, ValueError):
        return None


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's requested wait (`retry-after-ms`, or `Retry-After` in seconds or as a date)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        headers = getattr(exc, "headers", None)
    if not headers:
        return None
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return max(float(milliseconds) / 1000, 0.0)
        value = headers.get("retry-after")
    except AttributeError:
        return None
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


class _ErrorMapper:
    """Turns litellm/OpenAI SDK/transport exceptions into typed ModelErrors (ENG-15).

    The cause is short — HTTP status and the provider's own message without litellm's class
    prefixes — and never contains the API key (providers echo parts of a rejected key).
    """

    def __init__(self, model: str, secrets: Iterable[str | None], timeout: float | None) -> None:
        self.model = model
        self.timeout_cause = (
            f"no answer within {timeout:g} s (request_timeout)" if timeout is not None else "timed out"
        )
        self._secrets = [secret for secret in secrets if secret and len(secret) >= 6]

    def redact(self, text: str) -> str:
        for secret in [*self._secrets, *_environment_secrets()]:
            text = text.replace(secret, "***")
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub(r"\1***", text)
        return text

    def cause(self, exc: BaseException, status: int | None = None) -> str:
        message = str(getattr(exc, "message", None) or exc or type(exc).__name__)
        message = _PREFIXES.sub("", message.strip()).strip()
        message = " ".join(message.split())  # one line
        if len(message) > _MAX_CAUSE:
            message = message[:_MAX_CAUSE] + "…"
        message = self.redact(message)
        return f"HTTP {status}: {message}" if status else message

    def map(self, exc: BaseException, *, mid_stream: bool = False) -> _AttemptFailed:
        import openai

        litellm = load_litellm()
        original = getattr(exc, "original_exception", None)
        if isinstance(exc, litellm.exceptions.MidStreamFallbackError) and isinstance(original, Exception):
            # litellm wraps mid-stream failures; the original says what really happened
            return self.map(original, mid_stream=mid_stream)
        # litellm gives connection errors and timeouts made-up statuses (500, 408): not shown
        status = None if isinstance(exc, openai.APIConnectionError) else _status_of(exc)
        error = self._typed(exc, status, openai, mid_stream)
        retry_after = retry_after_seconds(exc) if error.retryable else None
        return _AttemptFailed(error, retry_after, None if self._mentions_secret(exc) else exc)

    def _mentions_secret(self, exc: BaseException) -> bool:
        """Whether the exception or anything chained to it quotes a key."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            text = f"{current} {getattr(current, 'message', '')}"
            if self.redact(text) != text:
                return True
            current = current.__cause__ or current.__context__
        return False

    def _typed(self, exc: BaseException, status: int | None, openai: Any, mid_stream: bool) -> ModelError:
        litellm = load_litellm()
        cause = self.cause(exc, status)
        if isinstance(exc, litellm.exceptions.ContextWindowExceededError) or (
            status == 400 and any(word in cause.lower() for word in _CONTEXT_WORDS)
        ):
            return ContextWindowError(self.model, cause)
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)) or status in (401, 403):
            return ModelAuthError(self.model, cause)
        if isinstance(exc, openai.NotFoundError) or status == 404:
            return ModelNotFoundError(self.model, cause)
        if isinstance(exc, openai.RateLimitError) or status == 429:
            return ModelRateLimitError(self.model, cause)
        if isinstance(exc, (openai.APITimeoutError, TimeoutError)) or status == 408:
            return ModelTimeoutError(self.model, self.timeout_cause)
        if isinstance(exc, (openai.BadRequestError, openai.UnprocessableEntityError)):
            return ModelBadRequestError(self.model, cause)
        if isinstance(exc, (openai.APIConnectionError, openai.InternalServerError, OSError)) or (
            status is not None and status >= 500
        ):
            return ModelUnavailableError(self.model, cause)
        if mid_stream and isinstance(exc, (openai.APIError, json.JSONDecodeError)):
            return ModelUnavailableError(self.model, f"bad stream from the provider: {cause}")
        if status is not None and 400 <= status < 500:
            return ModelBadRequestError(self.model, cause)
        return ModelError(self.model, f"{type(exc).__name__}: {cause}")


# -- the model -------------------------------------------------------------------------------


class LiteLLMModel:
    """Any litellm model name (`openai/gpt-4.1-mini`, `anthropic/...`, `openai/<name>` with an
    OpenAI-compatible `api_base`) as a streaming `Model`.

    `retries` is how many times a retryable failure (429, 5xx, timeout, broken connection
    before any output) is retried; `request_timeout` bounds the wait for each response and for
    each chunk. `extra` holds further `litellm.acompletion` arguments (headers, reasoning
    effort, ...). `backoff_base`/`backoff_cap` shape the exponential backoff (tests shrink
    them); a `Retry-After` longer than `max_retry_after` seconds ends the retries at once.
    `fast_stream=False` always reads litellm's stream wrapper (slower; see the module doc).
    """

    def __init__(
        self,
        name: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        retries: int = 3,
        request_timeout: float | None = 600,
        extra: dict[str, Any] | None = None,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        max_retry_after: float = 60.0,
        fast_stream: bool = True,
    ) -> None:
        self.name = name
        self.api_base = api_base
        self.retries = max(int(retries), 0)
        self.request_timeout = request_timeout
        self.extra = dict(extra or {})
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_after = max_retry_after
        self.fast_stream = fast_stream
        self._api_key = api_key
        self._errors = _ErrorMapper(name, [api_key, self.extra.get("api_key")], request_timeout)

    def __repr__(self) -> str:  # never shows the key
        return f"LiteLLMModel({self.name!r}, api_base={self.api_base!r})"

    # -- streaming

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Yield TextDeltas, then one ModelResponse; retry failures while nothing was shown.

        The response's `model` is this adapter's configured name: prices and config tables are
        keyed by configured names, and litellm here makes no fallback to another model.
        """
        litellm = await _load_litellm_async()
        arguments = self.completion_arguments(request)
        shown = False
        attempt = 0
        while True:
            try:
                async for item in self._attempt(litellm, arguments):
                    shown = shown or isinstance(item, TextDelta)
                    yield item
                return
            except _AttemptFailed as caught:
                failure = caught
            # Raised outside the except block, so the error's context is only what we chain.
            if shown:
                raise self._after_output(failure.error) from failure.original
            delay = self._retry_delay(attempt, failure)
            if delay is None:
                raise failure.error from failure.original
            attempt += 1
            await asyncio.sleep(delay)

    def completion_arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `litellm.acompletion` for a request (retries are ours)."""
        arguments: dict[str, Any] = dict(self.extra)
        arguments.update(
            model=self.name,
            messages=to_openai_messages(request.system, request.messages),
            stream=True,
            stream_options={"include_usage": True},
            num_retries=0,
            max_retries=0,
        )
        if request.tools:
            arguments["tools"] = to_openai_tools(request.tools)
        if self.api_base is not None:
            arguments["api_base"] = self.api_base
        if self._api_key is not None:
            arguments["api_key"] = self._api_key
        if self.request_timeout is not None:
            arguments["timeout"] = self.request_timeout
        if request.temperature is not None:
            arguments["temperature"] = request.temperature
        if request.max_tokens is not None:
            arguments["max_tokens"] = request.max_tokens
        return arguments

    async def _attempt(self, litellm: Any, arguments: dict[str, Any]) -> AsyncIterator[StreamItem]:
        """One request: raises _AttemptFailed (with the typed error) on any failure."""
        try:
            wrapper = await litellm.acompletion(**arguments)
        except Exception as exc:  # every provider failure arrives as some exception class
            raise self._errors.map(exc) from exc
        reader = _StreamReader()
        try:
            async for chunk in self._chunks(litellm, wrapper):
                for delta in reader.feed(chunk):
                    yield delta
        except Exception as exc:  # transport and parse errors of the stream itself
            raise self._errors.map(exc, mid_stream=True) from exc
        finally:
            await wrapper.aclose()
        if not reader.finished:
            error = ModelUnavailableError(self.name, "the stream ended before the answer was complete")
            raise _AttemptFailed(error)
        yield reader.response(self.name)

    def _chunks(self, litellm: Any, wrapper: Any) -> Any:
        """The SDK's own chunk stream when safe (see the module doc), else litellm's wrapper."""
        raw = getattr(wrapper, "completion_stream", None)
        if not self.fast_stream or raw is None or _litellm_callbacks_registered(litellm):
            return wrapper
        import openai

        return raw if isinstance(raw, openai.AsyncStream) else wrapper

    def _after_output(self, error: ModelError) -> ModelError:
        """A failure after text was shown: never retried (the text cannot be taken back)."""
        if isinstance(error, ModelTimeoutError):
            return ModelTimeoutError(self.name, f"stalled after part of the answer was shown: {error.cause}")
        if isinstance(error, ModelUnavailableError):
            return ModelUnavailableError(
                self.name, f"the connection broke after part of the answer was shown: {error.cause}"
            )
        return error

    def _retry_delay(self, attempt: int, failure: _AttemptFailed) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        if not failure.retryable or attempt >= self.retries:
            return None
        backoff = min(self.backoff_cap, self.backoff_base * (2**attempt))
        delay = backoff * random.uniform(0.5, 1.0)  # jitter: clients that failed together spread out
        if failure.retry_after is not None:
            if failure.retry_after > self.max_retry_after:
                return None
            delay = max(delay, failure.retry_after)
        return delay

    # -- prices and limits

    def price(self, model: str) -> Price | None:
        """The price of `model` from litellm's cost map (exact name, then without provider)."""
        litellm = load_litellm()
        entry = _cost_entry(litellm.model_cost, model)
        if entry is None:
            return None
        input_rate = entry.get("input_cost_per_token")
        output_rate = entry.get("output_cost_per_token")
        if input_rate is None or output_rate is None:
            return None
        cached = entry.get("cache_read_input_token_cost")
        cache_write = entry.get("cache_creation_input_token_cost")
        return Price(
            input=_per_million(input_rate),
            output=_per_million(output_rate),
            cached_input=None if cached is None else _per_million(cached),
            cache_write=None if cache_write is None else _per_million(cache_write),
        )

    def context_window(self) -> int | None:
        """Maximum prompt tokens from litellm's model info, or None when litellm does not know."""
        litellm = load_litellm()
        entry = _cost_entry(litellm.model_cost, self.name)
        tokens = (entry or {}).get("max_input_tokens")
        if tokens is None:
            try:
                tokens = litellm.get_model_info(self.name).get("max_input_tokens")
            except Exception:  # noqa: BLE001 - litellm raises for unmapped models
                return None
        return int(tokens) if tokens else None

    def supports_vision(self) -> bool:
        """litellm's word on whether the model reads images (view_image needs it)."""
        try:
            return bool(load_litellm().supports_vision(model=self.name))
        except Exception:  # noqa: BLE001 - unmapped models raise: treat them as blind
            return False


def _litellm_callbacks_registered(litellm: Any) -> bool:
    """Callbacks expect litellm's own stream processing (logging, cost); keep it for them."""
    return bool(litellm.callbacks or litellm.success_callback or litellm._async_success_callback)


def _cost_entry(model_cost: dict[str, Any], model: str) -> dict[str, Any] | None:
    entry = model_cost.get(model)
    if entry is None and "/" in model:
        entry = model_cost.get(model.split("/", 1)[1])
    return entry if isinstance(entry, dict) else None


def _per_million(rate: Any) -> float:
    """litellm's USD per token as our USD per million tokens (rounded off float noise)."""
    return round(float(rate) * 1e6, 9)
