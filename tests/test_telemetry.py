"""OpenTelemetry: the spans and metrics of real runs (the real SDK against the fake API), read with
OpenTelemetry's in-memory exporters, and through `piton -p` to an OTLP/HTTP collector on localhost."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.types import AnyValue

from piton.testing.script import Reply, Text, ToolCall
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import CEILING_S, PITON


def _metrics(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    found: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data is not None else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def attributes(span: ReadableSpan) -> Mapping[str, AnyValue]:
    assert span.attributes is not None, span.name
    return span.attributes


def number(span: ReadableSpan, key: str) -> float:
    value = attributes(span)[key]
    assert isinstance(value, int | float), (span.name, key, value)
    return value


def string(span: ReadableSpan, key: str) -> str:
    value = attributes(span)[key]
    assert isinstance(value, str), (span.name, key, value)
    return value


def start(span: ReadableSpan) -> int:
    assert span.start_time is not None, span.name
    return span.start_time


def end(span: ReadableSpan) -> int:
    assert span.end_time is not None, span.name
    return span.end_time


def test_a_run_with_a_subagent_as_spans_and_metrics(fake_api: FakeAnthropicAPI, project: Path) -> None:
    from piton import AgentOptions, query
    from piton.api import Telemetry

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    telemetry = Telemetry(tracer_provider, MeterProvider(metric_readers=[reader]))
    (project / "a.txt").write_text("hello\n")
    task = {"description": "look", "prompt": "Read a.txt.", "subagent_type": "general-purpose"}
    fake_api.add(
        Reply([Text("Delegating."), ToolCall("Task", task)], input_tokens=1000, output_tokens=50),
        Reply([ToolCall("Read", {"file_path": str(project / "a.txt")})], input_tokens=300, output_tokens=20),
        Reply([Text("It says hello.")], input_tokens=400, output_tokens=10),
        Reply(
            [ToolCall("Read", {"file_path": str(project / "missing.txt")})],
            input_tokens=1200,
            output_tokens=30,
        ),
        Reply([Text("Done.")], input_tokens=1300, output_tokens=5, cache_read_input_tokens=900),
    )

    async def run() -> list[Any]:
        return [m async for m in query("go", options=AgentOptions(cwd=project, telemetry=telemetry))]

    messages = asyncio.run(run())
    assert messages[-1].text == "Done."
    finished: list[ReadableSpan] = list(spans.get_finished_spans())
    by_id = {s.context.span_id: s for s in finished}

    def parent(span: ReadableSpan) -> ReadableSpan | None:
        return by_id.get(span.parent.span_id) if span.parent is not None else None

    print([(s.name, s.parent is None) for s in finished])
    (root,) = [s for s in finished if s.name == "invoke_agent piton"]
    assert root.parent is None and attributes(root)["piton.result.subtype"] == "success"
    main_chats = [s for s in finished if s.name.startswith("chat ") and parent(s) is root]
    assert len(main_chats) == 3
    first = attributes(main_chats[0])
    assert first["gen_ai.usage.input_tokens"] == 1000 and first["gen_ai.usage.output_tokens"] == 50
    assert number(main_chats[0], "piton.cost_usd") > 0
    assert number(main_chats[0], "piton.time_to_first_token_ms") >= 0
    assert attributes(main_chats[2])["gen_ai.usage.cache_read_input_tokens"] == 900
    (task_span,) = [s for s in finished if s.name == "execute_tool Task"]
    assert parent(task_span) is root
    (sub,) = [s for s in finished if s.name == "invoke_agent general-purpose"]
    assert parent(sub) is task_span
    sub_children = sorted(s.name.split(" ")[0] for s in finished if parent(s) is sub)
    assert sub_children == ["chat", "chat", "execute_tool"]
    reads = [s for s in finished if s.name == "execute_tool Read"]
    assert {p.name for s in reads if (p := parent(s))} == {
        "invoke_agent general-purpose",
        "invoke_agent piton",
    }
    failed = next(s for s in reads if parent(s) is root)
    assert not failed.status.is_ok and number(failed, "piton.tool.duration_ms") >= 0
    assert all(end(s) >= start(s) for s in finished)
    assert start(root) <= min(start(s) for s in finished if s is not root)

    metrics = _metrics(reader)
    tokens: dict[str, int] = {}
    for point in metrics["claude_code.token.usage"]:
        tokens[point.attributes["type"]] = tokens.get(point.attributes["type"], 0) + point.value
    assert tokens == {"input": 4200, "output": 115, "cacheRead": 900}
    cost = sum(p.value for p in metrics["claude_code.cost.usage"])
    assert cost == pytest.approx(messages[-1].total_cost_usd)
    assert sum(p.value for p in metrics["claude_code.session.count"]) == 1
    calls = {
        (p.attributes["tool_name"], p.attributes["success"]): p.value for p in metrics["piton.tool.calls"]
    }
    assert calls == {("Task", True): 1, ("Read", True): 1, ("Read", False): 1}
    assert {p.attributes["session.id"] for p in metrics["piton.tool.calls"]} == {messages[-1].session_id}


class _Collector(BaseHTTPRequestHandler):
    received: dict[str, list[bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.setdefault(self.path, []).append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, dict[str, list[bytes]]]]:
    received: dict[str, list[bytes]] = {}
    handler = type("Handler", (_Collector,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()


def test_piton_p_exports_over_otlp_when_turned_on(
    fake_api: FakeAnthropicAPI, project: Path, collector: tuple[str, dict[str, list[bytes]]]
) -> None:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    endpoint, received = collector
    fake_api.add(Reply([ToolCall("Bash", {"command": "echo hi"})]), Reply([Text("said hi")]))
    env = {
        **os.environ,
        "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "ci-agent",
    }
    done = subprocess.run(
        [PITON, "-p", "say hi", "--allowedTools", "Bash"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "said hi\n"
    traces = [ExportTraceServiceRequest.FromString(b) for b in received.get("/v1/traces", [])]
    names = {s.name for t in traces for r in t.resource_spans for ss in r.scope_spans for s in ss.spans}
    assert {"invoke_agent piton", "execute_tool Bash"} <= names
    assert len([n for n in names if n.startswith("chat ")]) == 1  # one model, two requests
    services = {
        a.value.string_value
        for t in traces
        for r in t.resource_spans
        for a in r.resource.attributes
        if a.key == "service.name"
    }
    assert services == {"ci-agent"}
    metrics = [ExportMetricsServiceRequest.FromString(b) for b in received.get("/v1/metrics", [])]
    metric_names = {
        m.name for r in metrics for rm in r.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
    }
    assert {"claude_code.token.usage", "claude_code.cost.usage", "claude_code.session.count"} <= metric_names


def test_off_by_default_and_nothing_loaded(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(Reply([Text("fine")]))
    script = (
        "import asyncio, sys\n"
        "from piton import AgentOptions, Agent\n"
        "async def main():\n"
        "    async with Agent(AgentOptions(builtin_tools=[])) as agent:\n"
        "        [m async for m in agent.query('hi')]\n"
        "        print(agent.runtime.telemetry is None, agent.runtime.agent.observer is None)\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        env={k: v for k, v in os.environ.items() if "TELEMETRY" not in k},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True True", "[]"]


def test_a_failing_observer_never_ends_the_run(project: Path) -> None:
    from piton import AgentOptions, query
    from piton.api import SystemMessage, Telemetry
    from piton.core.conversation.events import MessageDone
    from piton.telemetry import SessionTelemetry
    from piton.testing import ScriptedProvider, ToolCall, reply

    class BrokenSession(SessionTelemetry):
        def seen(self, event: Any) -> None:
            if isinstance(event, MessageDone):
                raise RuntimeError("exporter gone")
            super().seen(event)

    class Broken(Telemetry):
        def observer(self, session_id: str) -> SessionTelemetry:
            return BrokenSession(self, session_id)

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    telemetry = Broken(tracer_provider, MeterProvider(metric_readers=[InMemoryMetricReader()]))
    (project / "a.txt").write_text("x\n")
    provider = ScriptedProvider(reply(ToolCall("Read", {"file_path": str(project / "a.txt")})), reply("fine"))
    options = AgentOptions(cwd=project, provider=provider, telemetry=telemetry)

    async def run() -> list[Any]:
        return [m async for m in query("go", options=options)]

    messages = asyncio.run(run())
    assert messages[-1].subtype == "success" and messages[-1].text == "fine"
    notices = [m.data["text"] for m in messages if isinstance(m, SystemMessage) and m.subtype == "notice"]
    assert notices == ["telemetry stopped: RuntimeError: exporter gone"]
    provider.assert_complete()
    (run_span,) = spans.get_finished_spans()  # the run's span, closed when the turn ended
    assert run_span.name == "invoke_agent piton" and not run_span.status.is_ok


def test_one_telemetry_serves_sessions_apart(project: Path) -> None:
    from piton import Agent, AgentOptions
    from piton.api import Telemetry
    from piton.testing import ScriptedProvider, reply

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    telemetry = Telemetry(tracer_provider, MeterProvider(metric_readers=[reader]))

    async def both() -> list[str]:
        agents = [
            Agent(AgentOptions(cwd=project, provider=ScriptedProvider(reply(text)), telemetry=telemetry))
            for text in ("one", "two")
        ]
        for agent in agents:
            await agent.connect()
        for agent in agents:
            [m async for m in agent.query("hi")]
        ids = [agent.session_id for agent in agents]
        await agents[0].close()  # the other session's run is left alone
        await agents[1].close()
        return ids

    ids = asyncio.run(both())
    roots = [s for s in spans.get_finished_spans() if s.name == "invoke_agent piton"]
    assert sorted(string(s, "session.id") for s in roots) == sorted(ids)
    assert all(s.status.is_ok for s in roots)
    assert sum(p.value for p in _metrics(reader)["claude_code.session.count"]) == 2


def test_the_environment_turns_it_on_with_the_console_exporter(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLAUDE_CODE_ENABLE_TELEMETRY=1 with OTEL_TRACES_EXPORTER=console: the spans go to stderr when
    the session ends (stdout stays the answer's)."""
    from piton import AgentOptions, query
    from piton.testing import ScriptedProvider, reply

    monkeypatch.setenv("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")

    async def run() -> list[Any]:
        return [
            m
            async for m in query(
                "hi", options=AgentOptions(cwd=project, provider=ScriptedProvider(reply("yo")))
            )
        ]

    assert asyncio.run(run())[-1].text == "yo"
    out, err = capsys.readouterr()
    assert '"name": "invoke_agent piton"' in err and '"name": "chat ' in err
    assert "invoke_agent" not in out
