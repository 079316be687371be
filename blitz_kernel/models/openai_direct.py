"""The direct path to OpenAI-compatible endpoints: the openai SDK, without litellm.

Why: for an OpenAI-compatible endpoint litellm only builds the same chat-completions request
the SDK would send, and its per-call setup (cost calculator, response metadata, logging
wrapper) costs about 0.75 ms a step, and its import about 180 MB in every kernel. So a model
named `openai/<name>` (any `api_base`: vLLM, Ollama, a proxy, OpenAI itself), or a bare name
litellm's map files under the `openai` provider (`gpt-4o-mini`), is sent with one cached
`openai.AsyncOpenAI` client per endpoint, key and timeout, and per event loop (an httpx pool
belongs to the loop that opened its connections). The adapter (`litellm_model.py`) decides
per call: litellm stays for every other provider, for extra litellm arguments, and whenever
litellm callbacks are registered (they expect to see every call).

Same behaviour as through litellm, by construction: the same retry, stall and fallback code
runs over either transport; errors go through the same `ErrorMapper` (the SDK's exception
classes are the ones litellm's subclass); usage comes from the same stream reader; prices,
context windows and vision support come from litellm's own map file (`price_map.py`). The
request mirrors what litellm sends for OpenAI: the model name without `openai/`, the key
from `api_key` or `OPENAI_API_KEY`, the endpoint from `api_base`, `OPENAI_BASE_URL` or
`OPENAI_API_BASE`, and `max_completion_tokens` instead of `max_tokens` for the reasoning
models (o1, o3, o4, gpt-5) that reject the latter.

The request goes out through the client's `post` (the SDK's way to send a body as given),
not `chat.completions.create`: `create` walks the whole request (every message, every tool
schema) to transform it against its typed parameters, which for the plain JSON built here
gives back the same data and cost several milliseconds a step. The answer's chunks come back
as the JSON the endpoint sent (`openai_wire.WireObject` reads them), not as SDK models
built field by field. The rest of the SDK's request path (headers, auth, timeouts, error
classes, an error event inside the stream) is the same.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import weakref
from typing import Any

from .base import ResponseSchema
from .price_map import provider_of

PREFIX = "openai/"
DEFAULT_BASE = "https://api.openai.com/v1"
_REASONING = re.compile(r"^(o\d|gpt-5)")
"""OpenAI models that take `max_completion_tokens` only (litellm maps `max_tokens` for them)."""

_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, float | None], Any]] = (
    weakref.WeakKeyDictionary()
)


def speaks_openai(name: str) -> bool:
    """Whether `name` is served over the OpenAI chat-completions API (the direct path may
    take it): `openai/...`, or a bare name litellm's map files under the openai provider.
    A bare-name check reads the map (once per process): call it off the event loop."""
    if name.startswith(PREFIX):
        return len(name) > len(PREFIX)
    return "/" not in name and provider_of(name) == "openai"


LITELLM_INTERNAL_CALLBACKS = frozenset({"cache", "vector_store_pre_call_hook"})
"""litellm's own entries in its callback lists, not anybody's logging: importing its Gemini /
Vertex context-caching module registers "cache", which must not turn the direct path off for
the rest of the process."""
CALLBACK_LISTS = (
    "callbacks",
    "success_callback",
    "_async_success_callback",
    "failure_callback",
    "_async_failure_callback",
)


def litellm_callbacks_registered() -> bool:
    """Callbacks registered with litellm expect to see our calls (logging, cost tracking):
    then the call goes through litellm. Without litellm imported nobody registered any."""
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return False
    return any(
        not (isinstance(callback, str) and callback in LITELLM_INTERNAL_CALLBACKS)
        for name in CALLBACK_LISTS
        for callback in getattr(litellm, name, None) or ()
    )


def wire_name(name: str) -> str:
    return name[len(PREFIX) :] if name.startswith(PREFIX) else name


def endpoint(api_base: str | None) -> str:
    return api_base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or DEFAULT_BASE


def api_key_for(api_key: str | None) -> str | None:
    return api_key or os.environ.get("OPENAI_API_KEY") or None


def client_for(base_url: str, api_key: str, timeout: float | None) -> Any:
    """The cached SDK client for this endpoint, key and timeout on the running loop. The
    SDK's own retries are off: retries are the adapter's (Retry-After, backoff, stalls)."""
    loop = asyncio.get_running_loop()
    per_loop = _clients.get(loop)
    if per_loop is None:
        per_loop = _clients[loop] = {}
    key = (base_url, api_key, timeout)
    client = per_loop.get(key)
    if client is None:
        import openai

        client = per_loop[key] = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout if timeout is not None else 600.0
        )
    return client


async def open_stream(client: Any, arguments: dict[str, Any]) -> Any:
    """Send one streamed chat-completions request (`request_arguments`); the SDK's stream of
    the chunks as decoded JSON (dicts). Raises the SDK's errors, like `create` would."""
    import openai

    return await client.post(
        "/chat/completions",
        body=arguments,
        cast_to=object,
        options={"security": {"bearer_auth": True}},
        stream=True,
        stream_cls=openai.AsyncStream[object],
    )


def request_arguments(
    name: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    temperature: float | None,
    max_tokens: int | None,
    reasoning_effort: str | None = None,
    response_schema: ResponseSchema | None = None,
) -> dict[str, Any]:
    """The keyword arguments of `client.chat.completions.create` for one streamed step."""
    model = wire_name(name)
    arguments: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        arguments["tools"] = tools
    if temperature is not None:
        arguments["temperature"] = temperature
    if max_tokens is not None:
        arguments["max_completion_tokens" if _REASONING.match(model) else "max_tokens"] = max_tokens
    if reasoning_effort is not None:
        arguments["reasoning_effort"] = reasoning_effort
    if response_schema is not None:
        arguments["response_format"] = response_format(response_schema)
    return arguments


def response_format(schema: ResponseSchema) -> dict[str, Any]:
    """OpenAI's `response_format` for a schema; litellm takes the same and maps it per provider."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.name, "schema": schema.json_schema, "strict": schema.strict},
    }
