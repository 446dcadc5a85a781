"""OpenTelemetry spans of agentmem: off unless configured, and then ids and counts only.

Spans are made only when a tracer is set, and the check is one module-level lookup
(:func:`span` hands back a shared no-op context otherwise), so an unconfigured process pays
nothing and does not need the ``opentelemetry`` packages at all. A tracer is set

- by :func:`use_tracer_provider` (an application that keeps its provider to itself, a test
  with the SDK's in-memory exporter), or
- by :func:`setup`, called when a store is opened and when ``agentmem serve`` starts: it
  uses the provider the application registered globally
  (``opentelemetry.trace.set_tracer_provider``), else builds one from the standard
  ``OTEL_*`` variables when they name an exporter (``OTEL_TRACES_EXPORTER``,
  ``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), with
  ``OTEL_SERVICE_NAME`` (default ``agentmem``); ``OTEL_SDK_DISABLED=true`` keeps it off.

Attributes carry ids, counts, flags and a hash of the tenant (as the recall log line does),
never stored content or query text; an exception is recorded by its type only (its message
may quote the input).

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider  # doctest: +SKIP
    >>> use_tracer_provider(TracerProvider())  # doctest: +SKIP
    >>> with span("agentmem.write", {"agentmem.write.count": 3}):  # doctest: +SKIP
    ...     pass
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ..distribution import pip_install

__all__ = [
    "AttributeValue",
    "Attributes",
    "annotate",
    "enabled",
    "failed",
    "setup",
    "short_hash",
    "span",
    "tracer",
    "use_tracer_provider",
]

log = logging.getLogger("agentmem.telemetry")

AttributeValue = str | bool | int | float
#: Span attributes as the call sites build them (``None`` values are left out).
Attributes = dict[str, AttributeValue | None]
TRACER_NAME = "agentmem"

#: The tracer spans go to; None: tracing is off (the one check every span site makes).
_tracer: Any = None
_lock = threading.Lock()
#: The environment has been read for an exporter (it is read once per process).
_env_read = False
_NO_SPAN: contextlib.nullcontext[None] = contextlib.nullcontext()


def enabled() -> bool:
    """Whether spans are being made."""
    return _tracer is not None


def tracer() -> Any:
    """The tracer spans go to, or None."""
    return _tracer


def use_tracer_provider(provider: Any) -> None:
    """Send agentmem's spans to ``provider`` (an OpenTelemetry ``TracerProvider``); None
    turns them off."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer(TRACER_NAME)


def setup() -> bool:
    """Turn spans on when the application or the environment configured OpenTelemetry (see
    the module docstring); True if they are on. Cheap after the first call."""
    global _tracer, _env_read
    if _tracer is not None:
        return True
    env = os.environ  # the exporters read their own OTEL_EXPORTER_* settings from it too
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    try:
        from opentelemetry import trace
    except ImportError:
        return False
    with _lock:
        if _tracer is not None:
            return True
        provider = trace.get_tracer_provider()
        if not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            _tracer = provider.get_tracer(TRACER_NAME)
            return True
        if _env_read:
            return False
        _env_read = True
        built = _provider_from_env(env)
        if built is None:
            return False
        trace.set_tracer_provider(built)  # shared with the application's other libraries
        _tracer = built.get_tracer(TRACER_NAME)
        return True


def _exporter_names(env: Mapping[str, str]) -> list[str]:
    """The exporters the environment asks for ([] when it configures none)."""
    raw = env.get("OTEL_TRACES_EXPORTER", "").strip()
    if raw:
        return [n.strip().lower() for n in raw.split(",") if n.strip().lower() not in ("", "none")]
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    return ["otlp"] if endpoint else []


def _provider_from_env(env: Mapping[str, str]) -> Any:
    """A TracerProvider exporting as the environment says, or None (nothing configured, or
    the SDK is not installed: said once in the log)."""
    names = _exporter_names(env)
    if not names:
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        log.warning(
            "OTEL_* variables ask for traces but the OpenTelemetry SDK is not installed: "
            + pip_install("otel")
        )
        return None
    exporters = [e for e in (_exporter(name, env) for name in names) if e is not None]
    if not exporters:
        return None
    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read by Resource.create
    named = env.get("OTEL_SERVICE_NAME") or "service.name=" in env.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    resource = Resource.create({} if named else {"service.name": "agentmem"})
    provider = TracerProvider(resource=resource)  # flushed and shut down at exit
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    log.info("OpenTelemetry traces on: exporting to %s", ", ".join(names))
    return provider


def _exporter(name: str, env: Mapping[str, str]) -> Any:
    try:
        if name == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            return ConsoleSpanExporter()
        if name == "otlp":
            protocol = (
                env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf"
            )
            if protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                    OTLPSpanExporter as GrpcExporter,
                )

                return GrpcExporter()
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter()
    except ImportError as exc:
        log.warning("OTEL_TRACES_EXPORTER=%s needs %s: %s", name, exc.name, pip_install("otel"))
        return None
    log.warning("OTEL_TRACES_EXPORTER=%s is not an exporter agentmem knows; ignored", name)
    return None


def span(
    name: str, attributes: Mapping[str, AttributeValue | None] | None = None, **options: Any
) -> contextlib.AbstractContextManager[Any]:
    """A span named ``name`` around a block (the block gets the span, or None when tracing
    is off). ``None`` attribute values are left out; ``options`` go to
    ``start_as_current_span`` (``kind``, ``context``, ``start_time``). An exception ends the
    span with an error status naming its type, never its message."""
    tracer = _tracer
    if tracer is None:
        return _NO_SPAN
    return _span(tracer, name, attributes, options)


@contextlib.contextmanager
def _span(
    tracer: Any,
    name: str,
    attributes: Mapping[str, AttributeValue | None] | None,
    options: dict[str, Any],
) -> Iterator[Any]:
    with tracer.start_as_current_span(
        name,
        attributes=_clean(attributes),
        record_exception=False,  # it would record the message and traceback
        set_status_on_exception=False,
        **options,
    ) as current:
        try:
            yield current
        except BaseException as exc:
            failed(current, exc)
            raise


def annotate(attributes: Mapping[str, AttributeValue | None]) -> None:
    """Add ``attributes`` to the current span (nothing when tracing is off)."""
    if _tracer is None:
        return
    from opentelemetry import trace

    trace.get_current_span().set_attributes(_clean(attributes))


def failed(current: Any, error: BaseException | str) -> None:
    """Mark ``current`` (a span, or None) failed: with the exception's type (never its
    message), or with ``error`` as given (an HTTP status)."""
    if current is None:
        return
    from opentelemetry.trace import Status, StatusCode

    name = error if isinstance(error, str) else type(error).__name__
    current.set_attribute("error.type", name)
    current.set_status(Status(StatusCode.ERROR, name))


def _clean(attributes: Mapping[str, AttributeValue | None] | None) -> dict[str, AttributeValue]:
    return {k: v for k, v in (attributes or {}).items() if v is not None}


def short_hash(value: str) -> str:
    """How log lines and spans name a tenant (or a query): a short hash, not the value."""
    return hashlib.sha256(value.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]
