"""Google's error bodies, which litellm's Gemini path passes on only as text in its exception
message: the cause shown is Google's own message, a per-minute 429 is retried after the
`RetryInfo` delay although Google words it "You exceeded your current quota", a daily quota
is final, and a too-long prompt is a context-window error (so auto-compaction runs)."""

from __future__ import annotations

import json
from typing import Any

from blitz_kernel.errors import ContextWindowError, ModelRateLimitError
from blitz_kernel.models.litellm_errors import ErrorMapper

QUOTA = (
    "You exceeded your current quota, please check your plan and billing details. For more information "
    "on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
)


class ProviderError(Exception):
    """An exception as litellm raises it for Gemini: a status and the raw body as a bytes literal."""

    def __init__(self, status_code: int, body: dict[str, Any]) -> None:
        self.status_code = status_code
        self.message = f"litellm.RateLimitError: Vertex_ai_betaException - {json.dumps(body).encode()!r}"
        super().__init__(self.message)


def rate_limit(quota_id: str, retry_delay: str | None) -> ProviderError:
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaMetric": "generativelanguage.googleapis.com/requests", "quotaId": quota_id}],
        }
    ]
    if retry_delay is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay})
    body = {"error": {"code": 429, "message": QUOTA, "status": "RESOURCE_EXHAUSTED", "details": details}}
    return ProviderError(429, body)


MAPPER = ErrorMapper("gemini/gemini-2.5-flash", [], 600)


def test_a_per_minute_quota_is_retried_after_the_delay_google_asks_for() -> None:
    failed = MAPPER.map(rate_limit("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "26.5s"), None)
    assert isinstance(failed.error, ModelRateLimitError)
    assert failed.retryable and failed.retry_after == 26.5


def test_a_daily_quota_is_final() -> None:
    failed = MAPPER.map(rate_limit("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "26s"), None)
    assert isinstance(failed.error, ModelRateLimitError) and not failed.retryable


def test_the_cause_is_googles_message_on_one_line() -> None:
    failed = MAPPER.map(rate_limit("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", None), None)
    assert failed.error.cause == f"HTTP 429: {QUOTA}"


def test_too_long_input_is_a_context_window_error() -> None:
    message = "The input token count (1200345) exceeds the maximum number of tokens allowed (1048576)."
    error = ProviderError(400, {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}})
    failed = MAPPER.map(error, None)
    assert isinstance(failed.error, ContextWindowError) and message in failed.error.cause
