"""The Gemini context-cache mark (blitz_kernel/models/gemini_cache.py): only the system prompt
carries it, on a copy, with the TTL; and a failure is taken for a cache failure only when it
came from making the cache or from Google refusing the cache, never a generation's own error."""

from __future__ import annotations

import json

from blitz_kernel.core.history import user_prompt
from blitz_kernel.models import gemini_cache
from blitz_kernel.models.openai_wire import to_openai_messages


def test_only_the_system_prompt_is_marked_on_a_copy_with_the_ttl() -> None:
    messages = to_openai_messages("be brief", [user_prompt("hi")])
    before = json.dumps(messages)
    marked = gemini_cache.mark_prefix(messages, 600)
    assert json.dumps(messages) == before  # the caller's dicts are never changed
    assert marked[0]["content"] == [
        {"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral", "ttl": "600s"}}
    ]
    assert "cache_control" not in json.dumps(marked[1:])
    no_system = [{"role": "user", "content": "hi"}]
    assert gemini_cache.mark_prefix(no_system, 300) == no_system  # nothing stable to cache


def _raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:  # noqa: BLE001 - a test builds the chain it checks
        return caught


class StatusError(Exception):
    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def test_a_refused_cache_is_a_cache_failure_and_a_rate_limit_is_not() -> None:
    marked = gemini_cache.mark_prefix(to_openai_messages("sys", [user_prompt("hi")]), 300)
    expired = StatusError(403, "CachedContent not found (or permission denied)")
    beside = StatusError(400, "CachedContent can not be used with GenerateContent request setting system_instruction")
    assert gemini_cache.resend_uncached(marked, _raised(expired))
    assert gemini_cache.resend_uncached(marked, _raised(beside))
    wrapped = StatusError(400, "litellm.BadRequestError: wrapped")
    wrapped.__cause__ = expired
    assert gemini_cache.resend_uncached(marked, wrapped)
    assert not gemini_cache.resend_uncached(marked, _raised(StatusError(429, "cachedContent quota of generation")))
    assert not gemini_cache.resend_uncached(marked, _raised(StatusError(400, "The input token count exceeds")))
    unmarked = to_openai_messages("sys", [user_prompt("hi")])
    assert not gemini_cache.resend_uncached(unmarked, _raised(expired))  # nothing to leave out
    assert not gemini_cache.resend_uncached(marked, None)
