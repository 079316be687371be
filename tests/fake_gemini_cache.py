"""The `cachedContents` resource of the fake Gemini API (tests/fake_gemini.py): Gemini's
explicit context cache.

Why apart: the generation routes and the cache are two resources with their own rules, and a
wire test of blitz's explicit caching needs the cache to refuse what Google refuses, or a
request that the service would answer with a 400 passes here. What the service does, and this
fake with it:

- `POST /v1beta/cachedContents` takes a model (`models/<name>`, served by the project), contents,
  a system instruction, tools and a tool config, and a `ttl` (a protobuf Duration, `"300s"`) or
  an `expireTime` (not both; neither: one hour). Content under the model's minimum is refused
  with "Cached content is too small. total_token_count=N, min_total_token_count=M". The answer
  is the resource's metadata: `name` (`cachedContents/<id>`), `displayName`, `expireTime`,
  `usageMetadata.totalTokenCount`.
- `GET /v1beta/cachedContents` lists the live ones (paged by `pageSize`/`pageToken`);
  `GET`/`DELETE /v1beta/cachedContents/<id>` read or remove one. An expired or unknown one is
  403 "CachedContent not found (or permission denied)".
- `generateContent` with `cachedContent` reads the cache as the start of the prompt: the model
  must be the cache's, the request must not set `systemInstruction`, `tools` or `toolConfig`
  (they live in the cache), and `usageMetadata.cachedContentTokenCount` says what was read.

Tokens are the fake's estimate (4 characters a token). Time comes from `clock` (seconds since
the epoch), so a test expires a cache by moving the clock, not by waiting.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

DEFAULT_TTL_S = 3600.0
"""What the service keeps a cache for when the request names no ttl or expireTime."""
MIN_CACHE_TOKENS = 1024
"""The smallest content gemini-2.5-flash caches (Google's documented minimum)."""
_DURATION = re.compile(r"^(-?\d+(?:\.\d{1,9})?)s$")
_NAME = re.compile(r"^cachedContents/[a-z0-9]+$")
NOT_FOUND = "CachedContent not found (or permission denied)"
CACHE_BESIDE_FIELDS = (
    "CachedContent can not be used with GenerateContent request setting system_instruction, tools or "
    "tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request."
)


class CacheRefusal(Exception):
    """A cache request the service refuses: the HTTP status and its message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def rfc3339(seconds: float) -> str:
    """Google's timestamp form, `2026-12-02T03:04:05.123456Z`."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_rfc3339(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise CacheRefusal(
            400,
            f"Invalid value at 'cached_content.expire_time' (type.googleapis.com/google.protobuf.Timestamp), "
            f'"{text}"',
        ) from None


@dataclass
class CachedContent:
    """One cache as the service keeps it."""

    name: str
    model: str
    display_name: str
    contents: list[Any]
    system_instruction: Any
    tools: list[Any]
    tool_config: Any
    tokens: int
    create_time: float
    expire_time: float

    def metadata(self) -> dict[str, Any]:
        """What create, get and list answer (the contents themselves are never sent back)."""
        body: dict[str, Any] = {
            "name": self.name,
            "model": self.model,
            "createTime": rfc3339(self.create_time),
            "updateTime": rfc3339(self.create_time),
            "expireTime": rfc3339(self.expire_time),
            "usageMetadata": {"totalTokenCount": self.tokens},
        }
        if self.display_name:
            body["displayName"] = self.display_name
        return body


def _field(body: dict[str, Any], camel: str) -> Any:
    """A field in either spelling the service accepts (`systemInstruction`, `system_instruction`)."""
    if camel in body:
        return body[camel]
    return body.get(re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower())


class CacheStore:
    """The caches of one fake server. `min_tokens`: the smallest content it caches;
    `served`: the model names the project may use (None: any)."""

    def __init__(
        self,
        *,
        min_tokens: int = MIN_CACHE_TOKENS,
        served: set[str] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.min_tokens = min_tokens
        self.served = served
        self.clock = clock
        self._entries: dict[str, CachedContent] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.created: list[CachedContent] = []
        """Every cache created, oldest first (expired and deleted ones too)."""

    def create(
        self,
        body: Any,
        estimate: Callable[[dict[str, Any]], int],
        check_contents: Callable[[list[Any], dict[str, Any]], None],
    ) -> CachedContent:
        """Validate a create request as the service does and keep the cache."""
        if not isinstance(body, dict):
            raise CacheRefusal(400, "Invalid JSON payload received.")
        model = str(body.get("model") or "")
        if not model:
            raise CacheRefusal(400, "* CreateCachedContentRequest.cached_content.model: model is not specified")
        if not model.startswith("models/"):
            raise CacheRefusal(
                400, f'* CreateCachedContentRequest.cached_content.model: unexpected model name format "{model}"'
            )
        if self.served is not None and model.removeprefix("models/") not in self.served:
            raise CacheRefusal(
                404, f"{model} is not found for API version v1beta, or is not supported for createCachedContent."
            )
        contents = body.get("contents") or []
        system_instruction = _field(body, "systemInstruction")
        tools = body.get("tools") or []
        if not contents and system_instruction is None and not tools:
            raise CacheRefusal(400, "* CreateCachedContentRequest.cached_content: cached content is empty")
        if contents:
            check_contents(contents, {"tools": tools})
        now = self.clock()
        expire_time = self._expiry(body, now)
        tokens = estimate({"contents": contents, "systemInstruction": system_instruction, "tools": tools})
        if tokens < self.min_tokens:
            raise CacheRefusal(
                400,
                f"Cached content is too small. total_token_count={tokens}, min_total_token_count={self.min_tokens}",
            )
        cache = CachedContent(
            name=f"cachedContents/fake{next(self._ids):06d}",
            model=model,
            display_name=str(_field(body, "displayName") or ""),
            contents=contents,
            system_instruction=system_instruction,
            tools=tools,
            tool_config=_field(body, "toolConfig"),
            tokens=tokens,
            create_time=now,
            expire_time=expire_time,
        )
        with self._lock:
            self._entries[cache.name] = cache
            self.created.append(cache)
        return cache

    def _expiry(self, body: dict[str, Any], now: float) -> float:
        ttl = body.get("ttl")
        expire = _field(body, "expireTime")
        if ttl is not None and expire is not None:
            raise CacheRefusal(
                400, "* CreateCachedContentRequest.cached_content: only one of ttl and expire_time may be set"
            )
        if expire is not None:
            at = _parse_rfc3339(str(expire))
            if at <= now:
                raise CacheRefusal(
                    400, "* CreateCachedContentRequest.cached_content.expire_time: must be in the future"
                )
            return at
        if ttl is None:
            return now + DEFAULT_TTL_S
        match = _DURATION.match(str(ttl)) if isinstance(ttl, str) else None
        if match is None:
            raise CacheRefusal(
                400, f"Invalid value at 'cached_content.ttl' (type.googleapis.com/google.protobuf.Duration), \"{ttl}\""
            )
        seconds = float(match.group(1))
        if seconds <= 0:
            raise CacheRefusal(400, "* CreateCachedContentRequest.cached_content.ttl: ttl must be positive")
        return now + seconds

    def live(self, name: str) -> CachedContent:
        """The cache `name` if it exists and has not expired (else the service's 403)."""
        with self._lock:
            cache = self._entries.get(name)
            if cache is not None and cache.expire_time <= self.clock():
                del self._entries[name]
                cache = None
        if cache is None or not _NAME.match(name):
            raise CacheRefusal(403, NOT_FOUND)
        return cache

    def listing(self, page_size: int, page_token: str | None) -> dict[str, Any]:
        """One page of the live caches, oldest first (`nextPageToken` when more follow)."""
        now = self.clock()
        with self._lock:
            alive = [cache for cache in self._entries.values() if cache.expire_time > now]
        start = int(page_token) if page_token and page_token.isdigit() else 0
        page = alive[start : start + page_size]
        answer: dict[str, Any] = {}
        if page:
            answer["cachedContents"] = [cache.metadata() for cache in page]
        if start + page_size < len(alive):
            answer["nextPageToken"] = str(start + page_size)
        return answer

    def delete(self, name: str) -> None:
        self.live(name)
        with self._lock:
            self._entries.pop(name, None)

    def names(self) -> list[str]:
        """The live caches' names, oldest first."""
        now = self.clock()
        with self._lock:
            return [name for name, cache in self._entries.items() if cache.expire_time > now]


def read_cached_prompt(
    store: CacheStore, body: dict[str, Any], model: str
) -> tuple[CachedContent | None, dict[str, Any]]:
    """The cache a generation request names (None when it names none) and the request as the
    service sees it: the cache's system instruction, tools and contents first. Refuses what the
    service refuses (an unknown or expired cache, another model's cache, fields beside it)."""
    name = _field(body, "cachedContent")
    if name is None:
        return None, body
    cache = store.live(str(name))
    if cache.model != f"models/{model}":
        raise CacheRefusal(
            400,
            f"Model used by GenerateContent request (models/{model}) and CachedContent ({cache.model}) has to be the same.",
        )
    if any(_field(body, key) is not None for key in ("systemInstruction", "tools", "toolConfig")):
        raise CacheRefusal(400, CACHE_BESIDE_FIELDS)
    whole = dict(body)
    whole["contents"] = _joined(cache.contents, body.get("contents") or [])
    if cache.system_instruction is not None:
        whole["systemInstruction"] = cache.system_instruction
    if cache.tools:
        whole["tools"] = cache.tools
    return cache, whole


def _joined(cached: list[Any], sent: list[Any]) -> list[Any]:
    """The cache's contents, then the request's. A cache ends on a user turn, and the service
    takes a user turn right after it as more of that turn (Google's own example caches a
    document and asks about it in a user turn of the request), so the two are merged there."""
    if not cached or not sent:
        return [*cached, *sent]
    last, first = cached[-1], sent[0]
    if (
        isinstance(last, dict)
        and isinstance(first, dict)
        and last.get("role", "user") == first.get("role", "user") == "user"
    ):
        merged = {"role": "user", "parts": [*(last.get("parts") or []), *(first.get("parts") or [])]}
        return [*cached[:-1], merged, *sent[1:]]
    return [*cached, *sent]
