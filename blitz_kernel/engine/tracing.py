"""OpenTelemetry tracing.

Each turn is a span at the root of its own trace, linked to the session's previous turn
(`link.type = previous_turn`); model calls and tool calls are its children; side questions and
compactions get spans of their own. No prompt or tool content is recorded unless
`telemetry.include_content` is on. With telemetry off nothing is created or exported: the
span helpers hand out one shared non-recording span without touching OpenTelemetry at all
(a no-op tracer still attaches and detaches a context per span: 16 a turn on the hot path).

The workspace owns its own TracerProvider (never the global one), so a user's own tracing setup
in the same kernel is left alone.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import INVALID_SPAN, Link, Span, SpanContext, Status, StatusCode

from ..errors import ConfigError

TRACER_NAME = "blitz_kernel"
_NO_SPAN: contextlib.AbstractContextManager[Span] = contextlib.nullcontext(INVALID_SPAN)
"""What every span helper returns with telemetry off (reusable: nullcontext holds no state)."""


class Telemetry:
    """Spans for one workspace; a disabled Telemetry hands out no-op spans."""

    def __init__(
        self,
        *,
        enabled: bool,
        exporter: str = "console",
        include_content: bool = False,
        redact: Callable[[str], str] = str,
    ) -> None:
        self.enabled = enabled
        self.include_content = include_content
        self._redact = redact
        """Secrets out of any content that is recorded."""
        self.memory: InMemorySpanExporter | None = None
        self._provider: TracerProvider | None = None
        if enabled:
            self._provider = TracerProvider()
            self._provider.add_span_processor(SimpleSpanProcessor(self._exporter(exporter)))
        self._tracer = self._provider.get_tracer(TRACER_NAME) if self._provider else trace.NoOpTracer()

    def _exporter(self, name: str) -> SpanExporter:
        if name == "memory":
            self.memory = InMemorySpanExporter()
            return self.memory
        if name == "console":
            # the kernel's own stderr (its log), never the cell: spans are not the user's output
            return ConsoleSpanExporter(out=sys.__stderr__ or sys.stderr)
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ConfigError(
                "telemetry.exporter",
                "configuration",
                "otlp needs the package opentelemetry-exporter-otlp-proto-http (pip install it)",
            ) from None
        return OTLPSpanExporter()

    def root_span(
        self, name: str, attributes: dict[str, Any], previous: SpanContext | None = None
    ) -> contextlib.AbstractContextManager[Span]:
        """A span at the root of a new trace (a turn, an aside, a compaction), linked to
        `previous` when given."""
        if self._provider is None:
            return _NO_SPAN
        return self._root_span(name, attributes, previous)

    @contextlib.contextmanager
    def _root_span(self, name: str, attributes: dict[str, Any], previous: SpanContext | None) -> Iterator[Span]:
        links = [Link(previous, {"link.type": "previous_turn"})] if previous is not None else []
        with self._tracer.start_as_current_span(
            name,
            context=otel_context.Context(),
            attributes=_clean(attributes),
            links=links,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield span

    def child_span(self, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager[Span]:
        """A model or tool call under the current turn span."""
        if self._provider is None:
            return _NO_SPAN
        return self._child_span(name, attributes)

    @contextlib.contextmanager
    def _child_span(self, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
        with self._tracer.start_as_current_span(
            name, attributes=_clean(attributes), record_exception=False, set_status_on_exception=False
        ) as span:
            yield span

    def content(self, text: str) -> str | None:
        """`text` (secrets redacted) when content may be recorded, else None (the attribute
        is left out)."""
        return self._redact(text) if self.include_content else None

    def shutdown(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()


def mark_error(span: Span, message: str) -> None:
    span.set_status(Status(StatusCode.ERROR, message))


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry takes no None values."""
    return {key: value for key, value in attributes.items() if value is not None}
