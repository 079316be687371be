"""litellm's, the OpenAI SDK's and the transport's exceptions as typed `ModelError`s.

One owner for three questions the adapter asks after every failed attempt: what kind of
failure was it (the typed error the engine and the fallback chain act on), may it be retried
and after how long (`Retry-After`), and what may the user see of it — causes are one short
line, and never contain an API key, because providers echo parts of a rejected key and a
chained exception is printed in full in a traceback.

litellm itself is not imported here: the adapter hands its lazily loaded module in (None on
the direct OpenAI path, where the SDK's own exceptions arrive), so this module stays
importable without paying for litellm. litellm's exception classes subclass the SDK's, so
both paths are typed by the same checks; only the cause is read differently, since litellm
has already pulled the provider's message out of the error body and the SDK has not.
"""

from __future__ import annotations

import ast
import contextlib
import email.utils
import errno
import json
import os
import re
import socket
import time
from collections.abc import Iterable
from typing import Any

from ..errors import (
    ContextWindowError,
    ModelAuthError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelTimeoutError,
    ModelUnavailableError,
)

_PREFIXES = re.compile(r"^(?:(?:litellm\.)?[A-Za-z_]*(?:Error|Exception|Timeout)(?:\s*:\s*|\s+-\s+))+")
_SECRET_PATTERNS = (
    re.compile(r"\b(sk-[A-Za-z0-9]{0,8})[A-Za-z0-9_\-]{12,}"),
    re.compile(r"(Bearer\s+)\S+", re.IGNORECASE),
)
_CONTEXT_WORDS = (
    "context length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "context_length_exceeded",
    "exceeds the maximum number of tokens",  # Gemini: "The input token count (N) exceeds the maximum ..."
)
_FINAL_WORDS = ("insufficient_quota", "exceeded your current quota", "budget")
_MAX_CAUSE = 400
_UNREACHABLE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL}


def _without_password(address: str) -> str:
    """`https://user:secret@host/v1` as `https://user:***@host/v1`."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://[^/@:]*):[^/@]*@", r"\1:***@", address, flags=re.IGNORECASE)


def _chain(exc: BaseException) -> Iterable[BaseException]:
    """The exception and everything it wraps: causes, contexts, litellm's `original_exception`."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for inner in (current.__cause__, current.__context__, getattr(current, "original_exception", None)):
            if isinstance(inner, BaseException):
                pending.append(inner)


def _environment_secrets() -> list[str]:
    """Keys litellm may have read from the environment (OPENAI_API_KEY and friends)."""
    return [
        value
        for name, value in os.environ.items()
        if len(value) >= 12 and any(word in name.upper() for word in ("KEY", "TOKEN", "SECRET"))
    ]


class AttemptFailed(Exception):
    """One attempt failed: the typed error for the user, the wait the server asked for, and
    the original exception to chain — None when its text holds a secret, because a chained
    exception is printed in full in a traceback."""

    def __init__(
        self,
        error: ModelError,
        retry_after: float | None = None,
        original: BaseException | None = None,
        *,
        final: bool | None = None,
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after
        self.original = original
        # A 429 for an exhausted quota or budget will not clear by waiting; `final` is the
        # provider's own word on that where it gives one (Google's quota details).
        if final is None:
            final = any(word in error.cause.lower() for word in _FINAL_WORDS)
        self.retryable = error.retryable and not final


def _body_message(exc: BaseException) -> str | None:
    """The provider's message in an OpenAI-style error body (`{"error": {"message": ...}}`,
    which the SDK keeps as `exc.body`), or None."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str) and message.strip():
            return message
    return None


_JSON_BODY = re.compile(r"\{.*\}", re.DOTALL)


def embedded_message(text: str) -> str | None:
    """The provider's own message when litellm quotes the raw error body in its text
    (Anthropic's `b'{"type":"error","error":{"message":…}}'`, Google's `{"error":{"message":…}}`,
    Ollama's `{"error":"…"}`), or None when there is no such body."""
    found = _JSON_BODY.search(text)
    if found is None:
        return None
    try:
        data = json.loads(found.group(0))
    except ValueError:
        return None
    inner = data.get("error", data) if isinstance(data, dict) else None
    message = inner.get("message") if isinstance(inner, dict) else inner
    return message if isinstance(message, str) and message.strip() else None


_BYTES_LITERAL = re.compile(r"b'(\{.*\}|\[.*\])'", re.DOTALL)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def embedded_error(exc: BaseException) -> dict[str, Any] | None:
    """The `{"error": {...}}` object of a provider's answer that litellm kept only as text in
    its message (its Gemini path puts the raw body there, often as a bytes literal), or None."""
    for link in _chain(exc):
        for text in (getattr(link, "message", None), str(link)):
            if isinstance(text, str) and '"error"' in text:
                found = _parse_error_text(text)
                if found is not None:
                    return found
    return None


def _parse_error_text(text: str) -> dict[str, Any] | None:
    literal = _BYTES_LITERAL.search(text)
    candidate = text[min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=0) :]
    if literal is not None:
        with contextlib.suppress(ValueError, SyntaxError):
            candidate = ast.literal_eval("b'" + literal.group(1) + "'").decode("utf-8", "replace")
    try:
        value, _ = json.JSONDecoder().raw_decode(candidate.strip())
    except ValueError:
        return None
    if isinstance(value, list) and value:
        value = value[0]  # Google's streaming endpoints wrap the error in a list
    error = value.get("error") if isinstance(value, dict) else None
    return error if isinstance(error, dict) and isinstance(error.get("message"), str) else None


def google_retry(error: dict[str, Any]) -> tuple[float | None, bool | None]:
    """What a Google error's details say about retrying: the `RetryInfo` delay, and whether
    the quota that ran out is a daily one (final) or a per-minute one that a wait clears
    (Google words both "You exceeded your current quota"). None where the details are silent."""
    delay: float | None = None
    final: bool | None = None
    for detail in error.get("details") or []:
        if not isinstance(detail, dict):
            continue
        kind = str(detail.get("@type", ""))
        if kind.endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match is not None:
                delay = float(match.group(1))
                final = False if final is None else final
        elif kind.endswith("google.rpc.QuotaFailure"):
            quota_ids = [str(v.get("quotaId", "")) for v in detail.get("violations") or [] if isinstance(v, dict)]
            if any("PerDay" in quota for quota in quota_ids):
                final = True
            elif quota_ids and final is None:
                final = False
    return delay, final


def status_of(exc: BaseException) -> int | None:
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


class ErrorMapper:
    """Turns litellm/OpenAI SDK/transport exceptions into typed ModelErrors.

    The cause is short — HTTP status and the provider's own message without litellm's class
    prefixes — and never contains the API key (providers echo parts of a rejected key).
    """

    def __init__(
        self, model: str, secrets: Iterable[str | None], timeout: float | None, api_base: str | None = None
    ) -> None:
        self.model = model
        self.api_base = api_base
        self.timeout_cause = f"no answer within {timeout:g} s (request_timeout)" if timeout is not None else "timed out"
        self._secrets = [secret for secret in secrets if secret and len(secret) >= 6]

    def redact(self, text: str) -> str:
        for secret in [*self._secrets, *_environment_secrets()]:
            text = text.replace(secret, "***")
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub(r"\1***", text)
        return text

    def cause(self, exc: BaseException, status: int | None = None, *, body: bool = False) -> str:
        """`body`: prefer the provider's own message from the SDK's parsed error body."""
        message = _body_message(exc) if body else None
        message = message or str(getattr(exc, "message", None) or exc or type(exc).__name__)
        message = embedded_message(message) or message
        message = _PREFIXES.sub("", message.strip()).strip()
        message = " ".join(message.split())  # one line
        if len(message) > _MAX_CAUSE:
            message = message[:_MAX_CAUSE] + "…"
        message = self.redact(message)
        return f"HTTP {status}: {message}" if status else message

    def map(self, exc: BaseException, litellm: Any, *, mid_stream: bool = False) -> AttemptFailed:
        """The typed failure of one attempt; `litellm` is the adapter's loaded module, or None
        on the direct path."""
        import openai  # loaded by either path already; imported here so this module stays light

        original = getattr(exc, "original_exception", None)
        if (
            litellm is not None
            and isinstance(exc, litellm.exceptions.MidStreamFallbackError)
            and isinstance(original, Exception)
        ):
            # litellm wraps mid-stream failures; the original says what really happened
            return self.map(original, litellm, mid_stream=mid_stream)
        # litellm gives connection errors and timeouts made-up statuses (500, 408): not shown
        status = None if isinstance(exc, openai.APIConnectionError) else status_of(exc)
        refused = None if mid_stream else self._not_connected(exc, openai)
        error = refused or self._typed(exc, status, litellm, openai, mid_stream)
        retry_after = retry_after_seconds(exc) if error.retryable else None
        final = None
        embedded = embedded_error(exc) if error.retryable else None
        if embedded is not None:
            delay, final = google_retry(embedded)
            retry_after = delay if retry_after is None else retry_after
        return AttemptFailed(error, retry_after, None if self._mentions_secret(exc) else exc, final=final)

    def _not_connected(self, exc: BaseException, openai: Any) -> ModelConnectionError | None:
        """A connection that was never made (refused, unknown host, no route), found anywhere
        in the chain litellm builds around it (it reports one as "HTTP 500: Connection error.")."""
        address = self.api_base
        reason = None
        for link in _chain(exc):
            if isinstance(link, openai.APIConnectionError) and address is None:
                url = getattr(getattr(link, "request", None), "url", None)
                address = f"{url.scheme}://{url.netloc.decode()}" if url is not None else None
            if isinstance(link, ConnectionRefusedError):
                reason = "connection refused"
            elif isinstance(link, socket.gaierror):
                reason = "host not found"
            elif isinstance(link, OSError) and link.errno in _UNREACHABLE and reason is None:
                reason = (link.strerror or "unreachable").lower()
        if reason is None:
            return None
        return ModelConnectionError(self.model, self.redact(_without_password(address or "the provider")), reason)

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

    def _typed(self, exc: BaseException, status: int | None, litellm: Any, openai: Any, mid_stream: bool) -> ModelError:
        cause = self.cause(exc, status, body=litellm is None)
        if (litellm is not None and isinstance(exc, litellm.exceptions.ContextWindowExceededError)) or (
            status == 400 and any(word in cause.lower() for word in _CONTEXT_WORDS)
        ):
            return ContextWindowError(self.model, cause)
        if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)) or status in (401, 403):
            return ModelAuthError(self.model, cause)
        if isinstance(exc, openai.NotFoundError) or status == 404:
            return ModelNotFoundError(self.model, cause)
        if isinstance(exc, openai.RateLimitError) or status == 429:
            return ModelRateLimitError(self.model, cause)
        if isinstance(exc, (openai.APITimeoutError, TimeoutError)) or status in (408, 504):  # litellm: 504 is a Timeout
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
