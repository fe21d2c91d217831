"""The run logs as OpenTelemetry traces: the spans of ``contreact_events.history.
trace_spans`` sent over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (issue 33).

Imported only when that endpoint is set (``open_traces``): without it no service
imports anything of OpenTelemetry. Needs the bus's ``otel`` extra
(``pip install 'contreact-bus[otel]'``). Spans go through the SDK's batch processor,
off the orchestrator's loop; an endpoint that does not answer costs the run nothing
but dropped spans, and says so in one warning, not one per batch.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from contreact_events.catalog import Event
from contreact_events.history.trace_spans import SpanBuilder, SpanRecord

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger(__name__)

EXPORT_TIMEOUT_S = 5.0
"""One OTLP request's limit, its retries included (in the processor's thread)."""
MISSING_EXTRA = (
    "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: "
    "pip install 'contreact-bus[otel]', or unset OTEL_EXPORTER_OTLP_ENDPOINT"
)


class RunTraces:
    """What a service calls: ``seen`` for a log read again (learns what is open),
    ``written`` for events just appended (sends the spans they finish)."""

    def __init__(self, exporter: SpanExporter, service: str, *, capture_content: bool) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        self._builder = SpanBuilder(capture_content=capture_content)
        self._exporter = exporter
        self._failed = False
        self._processor = BatchSpanProcessor(exporter)
        self._resource = Resource.create({"service.name": service})
        self._scope = InstrumentationScope("contreact")

    def seen(self, events: Sequence[Event]) -> None:
        try:
            self._builder.reset(events)
        except Exception as exc:  # a view of the log: never in the way of a run
            self._broken(exc)

    def written(self, events: Sequence[Event]) -> None:
        try:
            for record in self._builder.feed(events):
                self._processor.on_end(self._span(record))
        except Exception as exc:
            self._broken(exc)

    def _broken(self, exc: Exception) -> None:
        if not self._failed:
            self._failed = True
            log.warning(
                "traces: spans could not be made (%s: %s); runs go on", type(exc).__name__, exc
            )

    @property
    def failed_exports(self) -> int:
        """Batches the endpoint did not take (each dropped)."""
        return int(getattr(self._exporter, "failures", 0))

    def flush(self) -> None:
        """Send every span given so far now (the processor sends on its own schedule)."""
        self._processor.force_flush()

    def close(self) -> None:
        """Send what is queued (bounded by the export timeout) and stop."""
        self._processor.shutdown()  # type: ignore[no-untyped-call]

    def _span(self, record: SpanRecord) -> ReadableSpan:
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        def context(span_id: int) -> SpanContext:
            return SpanContext(record.trace_id, span_id, True, TraceFlags(TraceFlags.SAMPLED))

        parent = record.parent_id
        return ReadableSpan(
            name=record.name,
            context=context(record.span_id),
            parent=None if parent is None else context(parent),
            resource=self._resource,
            attributes=record.attributes,
            kind=SpanKind.CLIENT if record.client else SpanKind.INTERNAL,
            status=Status(StatusCode.ERROR, record.error)
            if record.error is not None
            else Status(StatusCode.OK),
            start_time=_ns(record.start.timestamp()),
            end_time=_ns(record.end.timestamp()),
            instrumentation_scope=self._scope,
        )


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def traces_url(endpoint: str) -> str:
    """The signal's path under the base endpoint, as the OTLP exporter spec says."""
    return endpoint.rstrip("/") + "/v1/traces"


def open_traces(
    endpoint: str | None,
    service: str,
    *,
    capture_content: bool = False,
    timeout_s: float = EXPORT_TIMEOUT_S,
) -> RunTraces | None:
    """None when no endpoint is set (and nothing of OpenTelemetry is imported); else
    the service's traces. Raises ``RuntimeError`` with ``MISSING_EXTRA`` when the extra
    is not installed."""
    if not endpoint:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise RuntimeError(MISSING_EXTRA) from None
    # The exporter's own messages (one per failed batch and retry) give way to the
    # single warning of ``_WarnOnce``.
    logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)
    url = traces_url(endpoint)
    inner = OTLPSpanExporter(endpoint=url, timeout=timeout_s)
    return RunTraces(_warn_once(inner, url), service, capture_content=capture_content)


def _warn_once(inner: SpanExporter, url: str) -> SpanExporter:
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class WarnOnce(SpanExporter):
        """The OTLP exporter, saying once (not per batch) that the endpoint fails."""

        warned = False
        failures = 0

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            try:
                result = inner.export(spans)
                problem = "it refused or did not take the spans"
            except Exception as exc:  # the run goes on whatever the exporter does
                result, problem = SpanExportResult.FAILURE, f"{type(exc).__name__}: {exc}"
            if result is not SpanExportResult.SUCCESS:
                WarnOnce.failures += 1
            if result is not SpanExportResult.SUCCESS and not WarnOnce.warned:
                WarnOnce.warned = True
                log.warning(
                    "traces: the OTLP endpoint %s does not answer (%s); runs go on, their "
                    "spans are dropped (said once)",
                    url,
                    problem,
                )
            return result

        def shutdown(self) -> None:
            inner.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return inner.force_flush(timeout_millis)

    return WarnOnce()
