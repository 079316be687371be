"""The model adapter: any litellm model as a `Model` (streaming, retries, stall detection).

This is the only module that imports litellm, and lazily: `import litellm` costs seconds and
`%load_ext blitz_kernel` must stay fast (the extension warms it up in a daemon thread; a call
that finds it not loaded finishes the import in a worker thread). OpenAI-compatible models go
straight to the endpoint through the openai SDK (`openai_direct.py`) unless litellm callbacks or
extra litellm arguments are set; a litellm stream over an SDK stream is read at the SDK's chunks,
since the wrapper costs several times the SDK's work. Retries are ours only (backoff with jitter,
`Retry-After`), and only while nothing was shown: streamed text cannot be taken back. Two stall
budgets, `stall_first_byte_s` and `stall_between_chunks_s`, end a provider's silence far sooner
than httpx's 600 s read limit, with `ModelStallError`, retried like a timeout.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import threading
import warnings
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

from ..core.usage import Price
from ..errors import (
    ModelAuthError,
    ModelBadRequestError,
    ModelError,
    ModelRefusedError,
    ModelStallError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from . import cache_marks, gemini_cache, ollama_show, openai_direct, price_map
from .base import ModelRequest, StreamItem, TextDelta
from .litellm_errors import AttemptFailed, ErrorMapper
from .openai_wire import StreamReader, to_openai_messages, to_openai_tools

T = TypeVar("T")

FIRST_BYTE_KEY = "stall.first_byte_s"
BETWEEN_CHUNKS_KEY = "stall.between_chunks_s"
DIRECT_PATH = True
"""Whether OpenAI-compatible models take the direct path by default (a model's own `direct`
argument wins). The wire tests and benches turn it off to run the same cases through litellm."""

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
        "ignore",
        message=r"Item '.*' on TypedDict class '.*' is using the `ReadOnly` qualifier",
        category=UserWarning,
    )
    warnings.filterwarnings(
        "ignore",
        message=r"Accessing the 'model_(computed_)?fields' attribute on the instance",
        category=DeprecationWarning,
        module=r"litellm\.",
    )


async def _load_litellm_async() -> Any:
    """litellm, imported in a worker thread when needed so the event loop is never blocked."""
    if _litellm_module is not None:
        return _litellm_module
    return await asyncio.to_thread(load_litellm)


# -- stall detection -------------------------------------------------------------------------


class _Stalled(Exception):
    """The provider sent nothing within the current stall budget (internal to one attempt)."""


class _StallWatch:
    """The stall budgets of one attempt: `first_byte_s` from sending the request until the
    first chunk, then `between_chunks_s` for each next chunk. Only time spent waiting on the
    provider counts, not the time the consumer takes between chunks.

    Why not `asyncio.timeout` around each read: that arms and cancels a timer for every chunk
    of the hot path (~4 µs each). Here a chunk costs a clock read; one timer per budget period
    fires, and re-arms itself for the time still left unless the wait really ran out. Then it
    cancels the waiting task, as `asyncio.timeout` does, and `wait_for` claims that
    cancellation back as `_Stalled` (an outside cancellation, e.g. Stop, stays a cancellation).
    """

    _TOLERANCE_S = 1e-3  # the loop may run a timer up to its clock resolution early

    def __init__(self, first_byte_s: float, between_chunks_s: float) -> None:
        self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "a stream is read inside a task"
        self._task = task
        self._cancelling = task.cancelling()
        self._between_chunks_s = between_chunks_s
        self.budget_s = first_byte_s
        self.key = FIRST_BYTE_KEY
        self._since: float | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._fired = False

    async def wait_for(self, awaitable: Awaitable[T]) -> T:
        """Await a read from the provider under the current budget; raise `_Stalled` if it
        ran out. The first-byte budget keeps running across the request and the first read."""
        if self._since is None:
            self._since = self._loop.time()
            if self._handle is None:
                self._handle = self._loop.call_at(self._since + self.budget_s, self._check)
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self._claim():
                raise _Stalled from None
            raise

    def chunk_arrived(self) -> None:
        """A chunk came: the wait is over, and from now on the between-chunks budget applies."""
        self._since = None
        if self.key == FIRST_BYTE_KEY:
            self.key, self.budget_s = BETWEEN_CHUNKS_KEY, self._between_chunks_s
            self.close()  # armed for the first-byte budget; the next wait arms for the new one

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        self._handle = None
        if self._since is None:
            return  # not waiting now; the next wait arms the timer again
        deadline = self._since + self.budget_s
        if self._loop.time() + self._TOLERANCE_S >= deadline:
            self._fired = True
            self._task.cancel()
        else:
            self._handle = self._loop.call_at(deadline, self._check)

    def _claim(self) -> bool:
        """Whether the cancellation just caught was ours (then the task is un-cancelled)."""
        if not self._fired:
            return False
        self._fired = False
        return self._task.uncancel() <= self._cancelling


# -- the model -------------------------------------------------------------------------------


class LiteLLMModel:
    """Any litellm model name (`openai/gpt-4.1-mini`, `anthropic/...`, `openai/<name>` with an
    OpenAI-compatible `api_base`) as a streaming `Model`.

    `retries` is how many times a retryable failure (429, 5xx, timeout, stall, broken
    connection before any output) is retried; `request_timeout` is httpx's limit for each read;
    `stall_first_byte_s` and `stall_between_chunks_s` are the shorter stall budgets (see the
    module doc). `extra` holds further `litellm.acompletion` arguments (headers, reasoning
    effort, ...). `backoff_base`/`backoff_cap` shape the exponential backoff (tests shrink
    them); a `Retry-After` longer than `max_retry_after` seconds ends the retries at once.
    `fast_stream=False` always reads litellm's stream wrapper (slower; see the module doc).
    `direct`: True/False forces the direct OpenAI path on or off for an OpenAI-compatible
    model (None: `DIRECT_PATH`); it is taken only while no litellm callbacks are registered.
    `prompt_caching=False` leaves out the cache marks (cache_marks.py; gemini_cache.py, whose
    cache lives `cache_ttl_s` seconds).
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
        stall_first_byte_s: float = 120.0,
        stall_between_chunks_s: float = 60.0,
        direct: bool | None = None,
        prompt_caching: bool = True,
        cache_ttl_s: int = 300,
    ) -> None:
        for key, budget in ((FIRST_BYTE_KEY, stall_first_byte_s), (BETWEEN_CHUNKS_KEY, stall_between_chunks_s)):
            if not (math.isfinite(budget) and budget > 0):
                raise ValueError(f"{key} must be a finite number of seconds > 0, got {budget!r}")
        self.name = name
        self.api_base = api_base
        self.retries = max(int(retries), 0)
        self.request_timeout = request_timeout
        self.extra = dict(extra or {})
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retry_after = max_retry_after
        self.fast_stream = fast_stream
        self.stall_first_byte_s = stall_first_byte_s
        self.stall_between_chunks_s = stall_between_chunks_s
        self.direct = direct
        self.prompt_caching = prompt_caching
        self.cache_ttl_s = cache_ttl_s
        self._explicit_cache: bool | None = None
        self._context_cache: bool | None = None  # Gemini's; False for good once creating one failed
        self._api_key = api_key
        self._errors = ErrorMapper(name, [api_key, self.extra.get("api_key")], request_timeout, api_base)
        self._speaks_openai: bool | None = openai_direct.speaks_openai(name) if "/" in name else None
        self._reasons: bool | None = None
        self._response_schema: bool | None = None

    def __repr__(self) -> str:  # never shows the key
        return f"LiteLLMModel({self.name!r}, api_base={self.api_base!r})"

    def speaks_openai(self) -> bool:
        """Whether the model is served over the OpenAI API (may read the price map once)."""
        if self._speaks_openai is None:
            self._speaks_openai = openai_direct.speaks_openai(self.name)
        return self._speaks_openai

    def takes_direct_path(self) -> bool:
        """Whether the next call goes to the endpoint through the openai SDK (module doc)."""
        wanted = DIRECT_PATH if self.direct is None else self.direct
        return wanted and not self.extra and self.speaks_openai() and not openai_direct.litellm_callbacks_registered()

    def problem(self) -> str | None:
        """Why no call can ever succeed (litellm knows no provider for the name), or None.
        May load litellm: call it off the event loop."""
        if self.speaks_openai():
            return None
        self._ollama_info()  # asked here, off the event loop, before a turn needs it
        litellm = load_litellm()
        try:
            litellm.get_llm_provider(model=self.name, api_base=self.api_base)
        except Exception:
            return (
                f"model {self.name!r}: litellm knows no provider for this name; write it as "
                "provider/model, e.g. openai/gpt-4.1-mini"
            )
        return None

    # -- streaming

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Yield TextDeltas, then one ModelResponse; retry failures while nothing was shown.

        The response's `model` is this adapter's configured name: prices and config tables are
        keyed by configured names. Moving on to another model is `FallbackModel`'s job, never
        litellm's (no litellm fallbacks are configured here).
        """
        if self._speaks_openai is None:
            await asyncio.to_thread(self.speaks_openai)  # a bare name: the map is read once
        if reasoning_effort(request) is not None and not await asyncio.to_thread(self.supports_reasoning):
            raise ModelBadRequestError(self.name, NO_REASONING)
        transport: _Transport
        if self.takes_direct_path():
            transport = _DirectTransport(self, request)
        else:
            transport = _LiteLLMTransport(self, await _load_litellm_async(), request)
        shown = False
        attempt = 0
        while True:
            try:
                async for item in self._attempt(transport):
                    shown = shown or isinstance(item, TextDelta)
                    yield item
                return
            except AttemptFailed as caught:
                failure = caught
            if not shown and self._uncached(transport, failure):
                continue  # the same call without the context cache, at once
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
        messages = to_openai_messages(
            request.system,
            request.messages,
            thinking_model=self.name,
            images_with_results=self.name.startswith(_GEMINI_PREFIXES),
        )
        if self.prompt_caching and self.caches_explicitly():
            messages = cache_marks.mark_breakpoints(messages)
        elif self.prompt_caching and self.caches_context():
            messages = gemini_cache.mark_prefix(messages, self.cache_ttl_s)
        arguments.update(
            model=self.name,
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
            num_retries=0,
            max_retries=0,
        )
        if request.tools:
            arguments["tools"] = to_openai_tools(request.tools)
        if request.response_schema is not None:
            arguments["response_format"] = openai_direct.response_format(request.response_schema)
        if self.api_base is not None:
            arguments["api_base"] = self.api_base
        if self._api_key is not None:
            arguments["api_key"] = self._api_key
        if self.request_timeout is not None:
            arguments["timeout"] = self.request_timeout
        effort = reasoning_effort(request)
        claude_thinks = effort is not None and self.caches_explicitly()
        if request.temperature is not None and not claude_thinks:
            arguments["temperature"] = request.temperature
        if request.max_tokens is not None:
            arguments["max_tokens"] = request.max_tokens + (self._thinking_budget(effort) if claude_thinks else 0)
        if effort is not None:
            arguments["reasoning_effort"] = effort  # litellm maps it to each provider's setting
        return arguments

    def _thinking_budget(self, effort: str | None) -> int:
        """The thinking budget litellm gives Claude for `effort` (its own constants). Claude
        counts thinking inside `max_tokens` and refuses a cap at or below the budget, so a
        configured `max_tokens` caps the answer and the budget comes on top. (Claude thinking
        also refuses any temperature but 1: a configured one is left out while it thinks.)"""
        constants = load_litellm().constants
        name = f"DEFAULT_REASONING_EFFORT_{str(effort).upper()}_THINKING_BUDGET"
        return int(getattr(constants, name, 0) or 0)

    async def _attempt(self, transport: _Transport) -> AsyncIterator[StreamItem]:
        """One request: raises AttemptFailed (with the typed error) on any failure."""
        watch = _StallWatch(self.stall_first_byte_s, self.stall_between_chunks_s)
        litellm = transport.litellm
        try:
            try:
                wrapper = await watch.wait_for(transport.open())
            except _Stalled:
                raise AttemptFailed(self._stall_error(watch)) from None
            except AttemptFailed:
                raise
            except Exception as exc:  # every provider failure arrives as some exception class
                raise self._errors.map(exc, litellm) from exc
            reader = StreamReader()
            chunks = aiter(wrapper if litellm is None else self._chunks(litellm, wrapper))
            try:
                while True:
                    try:
                        chunk = await watch.wait_for(anext(chunks))
                    except StopAsyncIteration:
                        break
                    watch.chunk_arrived()
                    for delta in reader.feed(chunk):
                        yield delta
            except _Stalled:
                raise AttemptFailed(self._stall_error(watch)) from None
            except Exception as exc:  # transport and parse errors of the stream itself
                raise self._errors.map(exc, litellm, mid_stream=True) from exc
            finally:
                await (wrapper.aclose() if litellm is not None else wrapper.close())
        finally:
            watch.close()
        if not reader.finished:
            error = ModelUnavailableError(self.name, "the stream ended before the answer was complete")
            raise AttemptFailed(error)
        if reader.blocked:
            raise AttemptFailed(ModelRefusedError(self.name, "the provider's safety filter blocked the answer"))
        yield reader.response(self.name)

    def _uncached(self, transport: _Transport, failure: AttemptFailed) -> bool:
        """After a call whose context cache could not be made (gemini_cache.py): the model
        stops marking, the transport is rebuilt without the mark, and True says to send again."""
        if not isinstance(transport, _LiteLLMTransport) or not gemini_cache.resend_uncached(
            transport.arguments["messages"], failure.original or failure.__cause__
        ):
            return False
        self._context_cache = False  # for good; the typed error's cause never holds a secret
        gemini_cache.log.warning("model %r: no context cache (%s); prompts go uncached", self.name, failure.error.cause)
        transport.arguments = self.completion_arguments(transport.request)
        return True

    def _stall_error(self, watch: _StallWatch) -> ModelStallError:
        """The one-line cause names the budget that ran out, so the user knows what to raise."""
        where = "" if watch.key == FIRST_BYTE_KEY else " between chunks"
        cause = f"sent nothing for {watch.budget_s:g} s{where} ({watch.key})"
        return ModelStallError(self.name, cause, budget=watch.key)

    def _chunks(self, litellm: Any, wrapper: Any) -> Any:
        """The SDK's own chunk stream when safe (see the module doc), else litellm's wrapper."""
        raw = getattr(wrapper, "completion_stream", None)
        if not self.fast_stream or raw is None or openai_direct.litellm_callbacks_registered():
            return wrapper
        import openai

        return raw if isinstance(raw, openai.AsyncStream) else wrapper

    def _after_output(self, error: ModelError) -> ModelError:
        """A failure after text was shown: never retried (the text cannot be taken back)."""
        if isinstance(error, ModelStallError):
            return ModelStallError(
                self.name, f"stalled after part of the answer was shown: {error.cause}", budget=error.budget
            )
        if isinstance(error, ModelTimeoutError):
            return ModelTimeoutError(self.name, f"stalled after part of the answer was shown: {error.cause}")
        if isinstance(error, ModelUnavailableError):
            return ModelUnavailableError(
                self.name, f"the connection broke after part of the answer was shown: {error.cause}"
            )
        return error

    def _retry_delay(self, attempt: int, failure: AttemptFailed) -> float | None:
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
        """The price of `model` from litellm's cost map (exact name, then without provider);
        an OpenAI-compatible model reads the map's file without importing litellm."""
        if self.speaks_openai():
            return price_map.price_of(model)
        return price_map.price_from(price_map.entry_of(load_litellm().model_cost, model))

    def context_window(self) -> int | None:
        """Maximum prompt tokens from litellm's model info, or None when litellm does not know."""
        if self.speaks_openai():
            return price_map.context_window_of(self.name)
        served = ollama_show.context_tokens(self._ollama_info())
        if served is not None:
            return served
        litellm = load_litellm()
        entry = price_map.entry_of(litellm.model_cost, self.name)
        tokens = (entry or {}).get("max_input_tokens")
        if tokens is None:
            try:
                tokens = litellm.get_model_info(self.name).get("max_input_tokens")
            except Exception:  # noqa: BLE001 - litellm raises for unmapped models
                return None
        return int(tokens) if tokens else None

    def caches_explicitly(self) -> bool:
        """Whether the provider caches only what a request marks (Anthropic, also through
        Bedrock or Vertex); OpenAI caches on its own, Gemini also does (and see caches_context)."""
        if self._explicit_cache is None:
            provider, claude = self._provider(), "claude" in self.name.lower()
            self._explicit_cache = provider == "anthropic" or (claude and provider in ("bedrock", "vertex_ai"))
        return self._explicit_cache

    def caches_context(self) -> bool:
        """Whether the model is a `gemini/` one, with Gemini's context cache (gemini_cache.py)."""
        if self._context_cache is None:
            self._context_cache = self._provider() == "gemini"
        return self._context_cache

    def _provider(self) -> str:
        """litellm's provider for the name ("" when it knows none: nothing to mark)."""
        try:
            return str(load_litellm().get_llm_provider(model=self.name, api_base=self.api_base)[1])
        except Exception:  # noqa: BLE001 - an unknown provider caches nothing we could mark
            return ""

    def supports_reasoning(self) -> bool:
        """litellm's word on whether the model has a thinking setting (`--think` needs it)."""
        if self._reasons is None:
            if self.speaks_openai():
                self._reasons = price_map.supports_reasoning_of(self.name)
            else:
                try:
                    self._reasons = bool(load_litellm().supports_reasoning(model=self.name))
                except Exception:  # noqa: BLE001 - unmapped models raise: they have no such setting
                    self._reasons = False
        return self._reasons

    def supports_response_schema(self) -> bool:
        """litellm's word on whether the provider takes a JSON schema for the answer
        (`response_format`; litellm turns it into Anthropic's and Gemini's own forms)."""
        if self._response_schema is None:
            if self.speaks_openai():
                self._response_schema = price_map.supports_response_schema_of(self.name)
            else:
                try:
                    self._response_schema = bool(load_litellm().supports_response_schema(model=self.name))
                except Exception:  # noqa: BLE001 - unmapped models raise: the tool is used instead
                    self._response_schema = False
        return self._response_schema

    def supports_vision(self) -> bool:
        """litellm's word on whether the model reads images (view_image needs it)."""
        if self.speaks_openai():
            return price_map.supports_vision_of(self.name)
        sees = ollama_show.sees_images(self._ollama_info())
        if sees is not None:
            return sees
        try:
            return bool(load_litellm().supports_vision(model=self.name))
        except Exception:  # noqa: BLE001 - unmapped models raise: treat them as blind
            return False

    def _ollama_info(self) -> dict[str, Any] | None:
        """What the Ollama server at `api_base` says about this model (ollama_show.py); None
        for other providers or when it does not answer."""
        model = ollama_show.ollama_model(self.name)
        return None if model is None else ollama_show.show(self.api_base, model)


_GEMINI_PREFIXES = ("gemini/", "vertex_ai/gemini")
"""Models litellm reaches over Gemini's API, which refuses two user turns in a row."""

NO_REASONING = "this model has no thinking setting that --think or reasoning could choose; use --think off"


def reasoning_effort(request: ModelRequest) -> str | None:
    """The `reasoning_effort` litellm (and the OpenAI SDK) take for the request's `reasoning`:
    litellm turns it into Anthropic's thinking budget and Gemini's thinking budget. "off" sends
    nothing, which leaves thinking off on the providers that make it optional."""
    return None if request.reasoning in (None, "off") else request.reasoning


class _Transport:
    """How one call's attempts reach the provider; `litellm` is None on the direct path."""

    litellm: Any = None

    def open(self) -> Awaitable[Any]:
        """Send the request; resolves to the chunk stream (raises the provider's failure)."""
        raise NotImplementedError


class _LiteLLMTransport(_Transport):
    def __init__(self, model: LiteLLMModel, litellm: Any, request: ModelRequest) -> None:
        self.litellm = litellm
        self.request = request
        self.arguments = model.completion_arguments(request)

    def open(self) -> Awaitable[Any]:
        return self.litellm.acompletion(**self.arguments)  # type: ignore[no-any-return]


class _DirectTransport(_Transport):
    """The openai SDK against the endpoint (openai_direct.py), with a cached client."""

    def __init__(self, model: LiteLLMModel, request: ModelRequest) -> None:
        self.model = model
        self.arguments = openai_direct.request_arguments(
            model.name,
            to_openai_messages(request.system, request.messages, reuse=True),
            to_openai_tools(request.tools, reuse=True) if request.tools else None,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            reasoning_effort=reasoning_effort(request),
            response_schema=request.response_schema,
        )

    async def open(self) -> Any:
        model = self.model
        key = openai_direct.api_key_for(model._api_key)
        if key is None:
            cause = "no API key: set OPENAI_API_KEY, or name the variable that holds it in api_key_env"
            raise AttemptFailed(ModelAuthError(model.name, cause))
        client = openai_direct.client_for(openai_direct.endpoint(model.api_base), key, model.request_timeout)
        return await openai_direct.open_stream(client, self.arguments)
