"""An API having a bad day: every fault the fake server injects, through the real provider, the real
SDK and real HTTP (and, at the end, the real `piton -p`).

Each fault must end or recover within a bound far below the defaults (the waits here are configured
in fractions of a second), be announced with a reason before any pause, and leave a history the API
accepts, with nothing of a voided partial reply in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from piton.cli.output import StreamJsonWriter, TextWriter
from piton.cli.render import Renderer
from piton.core.conversation.events import MessageDone, Result, StreamRetry, SubagentEvent, TextDelta
from piton.core.conversation.history import is_valid, to_api_messages
from piton.core.conversation.messages import Message
from piton.core.providers import ModelRequest, ProviderError
from piton.core.providers.anthropic import AnthropicProvider
from piton.core.providers.waits import Waits, say_seconds
from piton.testing.script import DropStream, HttpError, MidStreamError, RawSSE, ToolCall, reply
from tests.cli.test_piton_command import PITON
from tests.fakes.fake_api import FakeAnthropicAPI, Malformed, NoAnswer, Reset, ScriptItem, Stall
from tests.fakes.tools import NoOp, make_agent
from tests.fakes.validate import history_problem
from tests.helpers import CEILING_S, eventually

# far below the defaults (5 s to connect, 60 s for the rest): each fault is found by the limit set for it
FAST = Waits(connect_s=0.5, response_s=0.8, idle_s=0.5, max_retry_wait_s=1.0, max_retries=2, backoff_s=0.01)
# A healthy reply must never meet a fraction-of-a-second limit meant for a fault: on a loaded machine
# it can be that slow. So only the limit a test is about is short; the others are these.
PATIENT = replace(FAST, connect_s=CEILING_S, response_s=CEILING_S, idle_s=CEILING_S)
# Piton's own limits are 60 s: a run that meets one of those instead of the limits set here, or hangs,
# ends in a TimeoutError at this ceiling. A safety net, not a measure: a loaded machine takes seconds.
UNDER_DEFAULTS_S = 50.0
LOST = "Partial answer that is lost"
WHOLE = "Whole answer."
PARTIAL = reply(LOST, chunk=5)


def provider_for(url: str, waits: Waits = PATIENT) -> AnthropicProvider:
    return AnthropicProvider(base_url=url, waits=waits)


def limits_for(fault: ScriptItem) -> Waits:
    """The short limit that finds `fault` (a stall's silence, a request left unanswered), the rest
    patient."""
    if isinstance(fault, Stall):
        return replace(PATIENT, idle_s=FAST.idle_s)
    if isinstance(fault, NoAnswer):
        return replace(PATIENT, response_s=FAST.response_s)
    return PATIENT


async def _run_agent(provider: AnthropicProvider, prompt: str) -> tuple[list[Any], list[Message]]:
    agent = make_agent(provider)
    try:
        events = [e async for e in agent.run(prompt)]
    finally:
        await provider.aclose()
    return events, agent.history


def run_agent(provider: AnthropicProvider, prompt: str = "hi") -> tuple[list[Any], list[Message], float]:
    started = time.monotonic()
    events, history = asyncio.run(asyncio.wait_for(_run_agent(provider, prompt), UNDER_DEFAULTS_S))
    return events, history, time.monotonic() - started


def retries_of(events: list[Any]) -> list[StreamRetry]:
    return [e for e in events if isinstance(e, StreamRetry)]


def assert_valid_history(history: list[Message], prompt: str = "hi") -> None:
    assert is_valid(history)
    assert history_problem(to_api_messages(history)) is None
    assert [m.role for m in history] == ["user", "assistant"] and history[0].text == prompt


# -- each fault, once, then a whole reply ---------------------------------------------------------

RECOVERED: dict[str, tuple[ScriptItem, str]] = {
    "connection-dropped": (
        reply(LOST, chunk=5, fault=DropStream(after=5, clean=False)),
        "the connection broke",
    ),
    "tcp-reset": (Reset(PARTIAL, after=5), "the connection broke (ReadError: [Errno"),
    "eof-without-message_stop": (
        reply(LOST, chunk=5, fault=DropStream(after=5)),
        "the stream ended before message_stop",
    ),
    "stall-mid-stream": (Stall(PARTIAL, after=5), "the stream was silent for 0.5 s"),
    "no-answer": (NoAnswer(), "no response within 0.8 s"),
    "delta-without-delta": (
        Malformed(PARTIAL, after=5, event={"type": "content_block_delta", "index": 0}),
        "a malformed event (content_block_delta without a valid delta)",
    ),
    "block-never-started": (
        Malformed(
            PARTIAL,
            after=5,
            event={"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "!"}},
        ),
        "a malformed event (content_block_delta for block 3, which never started)",
    ),
    "garbled-json": (
        RawSSE('event: message_start\ndata: {"type": "message_start", "message": {"id"\n\n'),
        "a garbled event (JSONDecodeError: ",
    ),
    "error-event": (reply(LOST, chunk=5, fault=MidStreamError(after=5)), "overloaded_error during the reply"),
    "529": (HttpError(529, "overloaded_error", "Overloaded"), "529 overloaded_error"),
    "500": (HttpError(500, "api_error", "Internal server error"), "500 api_error"),
    "429-retry-after-ms": (
        HttpError(429, "rate_limit_error", "Slow down", {"retry-after-ms": "150"}),
        "429 rate_limit_error",
    ),
    "408": (HttpError(408, "timeout_error", "Request timeout"), "408 timeout_error"),
}


@pytest.mark.parametrize(("fault", "reason"), RECOVERED.values(), ids=RECOVERED.keys())
def test_a_fault_is_announced_then_the_run_recovers_with_a_clean_history(
    fake_api: FakeAnthropicAPI, fault: ScriptItem, reason: str
) -> None:
    fake_api.add(fault, reply(WHOLE))
    events, history, _ = run_agent(provider_for(fake_api.base_url, limits_for(fault)))
    (retry,) = retries_of(events)
    assert reason in retry.reason
    assert (retry.attempt, retry.max_attempts) == (1, 3)
    assert 0 < retry.delay_s <= FAST.max_retry_wait_s
    result = events[-1]
    assert isinstance(result, Result) and (result.subtype, result.result) == ("success", WHOLE)
    assert_valid_history(history)
    assert history[1].text == WHOLE
    assert LOST not in json.dumps(to_api_messages(history))
    # announced before anything of the next attempt: what streams after it is the new reply alone
    after = events[events.index(retry) + 1 :]
    assert "".join(e.text for e in after if isinstance(e, TextDelta)) == WHOLE
    fake_api.assert_complete()


def test_the_wait_a_retry_after_asks_for_is_the_wait_announced_and_kept(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(HttpError(429, "rate_limit_error", "Slow down", {"retry-after": "0.4"}), reply(WHOLE))
    events, _, seconds = run_agent(provider_for(fake_api.base_url))
    (retry,) = retries_of(events)
    assert (retry.delay_s, retry.status, retry.error_type) == (0.4, 429, "rate_limit_error")
    assert seconds >= 0.4


def test_pings_keep_a_slow_reply_alive(fake_api: FakeAnthropicAPI) -> None:
    # silent for far longer than the idle limit, but pinging: slow is not dead
    fake_api.add(Stall(reply(WHOLE), after=3, seconds=1.5, ping_every=0.05))
    events, history, seconds = run_agent(
        provider_for(fake_api.base_url, replace(PATIENT, idle_s=FAST.idle_s))
    )
    assert retries_of(events) == []
    assert history[1].text == WHOLE and seconds >= 1.5


def test_a_reply_whose_body_never_ends_after_message_stop_is_kept(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(Stall(reply(WHOLE), after=99))  # every event sent, then silence instead of the end
    events, history, _ = run_agent(provider_for(fake_api.base_url, replace(PATIENT, idle_s=FAST.idle_s)))
    assert retries_of(events) == [] and history[1].text == WHOLE


def test_a_tool_call_cut_short_is_voided_whole(fake_api: FakeAnthropicAPI, tmp_path: Path) -> None:
    call = ToolCall("NoOp", {"text": "once"})
    fake_api.add(
        Stall(reply("Let me check.", call, chunk=4), after=8), reply("Let me check.", call), reply(WHOLE)
    )
    provider = provider_for(fake_api.base_url, replace(PATIENT, idle_s=FAST.idle_s))

    async def go() -> tuple[list[Any], list[Message]]:
        agent = make_agent(provider, NoOp(), cwd=tmp_path)
        try:
            return [e async for e in agent.run("hi")], agent.history
        finally:
            await provider.aclose()

    events, history = asyncio.run(asyncio.wait_for(go(), UNDER_DEFAULTS_S))
    assert len(retries_of(events)) == 1
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert [u.id for u in history[1].tool_uses] == [call.id]  # once, not twice
    assert history_problem(to_api_messages(history)) is None
    assert history[-1].text == WHOLE


def test_the_terminal_shows_the_wait_and_the_reason_and_not_the_void_reply(
    fake_api: FakeAnthropicAPI,
) -> None:
    fake_api.add(Stall(PARTIAL, after=5), reply(WHOLE))
    events, _, _ = run_agent(
        provider_for(fake_api.base_url, replace(PATIENT, idle_s=FAST.idle_s, backoff_s=0.2))
    )
    console = Console(record=True, width=100, color_system=None)
    renderer = Renderer(console)
    renderer.begin()
    for event in events:
        renderer.handle(event)
    renderer.end()
    shown = console.export_text()
    (retry,) = retries_of(events)
    assert (
        f"⎿  The stream was silent for 0.5 s: asking again in {say_seconds(retry.delay_s)} (attempt 2/3)"
        in shown
    )
    assert WHOLE in shown and "lost" not in shown


def test_a_subagents_retries_are_said_as_well(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(HttpError(529, "overloaded_error", "Overloaded", {"retry-after-ms": "30"}), reply(WHOLE))
    events, _, _ = run_agent(provider_for(fake_api.base_url))
    (retry,) = retries_of(events)
    nested = SubagentEvent("toolu_task", "agent-1", "Explore", retry)  # as the Task tool reports it
    stderr, stdout = io.StringIO(), io.StringIO()
    TextWriter(io.StringIO(), stderr, verbose=False).handle(nested)
    assert stderr.getvalue() == (
        "piton: API request for a subagent failed; retrying in 0.03 s (529 overloaded_error, attempt 2/3)\n"
    )
    StreamJsonWriter(stdout, io.StringIO(), verbose=False).handle(nested)
    line = json.loads(stdout.getvalue())
    assert (line["subtype"], line["parent_tool_use_id"], line["error_status"]) == (
        "api_retry",
        "toolu_task",
        529,
    )
    console = Console(record=True, width=100, color_system=None)
    Renderer(console).handle(nested)
    assert "Subagent: 529 overloaded_error: asking again in 0.03 s (attempt 2/3)" in console.export_text()


# -- when every attempt fails ----------------------------------------------------------------------


def stream_request() -> ModelRequest:
    return ModelRequest(model="sonnet", system="You are a test.", messages=[Message.user("hi")])


async def _drain(provider: AnthropicProvider, events: list[Any]) -> None:
    try:
        async for event in provider.stream(stream_request()):
            events.append(event)
    finally:
        await provider.aclose()


def fail(provider: AnthropicProvider) -> tuple[list[Any], ProviderError]:
    events: list[Any] = []
    with pytest.raises(ProviderError) as err:
        asyncio.run(asyncio.wait_for(_drain(provider, events), UNDER_DEFAULTS_S))
    return events, err.value


@pytest.mark.parametrize(
    ("fault", "kind", "line"),
    [
        (
            Stall(PARTIAL, after=5),
            "timeout",
            "The API stream went silent for 0.5 s (failed 3 times in a row; "
            "PITON_STREAM_IDLE_TIMEOUT_MS sets the wait)",
        ),
        (
            NoAnswer(),
            "timeout",
            "sent no response within 0.8 s (failed 3 times in a row; API_TIMEOUT_MS sets the wait)",
        ),
        (
            Malformed(PARTIAL, after=5),
            "stream",
            "The API sent a malformed event: content_block_delta without a valid delta (failed 3 times in a row)",
        ),
        (
            HttpError(503, "overloaded_error", "Overloaded"),
            "overloaded",
            "API error 503: Overloaded (failed 3 times in a row; try again later)",
        ),
    ],
    ids=["stalls", "no-answers", "malformed", "503s"],
)
def test_when_every_attempt_fails_each_retry_is_announced_and_one_line_ends_it(
    fake_api: FakeAnthropicAPI, fault: ScriptItem, kind: str, line: str
) -> None:
    fake_api.add(fault, fault, fault)
    events, error = fail(provider_for(fake_api.base_url, limits_for(fault)))
    assert [(r.attempt, r.max_attempts) for r in retries_of(events)] == [(1, 3), (2, 3)]
    assert all(r.reason for r in retries_of(events))
    assert error.kind == kind and line in str(error) and "\n" not in str(error)
    assert error.api_seconds > 0
    assert not any(isinstance(e, MessageDone) for e in events)
    fake_api.assert_complete()


def test_a_retry_after_beyond_the_cap_is_cut_to_the_cap_once_then_ends_the_run(
    fake_api: FakeAnthropicAPI,
) -> None:
    hour = HttpError(429, "rate_limit_error", "Rate limited", {"retry-after": "3600"})
    fake_api.add(hour, hour)
    events, error = fail(provider_for(fake_api.base_url))
    [retry] = retries_of(events)
    assert retry.delay_s == 1.0
    assert retry.reason == (
        "429 rate_limit_error; the API asks to wait 60 min, more than the 1 s Piton waits"
    )
    assert str(error) == (
        "API error 429: Rate limited (the API asks to wait 60 min, more than the 1 s Piton waits "
        "(PITON_MAX_RETRY_WAIT_MS); try again later)"
    )
    assert (error.kind, error.status) == ("rate_limit", 429)


def test_a_retry_after_beyond_the_cap_waits_the_cap_and_goes_on(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(HttpError(429, "rate_limit_error", "Rate limited", {"retry-after": "3600"}), reply(WHOLE))
    events, history, seconds = run_agent(provider_for(fake_api.base_url))
    [retry] = retries_of(events)
    assert retry.delay_s == 1.0 and seconds >= 1.0
    assert history[-1].text == WHOLE
    assert_valid_history(history)


def test_the_server_may_say_not_to_retry(fake_api: FakeAnthropicAPI) -> None:
    fake_api.add(HttpError(529, "overloaded_error", "Overloaded", {"x-should-retry": "false"}))
    events, error = fail(provider_for(fake_api.base_url))
    assert retries_of(events) == [] and str(error) == "API error 529: Overloaded"


def test_a_refused_connection_is_announced_and_ends_in_one_line() -> None:
    events, error = fail(provider_for(closed_port()))
    assert len(retries_of(events)) == 1  # nobody listens on this machine's port: one more try only
    assert all(r.reason.startswith("cannot connect: ConnectError: [Errno") for r in retries_of(events))
    assert error.kind == "connection" and str(error).startswith(f"Cannot reach the API at {closed_port()}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a full accept queue drops SYNs on Linux")
def test_a_connection_that_never_completes_gives_up_after_the_connect_limit() -> None:
    with unanswered_port() as url:
        events, error = fail(provider_for(url, replace(PATIENT, connect_s=FAST.connect_s)))
    assert [r.reason for r in retries_of(events)] == ["cannot connect: no connection within 0.5 s"] * 2
    assert (
        error.kind == "connection"
        and "(failed 3 times in a row; PITON_CONNECT_TIMEOUT_MS sets the wait)" in str(error)
    )


def closed_port() -> str:
    return "http://127.0.0.1:9"  # the discard port: nothing listens


@contextlib.contextmanager
def unanswered_port() -> Iterator[str]:
    """A port whose connections never complete: its listener's accept queue is full, so the kernel
    drops further handshakes instead of refusing them."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    try:
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            fillers.append(filler)
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        server.close()


# -- an interrupt ends any wait at once -----------------------------------------------------------

HOUR = 3600.0
SLOW = Waits(
    connect_s=HOUR, response_s=HOUR, idle_s=HOUR, max_retry_wait_s=HOUR, max_retries=2, backoff_s=HOUR
)


def _connecting(port: int, known: set[str], events: list[Any]) -> bool:
    """Whether a connection to `port` not among `known` is being attempted (its handshake sent and
    not answered: SYN_SENT in Linux's table of TCP sockets)."""
    return bool(_handshakes(port) - known)


def _handshakes(port: int) -> set[str]:
    """The local addresses of the sockets whose handshake with 127.0.0.1:`port` is under way."""
    rows = [row.split() for row in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return {row[1] for row in rows if row[2] == f"0100007F:{port:04X}" and row[3] == "02"}


async def _cancel_when(provider: AnthropicProvider, waiting: Callable[[list[Any]], bool]) -> None:
    """Start a stream, and once `waiting` says it waits (an hour, by SLOW), cancel it: it must end."""
    events: list[Any] = []
    task = asyncio.create_task(_drain(provider, events))
    await eventually(lambda: waiting(events) or task.done(), "wait")
    assert not task.done(), "the stream ended instead of waiting"
    task.cancel()
    await asyncio.wait({task}, timeout=CEILING_S)
    assert task.cancelled(), "the interrupt did not end the wait"


@pytest.mark.parametrize("wait", ["backoff", "stalled-read", "no-answer", "connect"])
def test_an_interrupt_ends_any_wait_at_once(fake_api: FakeAnthropicAPI, wait: str) -> None:
    def retrying(events: list[Any]) -> bool:  # the backoff's sleep follows the announcement
        return bool(retries_of(events))

    def stalled(events: list[Any]) -> bool:  # part of the reply is in, the rest is not coming
        return fake_api.moments.silences > 0 and any(isinstance(e, TextDelta) for e in events)

    def unanswered(events: list[Any]) -> bool:
        return fake_api.moments.silences > 0

    with contextlib.ExitStack() as stack:
        url, waiting = fake_api.base_url, unanswered
        if wait == "backoff":
            fake_api.add(HttpError(529, "overloaded_error", "Overloaded"))
            waiting = retrying
        elif wait == "connect":
            url = stack.enter_context(unanswered_port())
            port = int(url.rsplit(":", 1)[1])
            waiting = partial(_connecting, port, _handshakes(port))
        else:
            fake_api.add(Stall(PARTIAL, after=5, seconds=HOUR) if wait == "stalled-read" else NoAnswer(HOUR))
            waiting = stalled if wait == "stalled-read" else unanswered
        asyncio.run(_cancel_when(provider_for(url, SLOW), waiting))


# -- through `piton -p` ----------------------------------------------------------------------------


def piton(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PITON, "-p", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CEILING_S,
        check=False,
        env={**os.environ, **(env or {})},
    )


QUICK_RETRIES = {"PITON_MAX_RETRY_WAIT_MS": "100"}  # caps the backoff too: the pauses stay short
FAST_ENV = {
    **QUICK_RETRIES,
    "API_TIMEOUT_MS": "800",
    "PITON_STREAM_IDLE_TIMEOUT_MS": "500",
    "PITON_CONNECT_TIMEOUT_MS": "500",
}


def test_piton_says_on_stderr_what_it_waits_for_and_why(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(
        NoAnswer(),
        Stall(PARTIAL, after=5),
        HttpError(529, "overloaded_error", "Overloaded", {"retry-after-ms": "50"}),
        reply(WHOLE),
    )
    done = piton("q", env={**FAST_ENV, "PITON_CONNECT_TIMEOUT_MS": "fast"})
    assert (done.returncode, done.stdout) == (0, f"{WHOLE}\n")
    lines = done.stderr.splitlines()
    assert (
        lines[0]
        == "piton: PITON_CONNECT_TIMEOUT_MS='fast' is not a number of milliseconds (more than 0); using 5000"
    )
    assert lines[1] == "piton: API request failed; retrying in 0.1 s (no response within 0.8 s, attempt 2/5)"
    assert lines[2] == (
        "piton: API request failed; retrying in 0.1 s (the stream was silent for 0.5 s, attempt 3/5)"
    )
    assert lines[3] == "piton: API request failed; retrying in 0.05 s (529 overloaded_error, attempt 4/5)"
    assert len(lines) == 4
    # the session goes on from a history the API accepts, with the answer in it once
    fake_api.add(reply("again"))
    assert piton("more", "--continue").returncode == 0
    sent = fake_api.bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert LOST not in json.dumps(sent) and WHOLE in json.dumps(sent[1])


def test_piton_gives_up_in_one_line_and_exit_1_when_retries_run_out(
    fake_api: FakeAnthropicAPI, project: Path
) -> None:
    overloaded = HttpError(529, "overloaded_error", "Overloaded", {"retry-after-ms": "10"})
    fake_api.add(overloaded, overloaded)
    done = piton("q", env={**QUICK_RETRIES, "PITON_MAX_RETRIES": "1"})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        "piton: API request failed; retrying in 0.01 s (529 overloaded_error, attempt 2/2)",
        "piton: API error 529: Overloaded (failed 2 times in a row; try again later)",
    ]


def test_stream_json_reports_retries_in_claude_codes_shape(fake_api: FakeAnthropicAPI, project: Path) -> None:
    fake_api.add(HttpError(529, "overloaded_error", "Overloaded", {"retry-after-ms": "20"}), reply(WHOLE))
    done = piton("q", "--output-format", "stream-json", "--verbose", env=QUICK_RETRIES)
    assert done.returncode == 0
    lines = [json.loads(line) for line in done.stdout.splitlines()]  # every line parses
    (retry,) = [line for line in lines if line.get("subtype") == "api_retry"]
    assert retry["type"] == "system"
    assert {k: retry[k] for k in ("attempt", "max_retries", "retry_delay_ms", "error_status", "error")} == {
        "attempt": 1,
        "max_retries": 4,
        "retry_delay_ms": 20,
        "error_status": 529,
        "error": "server_error",
    }
    assert retry["reason"] == "529 overloaded_error" and retry["session_id"] == lines[0]["session_id"]
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == WHOLE


def test_a_proxys_html_error_page_is_named_by_its_title_not_printed(tmp_path: Path) -> None:
    """A gateway in front of the API answers 502 with an HTML page: the last line names the page's
    title, never its markup."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    page = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"

    class Gateway(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(502)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        done = piton("hi", env={**QUICK_RETRIES, "ANTHROPIC_BASE_URL": url})
    finally:
        server.shutdown()
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and "502 Bad Gateway (an HTML page)" in last, done.stderr
    assert "<" not in done.stderr


def test_a_local_port_nobody_listens_on_gets_one_more_try_not_a_minute() -> None:
    """A refused connection to this machine means no server runs there: one retry (a server still
    starting), then one line that says so, rather than the whole budget of backoffs."""
    with socket.socket() as probe:  # a port that was free a moment ago and is closed now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = piton("hi", env={**QUICK_RETRIES, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"})
    assert done.returncode == 1
    assert done.stderr.count("retrying in") == 1 and "attempt 2/2" in done.stderr
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("(is the local server running?) (failed 2 times in a row)")
    )
