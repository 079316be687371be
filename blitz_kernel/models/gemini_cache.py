"""Gemini's explicit context cache for `gemini/` models: what blitz marks, and how it notices
that the cache could not be made (docs/providers.md#prompt-caching).

Why only the system prompt: litellm moves the first run of `cache_control`-marked messages,
with every system message and the tool declarations, into a `cachedContents` resource (found
again by a hash of that content, so the steps and turns of a session reuse it while the
instructions and tools stay the same), and sends `cachedContent` in their place. A resource
holds one fixed prefix and is billed for its storage by the hour: marking the growing history
would make a new one at every step. The system prompt and the tools are the part that is the
same for every step of a turn and usually for every turn. litellm itself leaves the mark out
when that part is under the model's minimum cacheable size (`prompt_cache_min_tokens` in its
map: 1,024 tokens for 2.5 Flash), and the request goes uncached.

The TTL bounds the storage bill: a cache that is not used again is deleted by Google when it
runs out. If creating the cache fails (a 400 because Google counts the content as too small,
a quota), the call is sent again without the mark and the model stops marking (one log line):
caching is an optimisation and never fails a turn.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

_CREATE_PATH = "vertex_ai_context_caching.py"
"""litellm's module that lists and creates cachedContents before the generation request."""
_REJECTED_STATUSES = (400, 403, 404)


def mark_prefix(messages: list[dict[str, Any]], ttl_s: int) -> list[dict[str, Any]]:
    """A copy of `messages` whose system prompt carries the cache mark with its TTL (the
    messages themselves are never changed: the direct path reuses its dicts)."""
    if not messages or messages[0].get("role") != "system":
        return messages
    mark = {"type": "ephemeral", "ttl": f"{int(ttl_s)}s"}
    system = messages[0]
    content = system.get("content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content, "cache_control": mark}]
    elif isinstance(content, list) and content:
        blocks = [*content[:-1], {**content[-1], "cache_control": mark}]
    else:
        return messages
    return [{**system, "content": blocks}, *messages[1:]]


def resend_uncached(messages: list[dict[str, Any]], error: BaseException | None) -> bool:
    """Whether a call with these messages that failed with `error` should go again without the
    mark: it carried one (`mark_prefix`), and it failed on the cache (`failed_on_cache`)."""
    content = messages[0].get("content") if messages else None
    marked = isinstance(content, list) and any(isinstance(b, dict) and b.get("cache_control") for b in content)
    return marked and error is not None and failed_on_cache(error)


def failed_on_cache(error: BaseException) -> bool:
    """Whether a failed call failed on the context cache rather than on the generation: while
    litellm listed or created the cachedContents resource (any status), or because Google
    refused the cache the request named (a 400/403/404 naming cached content, after litellm's
    own retry with a fresh one)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        trace = current.__traceback__
        while trace is not None:
            if trace.tb_frame.f_code.co_filename.endswith(_CREATE_PATH):
                return True
            trace = trace.tb_next
        status = getattr(current, "status_code", None)
        message = str(getattr(current, "message", "") or current).lower()
        if status in _REJECTED_STATUSES and "cachedcontent" in message.replace(" ", "").replace("_", ""):
            return True
        current = current.__cause__ or current.__context__
    return False
