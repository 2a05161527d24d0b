"""OpenTelemetry traces and metrics of a session, off unless asked for (`CLAUDE_CODE_ENABLE_TELEMETRY=1`
or `PITON_ENABLE_TELEMETRY=1`): when off, OpenTelemetry is never imported and the agent has no
observer. When on, the standard `OTEL_*` variables configure the exporters, as Claude Code's do.

Spans are made from the agent's events: one per run (`invoke_agent piton`), per model request
(`chat <model>`: tokens, cache reads and writes, cost, time to first token) and per tool call
(`execute_tool <name>`: duration, error); a subagent's run (`invoke_agent <type>`) nests under the
Task call that started it, and its requests and calls under it. Metrics use Claude Code's names
where it has them (`claude_code.token.usage`, `claude_code.cost.usage`, `claude_code.session.count`)
and Piton's for the rest (`piton.tool.calls`, `piton.compaction.count`).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import field
from typing import TYPE_CHECKING, Any

from piton import __version__
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
    MessageDone,
    Result,
    SessionStarted,
    StreamRetry,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolStarted,
    ToolUseStart,
)
from piton.core.records import record

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider

ENABLE_VARIABLES = ("CLAUDE_CODE_ENABLE_TELEMETRY", "PITON_ENABLE_TELEMETRY")
_TRUE = ("1", "true", "yes", "on")
MISSING = "telemetry is on, but OpenTelemetry is not installed: pip install 'piton-code[otel]'"


def enabled(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return any(env.get(name, "").strip().lower() in _TRUE for name in ENABLE_VARIABLES)


@record
class _Scope:
    """What is open for one agent (the main one, or a subagent by its Task call): its run span,
    its tool spans by call id, and when the reply it is waiting for first streamed."""

    run: Span | None = None
    tools: dict[str, tuple[Span, float]] = field(default_factory=dict)
    first_token: float | None = None


class Telemetry:
    """Where a session's telemetry goes: the tracer and meter providers and the instruments.
    One may serve many sessions (each gets its own `observer`)."""

    def __init__(
        self, tracer_provider: TracerProvider, meter_provider: MeterProvider, *, owned: bool = False
    ) -> None:
        self._tracer_provider, self._meter_provider = tracer_provider, meter_provider
        self._owned = owned  # providers made here are shut down (and flushed) with their session
        self.tracer = tracer_provider.get_tracer("piton", __version__)
        meter = meter_provider.get_meter("piton", __version__)
        self.tokens = meter.create_counter(
            "claude_code.token.usage", unit="tokens", description="Tokens used"
        )
        self.cost = meter.create_counter(
            "claude_code.cost.usage", unit="USD", description="Cost of the requests"
        )
        self.sessions = meter.create_counter("claude_code.session.count", description="Sessions started")
        self.tool_calls = meter.create_counter("piton.tool.calls", description="Tool calls made")
        self.compactions = meter.create_counter("piton.compaction.count", description="Compactions")

    def observer(self, session_id: str) -> SessionTelemetry:
        """What watches one session's turns (`piton.core.agent.TurnObserver`)."""
        return SessionTelemetry(self, session_id)

    def flush(self) -> None:
        """Export what is recorded; providers made here are shut down, a caller's stay open."""
        for provider in (self._tracer_provider, self._meter_provider):
            done = getattr(provider, "shutdown" if self._owned else "force_flush", None)
            if done is not None:
                done()


class SessionTelemetry:
    """One session's spans and metrics, made from its agent's events."""

    def __init__(self, telemetry: Telemetry, session_id: str) -> None:
        self.telemetry = telemetry
        self.tracer = telemetry.tracer
        self.session_id = session_id
        self._main = _Scope()
        self._subagents: dict[str, _Scope] = {}  # by the Task call's id
        telemetry.sessions.add(1, self._attributes())

    # -- TurnObserver ------------------------------------------------------------------------------
    def seen(self, event: AgentEvent) -> None:
        self._see(event, self._main, None)

    def ended(self) -> None:
        """A turn stopped without its result: close what it left open, marked as cut short."""
        from opentelemetry.trace import Status, StatusCode

        for scope in [*self._subagents.values(), self._main]:
            for span, _ in scope.tools.values():
                span.set_status(Status(StatusCode.ERROR, "interrupted"))
                span.end()
            scope.tools.clear()
            if scope.run is not None:
                scope.run.set_status(Status(StatusCode.ERROR, "interrupted"))
                scope.run.end()
                scope.run = None
        self._subagents.clear()

    def close(self) -> None:
        """The session ends: what is open closes, and what is recorded is exported."""
        self.ended()
        self.telemetry.flush()

    # -- events ------------------------------------------------------------------------------------
    def _attributes(self, **more: Any) -> dict[str, Any]:
        return {"session.id": self.session_id, "app.version": __version__, **more}

    def _see(self, event: AgentEvent, scope: _Scope, parent: Span | None) -> None:
        from opentelemetry import trace

        context = trace.set_span_in_context(parent) if parent is not None else None
        match event:
            case SessionStarted():
                if scope.run is None:
                    name = "invoke_agent piton" if parent is None else "invoke_agent"
                    scope.run = self.tracer.start_span(
                        name,
                        context=context,
                        attributes=self._attributes(**{"gen_ai.request.model": event.model}),
                    )
            case TextDelta() | ThinkingDelta() | ToolUseStart():
                if scope.first_token is None:
                    scope.first_token = time.time_ns()
            case StreamRetry():
                scope.first_token = None  # what the failed attempt streamed is void
            case MessageDone():
                self._request(event, scope, parent)
            case ToolStarted():
                under = trace.set_span_in_context(scope.run) if scope.run is not None else context
                span = self.tracer.start_span(
                    f"execute_tool {event.name}",
                    context=under,
                    attributes=self._attributes(
                        **{"gen_ai.tool.name": event.name, "gen_ai.tool.call.id": event.tool_use_id}
                    ),
                )
                scope.tools[event.tool_use_id] = (span, time.monotonic())
            case ToolFinished():
                self._tool_finished(event, scope)
            case SubagentEvent():
                self._subagent(event, scope)
            case Compacted():
                self.telemetry.compactions.add(1, self._attributes(trigger=event.trigger))
                if event.usage is not None and event.model:
                    self._count(event.usage, event.model)
            case Result():
                if scope.run is not None:
                    scope.run.set_attributes(
                        {
                            "piton.result.subtype": event.subtype,
                            "piton.num_turns": event.num_turns,
                            "piton.cost_usd": event.total_cost_usd,
                        }
                    )
                    if event.is_error:
                        from opentelemetry.trace import Status, StatusCode

                        scope.run.set_status(Status(StatusCode.ERROR, event.subtype))
                    scope.run.end()
                    scope.run = None

    def _request(self, event: MessageDone, scope: _Scope, parent: Span | None) -> None:
        from opentelemetry import trace

        end = time.time_ns()
        start = end - int(event.api_seconds * 1e9)
        owner = scope.run or parent
        usage, model = event.usage, event.model
        cost = usage.cost_usd(model)
        attributes = self._attributes(
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.response.id": event.message_id,
                "gen_ai.response.finish_reasons": [event.stop_reason or ""],
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read_input_tokens": usage.cache_read_input_tokens,
                "gen_ai.usage.cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "piton.cost_usd": cost,
            }
        )
        if scope.first_token is not None:
            # `start` counts back only the time spent waiting on the API, so the first token may
            # seem to come before it when whoever reads the events was slow: then it came at once
            attributes["piton.time_to_first_token_ms"] = max(0, scope.first_token - start) / 1e6
        scope.first_token = None
        span = self.tracer.start_span(
            f"chat {model}",
            context=trace.set_span_in_context(owner) if owner is not None else None,
            start_time=start,
            attributes=attributes,
        )
        span.end(end_time=end)
        self._count(usage, model)

    def _count(self, usage: Any, model: str) -> None:
        for kind, tokens in (
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("cacheRead", usage.cache_read_input_tokens),
            ("cacheCreation", usage.cache_creation_input_tokens),
        ):
            if tokens:
                self.telemetry.tokens.add(tokens, self._attributes(type=kind, model=model))
        self.telemetry.cost.add(usage.cost_usd(model), self._attributes(model=model))

    def _tool_finished(self, event: ToolFinished, scope: _Scope) -> None:
        opened = scope.tools.pop(event.tool_use_id, None)
        if opened is None:
            return
        span, _ = opened
        span.set_attribute("piton.tool.duration_ms", event.duration_s * 1000)
        failed = event.result.is_error
        if failed:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, (event.result.summary or "error")[:200]))
        inner = self._subagents.pop(event.tool_use_id, None)  # a Task's subagent ends with it
        if inner is not None and inner.run is not None:
            inner.run.end()
        span.end()
        self.telemetry.tool_calls.add(1, self._attributes(tool_name=event.name, success=not failed))

    def _subagent(self, event: SubagentEvent, scope: _Scope) -> None:
        """A subagent's event: its scope hangs under the Task call's span."""
        task = scope.tools.get(event.parent_tool_use_id)
        inner = self._subagents.setdefault(event.parent_tool_use_id, _Scope())
        parent = task[0] if task is not None else scope.run
        if inner.run is None and parent is not None:
            from opentelemetry import trace

            inner.run = self.tracer.start_span(
                f"invoke_agent {event.agent_type}",
                context=trace.set_span_in_context(parent),
                attributes=self._attributes(
                    **{"gen_ai.agent.name": event.agent_type, "piton.agent_id": event.agent_id}
                ),
            )
        if isinstance(event.event, Result):
            return  # the Task call's end closes it
        self._see(event.event, inner, inner.run)


def from_environment(say: Any = None) -> Telemetry | None:
    """The session's telemetry as the environment configures it; None when it is off, or when
    OpenTelemetry is not installed (said once through `say`)."""
    if not enabled():
        return None
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        if say is not None:
            say(MISSING)
        return None
    service = os.environ.get("OTEL_SERVICE_NAME") or "piton"  # OTEL_RESOURCE_ATTRIBUTES add the rest
    resource = Resource.create({"service.name": service, "service.version": __version__})
    tracer_provider = TracerProvider(resource=resource)
    span_exporter = _exporter("traces", say)
    if span_exporter is not None:
        tracer_provider.add_span_processor(BatchSpanProcessor(span_exporter))
    metric_exporter = _exporter("metrics", say)
    readers = [PeriodicExportingMetricReader(metric_exporter)] if metric_exporter is not None else []
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    return Telemetry(tracer_provider, meter_provider, owned=True)


def _exporter(signal: str, say: Any) -> Any:
    """`OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER`: otlp (the default), console or none."""
    choice = os.environ.get(f"OTEL_{signal.upper()}_EXPORTER", "otlp").split(",")[0].strip().lower()
    if choice == "none":
        return None
    if choice == "console":  # stderr: stdout is the run's answer in `piton -p`
        if signal == "traces":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            return ConsoleSpanExporter(out=sys.stderr)
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter(out=sys.stderr)
    if choice != "otlp":
        if say is not None:
            say(f"OTEL_{signal.upper()}_EXPORTER={choice}: not an exporter Piton knows (otlp, console, none)")
        return None
    protocol = os.environ.get(
        f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL",
        os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
    )
    try:
        if protocol == "grpc":
            if signal == "traces":
                from opentelemetry.exporter.otlp.proto.grpc import trace_exporter  # type: ignore[import-not-found]

                return trace_exporter.OTLPSpanExporter()
            from opentelemetry.exporter.otlp.proto.grpc import metric_exporter

            return metric_exporter.OTLPMetricExporter()
        if signal == "traces":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            return OTLPSpanExporter()
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter()
    except ImportError:
        if say is not None:
            package = "opentelemetry-exporter-otlp-proto-grpc" if protocol == "grpc" else "piton-code[otel]"
            say(f"telemetry: the OTLP exporter for {protocol} is not installed (pip install {package})")
        return None
