"""OpenTelemetry tracing: off unless the standard OTEL_* variables ask for it, then one trace
per response, from the web request through the run queue to the worker's upstream and MCP
calls.

On when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, or
`OTEL_TRACES_EXPORTER` names an exporter (`otlp`, `console`); `OTEL_SDK_DISABLED=true` turns
it off. The exporter is the OTLP/HTTP one, configured by its own OTEL_EXPORTER_OTLP_*
variables (or the console's). Django, psycopg, Redis and Celery are traced by their
instrumentation packages, the ASGI front (which serves the streaming views without Django's
middleware) by the ASGI one; the run's hop is carried in its run-queue message
(`carrier()` on the web, `continued()` in the worker). A WebSocket turn starts a trace of
its own (`turn_span`); the web's relay of a stream is one span recorded at its end
(`past_span`, from responses_app/api/relay_span.py).

Off, nothing here imports the SDK, the ASGI app is not wrapped, a run message carries no
context and every span helper is a `nullcontext` (`past_span` is not called): no
per-request or per-event work. On, the ASGI instrumentation wraps each connection's `send`
(its message spans left out, `wrap_asgi`); Daphne's synchronous writes
(responses_app/api/daphne_write.py) find Daphne's `send` beneath that wrapper, so traced
streams are written through as untraced ones are.
Imported by the settings module (for the log format): no Django imports at module level.
"""
import logging
import os
from contextlib import nullcontext

SERVICE_NAME = "responses-gateway"


def enabled_by_environment(environ=os.environ) -> bool:
    """Whether the standard OTEL_* variables ask for traces."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter:
        return exporter != "none"
    return bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
                or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip())


ENABLED = enabled_by_environment()
_tracer = None


def setup() -> None:
    """This process's tracer provider, exporter and instrumentations (once; no-op when off).
    Called as Django's apps are ready, before any middleware is loaded."""
    global _tracer
    if not ENABLED or _tracer is not None:
        return
    from opentelemetry import trace
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    service = os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(_exporter()))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument()
    PsycopgInstrumentor().instrument()
    # Django sets its own cursor factory on each new connection, replacing the one
    # instrument() gave it: wrap Django's, once per connection
    from django.db.backends.signals import connection_created

    connection_created.connect(_trace_django_connection, weak=False)
    RedisInstrumentor().instrument()
    CeleryInstrumentor().instrument()
    _tracer = trace.get_tracer("responses-gateway")


def _trace_django_connection(sender, connection, **_):
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor

    if sender.vendor == "postgresql":
        PsycopgInstrumentor.instrument_connection(connection.connection)


def _exporter():
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()


def active() -> bool:
    """Whether this process traces (set up and on)."""
    return _tracer is not None


def wrap_asgi(application):
    """The ASGI application with a server span per request (unchanged when off); the spans
    of each ASGI message (an SSE event each) are left out."""
    if not ENABLED:
        return application
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    return OpenTelemetryMiddleware(application, exclude_spans=["receive", "send"])


def carrier() -> dict | None:
    """The current trace context as W3C headers, for a message to another process; None
    when off."""
    if _tracer is None:
        return None
    from opentelemetry.propagate import inject

    headers: dict = {}
    inject(headers)
    return headers or None


def continued(headers: dict | None, name: str, attributes: dict):
    """A consumer span continuing the trace `headers` carried (a new trace without them);
    a nullcontext when off."""
    if _tracer is None:
        return nullcontext()
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    return _tracer.start_as_current_span(name, context=extract(headers or {}),
                                         kind=SpanKind.CONSUMER, attributes=attributes)


def client_span(name: str, attributes: dict):
    """A client span (an outgoing call) yielding the span, or a nullcontext yielding None."""
    if _tracer is None:
        return nullcontext()
    from opentelemetry.trace import SpanKind

    return _tracer.start_as_current_span(name, kind=SpanKind.CLIENT, attributes=attributes)


def turn_span(name: str, attributes: dict):
    """A server span starting a trace of its own, linked to the current span: a request
    that arrives on a long-lived connection (a WebSocket turn), its own trace as an HTTP
    request's is, the connection's span a link away. Yields the span (None when off);
    exceptions do not set its status (its owner says what failed: `failed`)."""
    if _tracer is None:
        return nullcontext()
    from opentelemetry.context import Context
    from opentelemetry.trace import Link, SpanKind, get_current_span

    connection = get_current_span().get_span_context()
    return _tracer.start_as_current_span(
        name, context=Context(), kind=SpanKind.SERVER, attributes=attributes,
        links=[Link(connection)] if connection.is_valid else None,
        record_exception=False, set_status_on_exception=False)


def failed(span, error_type: str) -> None:
    """`span`'s status an error, `error.type` saying which (OpenTelemetry's attribute)."""
    from opentelemetry.trace import StatusCode

    span.set_attribute("error.type", error_type)
    span.set_status(StatusCode.ERROR, error_type)


def past_span(name: str, start_time: int, attributes: dict, error_type: str | None) -> None:
    """A span of the current context that began at `start_time` (time.time_ns()) and ends
    now, with `attributes` (and `failed` when `error_type`): work whose attributes are
    known at its end, and which has no child (api/relay_span.py)."""
    span = _tracer.start_span(name, start_time=start_time, attributes=attributes)
    if error_type is not None:
        failed(span, error_type)
    span.end()


class TraceIdFilter(logging.Filter):
    """Adds `trace_id` (hex, or None outside a span) to every record: the log line of a
    request id then names its trace. Installed only when tracing is on."""

    def filter(self, record):
        from opentelemetry.trace import get_current_span

        context = get_current_span().get_span_context()
        record.trace_id = format(context.trace_id, "032x") if context.is_valid else None
        return True
