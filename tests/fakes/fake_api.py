"""An HTTP stand-in for the Anthropic Messages API on 127.0.0.1, scripted per test.

It speaks what the real API speaks: SSE framing with `event:` lines over chunked transfer encoding,
every stream event type (pings included), and the errors a client must survive: 400s for requests
the API rejects (checked by `validate_request`, written independently of Piton's code), 401s,
injectable HTTP errors with JSON bodies and `retry-after` headers, mid-stream `error` events, and the
faults of a network or a server having a bad day: a stream cut cleanly or dropped, a connection
reset, a stream gone silent (`Stall`), a request never answered (`NoAnswer`), an event of the wrong
shape (`Malformed`), a stream paused until the test resumes it (`Hold`). Silences end when the server
stops, so no test leaves a thread waiting; a test waits for a request or a silence with
`wait_for_requests` and `wait_for_silence` instead of sleeping. Given a
`PromptCache`, the usage it reports follows the API's prompt caching rules. Deferred tools follow the
tool search rules (`tool_references.py`): a script that has the model call a deferred tool no
`tool_reference` loaded is refused, since the model never saw that tool.
"""

from __future__ import annotations

import base64
import json
import re
import socket
import ssl
import struct
import threading
import time
import traceback
import urllib.parse
import uuid
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from piton.testing.script import (
    DropStream,
    HttpError,
    MidStreamError,
    RawSSE,
    RedactedThinking,
    Reply,
    Thinking,
    ToolCall,
    sse_events,
)
from tests.fakes.cache import PromptCache
from tests.fakes.moments import Moments
from tests.fakes.tool_references import uncallable
from tests.fakes.validate import validate_request


@dataclass
class Stall:
    """The first `after` events of `reply`, then silence with the connection open for `seconds` (or
    until the server stops, which hangs up), then the rest. `ping_every`: pings during the silence,
    as the API sends while a reply is slow to come."""

    reply: Reply
    after: int
    seconds: float = 30.0
    ping_every: float | None = None


@dataclass
class NoAnswer:
    """The request is read and never answered, not even with headers, for `seconds` (or until the
    server stops); then the connection is closed."""

    seconds: float = 30.0


@dataclass
class Reset:
    """The first `after` events of `reply`, then a TCP reset (RST) instead of a close."""

    reply: Reply
    after: int


@dataclass
class Malformed:
    """`reply`'s events with `event` inserted after the first `after`: valid JSON of the wrong shape
    (a delta without its delta, a block index that never started...)."""

    reply: Reply
    after: int
    event: dict[str, Any] = field(default_factory=lambda: {"type": "content_block_delta", "index": 0})


@dataclass
class Hold:
    """`reply`, paused once the text it has sent holds each of `marks` in turn, until the test calls
    `resume()` (or the server stops, which hangs up): the test acts while the answer is unfinished."""

    reply: Reply
    marks: tuple[str, ...]


def _hold_points(events: list[tuple[str, dict[str, Any]]], marks: tuple[str, ...]) -> list[int]:
    """For each mark, how many events are sent before the pause: the first point where the text
    deltas sent so far hold the mark."""
    points, text, pending = [], "", list(marks)
    for index, (_, data) in enumerate(events, start=1):
        text += data.get("delta", {}).get("text", "") if data.get("type") == "content_block_delta" else ""
        while pending and pending[0] in text:
            points.append(index)
            pending.pop(0)
    assert not pending, f"the reply never says {pending[0]!r}"
    return points


Fault = Stall | Reset | Malformed | Hold
Answer = Reply | HttpError | RawSSE | NoAnswer | Fault
ScriptItem = Answer | Callable[[dict[str, Any]], Answer]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def _estimate_tokens(body: dict[str, Any]) -> int:
    size = len(json.dumps(body.get("messages", []))) + len(json.dumps(body.get("system", "")))
    size += len(json.dumps(body.get("tools", [])))
    return max(1, size // 4)


def _issued_content(item: Reply) -> list[dict[str, Any]]:
    """The content blocks of a reply as a client should send them back."""
    out: list[dict[str, Any]] = []
    for b in item.blocks:
        if isinstance(b, Thinking):
            out.append({"type": "thinking", "thinking": b.thinking, "signature": b.signature})
        elif isinstance(b, RedactedThinking):
            out.append({"type": "redacted_thinking", "data": b.data})
        elif isinstance(b, ToolCall):
            out.append({"type": "tool_use", "id": b.id, "name": b.name})
    return out


class FakeAnthropicAPI:
    def __init__(
        self,
        api_key: str = "test-key",
        *,
        cache: PromptCache | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.api_key = api_key
        self.tls = tls  # serves https with these server settings
        self.cache = cache  # applies the API's prompt caching rules to the usage it reports
        self.requests: list[Recorded] = []
        self.unexpected: list[Recorded] = []
        self.server_errors: list[str] = []
        self.rejections: list[str] = []  # 400 messages this server sent for invalid requests
        self.issued: dict[str, list[dict[str, Any]]] = {}  # tool_use id -> blocks of its reply
        self._script: deque[ScriptItem] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # ends every silence
        self._silent: set[threading.Thread] = set()  # handlers inside one
        self.moments = Moments()  # what the handlers tell a waiting test
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> FakeAnthropicAPI:
        self._stopping.clear()
        self.moments.start()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        if self.tls is not None:  # each connection's handshake happens at its first read, in its thread
            server.socket = self.tls.wrap_socket(
                server.socket, server_side=True, do_handshake_on_connect=False
            )
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self.moments.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            silent = list(self._silent)
        for thread in silent:
            thread.join(timeout=5)
            assert not thread.is_alive(), "a silent handler outlived the server"

    def wait_silently(
        self, seconds: float, ping: Callable[[], None] | None = None, every: float = 0.0
    ) -> bool:
        """Wait `seconds` (calling `ping` every `every` seconds); False when the server stops first."""
        thread = threading.current_thread()
        with self._lock:
            self._silent.add(thread)
        self.moments.silence_began()
        try:
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                if self._stopping.wait(min(left, every) if ping is not None else left):
                    return False
                if ping is not None and time.monotonic() < deadline:
                    ping()
            return not self._stopping.is_set()
        finally:
            with self._lock:
                self._silent.discard(thread)

    def hold(self) -> bool:
        """Pause a handler until `resume()`; False when the server stops first."""
        thread = threading.current_thread()
        with self._lock:
            self._silent.add(thread)
        try:
            return self.moments.hold()
        finally:
            with self._lock:
                self._silent.discard(thread)

    # -- for the test thread -------------------------------------------------------------------------
    def wait_for_requests(self, count: int = 1) -> None:
        """Until `count` requests have reached the server (the safety net: `CEILING_S`)."""
        self.moments.wait_until(lambda: len(self.requests) >= count, f"request number {count}")

    def wait_for_silence(self, count: int = 1) -> None:
        """Until `count` silences have begun: a `Stall` paused, a `NoAnswer` or a `Hold` reached. The
        client has its request then, and a reply that goes on no further for now."""
        self.moments.wait_until(lambda: self.moments.silences >= count, f"silence number {count}")

    def resume(self) -> None:
        """Let the reply paused by a `Hold` go on (to its next mark, or to its end)."""
        self.moments.release()

    def record(self, recorded: Recorded) -> None:
        self.requests.append(recorded)
        self.moments.changed()

    def __enter__(self) -> FakeAnthropicAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        assert isinstance(host, str), host  # getsockname() of an AF_INET socket
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    # -- scripting ---------------------------------------------------------------------------------
    def add(self, *items: ScriptItem) -> FakeAnthropicAPI:
        with self._lock:
            self._script.extend(items)
        return self

    def assert_complete(self) -> None:
        assert not self.unexpected, f"{len(self.unexpected)} request(s) beyond the script"
        assert not self._script, f"{len(self._script)} scripted response(s) never requested"

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests]

    def cached(self, item: Reply, body: dict[str, Any]) -> Reply:
        """`item` with the usage the prompt cache gives `body`, when this server keeps one and the
        script set none."""
        if self.cache is None or item.input_tokens is not None:
            return item
        with self._lock:
            usage = self.cache.apply(body)
        return replace(
            item,
            input_tokens=usage.input_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens,
        )

    def _next(self, body: dict[str, Any]) -> Answer | None:
        with self._lock:
            if not self._script:
                return None
            item = self._script.popleft()
        return item(body) if callable(item) else item


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that hangs up (an interrupt, a retry) is normal here; keep the trace for inspection
        self.fake.server_errors.append(traceback.format_exc())  # type: ignore[attr-defined]


def _error_body(error_type: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": error_type, "message": message}}).encode()


_BEDROCK = re.compile(r"^/model/(?P<model>[^/]+)/invoke(?P<stream>-with-response-stream)?$")
_VERTEX = re.compile(
    r"^(?:/v1)?/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/(?P<model>[^/:]+)"
    r":(?:streamRawPredict|rawPredict)$"
)


def _on_platform(path: str, body: dict[str, Any]) -> tuple[str, dict[str, Any], tuple[int, str, str] | None]:
    """Which API the path is (Anthropic's, Bedrock's or Vertex's), the body as Anthropic's API would
    take it (the model from the path), and the error to answer, if any."""
    if path == "/v1/messages":
        return "anthropic", body, None
    found = _BEDROCK.match(path) or _VERTEX.match(path)
    if found is None:
        return "anthropic", body, (404, "not_found_error", f"Not found: {path}")
    platform = "bedrock" if found.re is _BEDROCK else "vertex"
    if "model" in body:
        return platform, body, (400, "invalid_request_error", "model: Extra inputs are not permitted")
    if not isinstance(body.get("anthropic_version"), str) or not body["anthropic_version"]:
        return platform, body, (400, "invalid_request_error", "anthropic_version: Field required")
    body = {k: v for k, v in body.items() if k != "anthropic_version"}
    body["model"] = urllib.parse.unquote(found["model"])
    if platform == "bedrock":
        body["stream"] = bool(found["stream"])
    return platform, body, None


def _aws_frame(name: str, data: dict[str, Any]) -> bytes:
    """One event as Bedrock streams it: an AWS event-stream message whose payload carries the
    event's JSON in base64."""
    payload = json.dumps({"bytes": base64.b64encode(json.dumps(data).encode()).decode()}).encode()
    return _aws_message(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}, payload
    )


def _aws_exception(code: str, message: str) -> bytes:
    """An error in the middle of a Bedrock stream: an exception message of the event stream."""
    headers = {":exception-type": code, ":content-type": "application/json", ":message-type": "exception"}
    return _aws_message(headers, json.dumps({"message": message}).encode())


def _aws_message(fields: dict[str, str], payload: bytes) -> bytes:
    """An AWS event-stream message: a prelude with its CRC, string headers, the payload, a CRC of it all."""
    headers = b""
    for key, value in fields.items():
        headers += bytes([len(key)]) + key.encode() + b"\x07" + struct.pack(">H", len(value)) + value.encode()
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return message + struct.pack(">I", zlib.crc32(message))


_BETA_PARAMS = {"context-management-2025-06-27": "context_management"}
_SYSTEM_MESSAGES_BETA = "mid-conversation-system-2026-04-07"


def _beta_features_checked(body: dict[str, Any], beta_header: str | None) -> dict[str, Any]:
    """The body as the GA checks should see it once the betas the request names (`anthropic-beta`,
    as Claude Code sends them) have taken what they allow: the `context_management` parameter, and
    `role: "system"` messages between turns (outside the user/assistant alternation)."""
    betas = {b.strip() for b in (beta_header or "").split(",")}
    drop = {param for beta, param in _BETA_PARAMS.items() if beta in betas}
    checked = {k: v for k, v in body.items() if k not in drop}
    if _SYSTEM_MESSAGES_BETA in betas and isinstance(body.get("messages"), list):
        checked["messages"] = [m for m in body["messages"] if m.get("role") != "system"]
    return checked


def _frame(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


PING = _frame("ping", {"type": "ping"})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # an API server answers at once: the events are small writes, and with Nagle's algorithm each
    # waited for the client's delayed ACK of the one before (40 ms a request)
    disable_nagle_algorithm = True
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    @property
    def fake(self) -> FakeAnthropicAPI:
        return self.server.fake  # type: ignore[attr-defined,no-any-return]

    def _send_json(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:20]}")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def _reject(self, status: int, error_type: str, message: str) -> None:
        if status == 400:
            self.fake.rejections.append(message)
        self._send_json(status, _error_body(error_type, message))

    def _signed(self) -> bool:
        """Bedrock: an AWS SigV4 signature by the access key id `api_key` (its structure: the secret
        is not checked), or a Bedrock API key as a bearer token."""
        auth = self.headers.get("authorization", "")
        if auth.startswith("Bearer "):
            return auth.removeprefix("Bearer ") == self.fake.api_key
        sigv4 = f"AWS4-HMAC-SHA256 Credential={self.fake.api_key}/"
        return (
            auth.startswith(sigv4)
            and "/bedrock/aws4_request" in auth
            and bool(self.headers.get("x-amz-date"))
        )

    def _authorized(self) -> bool:
        auth = self.headers.get("authorization", "")
        key = (
            auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else self.headers.get("x-api-key", "")
        )
        return bool(key) and key == self.fake.api_key

    def do_GET(self) -> None:
        """`GET /v1/models/{id}` (what `piton doctor` asks): ids of the `claude-` family exist."""
        recorded = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, {})
        self.fake.record(recorded)
        path = self.path.split("?")[0]
        if not path.startswith("/v1/models/"):
            return self._reject(404, "not_found_error", f"Not found: {self.path}")
        if not self._authorized():
            return self._reject(401, "authentication_error", "invalid x-api-key")
        model = path.removeprefix("/v1/models/")
        if not model.startswith("claude-"):
            return self._reject(404, "not_found_error", f"model: {model}")
        info = {"type": "model", "id": model, "display_name": model, "created_at": "2026-01-01T00:00:00Z"}
        return self._send_json(200, json.dumps(info).encode())

    def _acceptable(self, platform: str, body: dict[str, Any], problem: tuple[int, str, str] | None) -> bool:
        """Whether the API would take this request; when not, the error is sent."""
        if problem is not None:
            self._reject(*problem)
        elif not (self._signed() if platform == "bedrock" else self._authorized()):
            self._reject(401, "authentication_error", "invalid x-api-key")
        elif platform == "anthropic" and not self.headers.get("anthropic-version"):
            self._reject(400, "invalid_request_error", "anthropic-version: header is required")
        elif invalid := validate_request(
            _beta_features_checked(body, self.headers.get("anthropic-beta")), self.fake.issued
        ):
            self._reject(400, "invalid_request_error", invalid)
        else:
            return True
        return False

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return self._reject(400, "invalid_request_error", "request body is not valid JSON")
        platform, body, problem = _on_platform(self.path.split("?")[0], body)
        recorded = Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        self.fake.record(recorded)
        if not self._acceptable(platform, body, problem):
            return None
        item = self.fake._next(body)
        if item is None:
            self.fake.unexpected.append(recorded)
            return self._reject(
                400, "invalid_request_error", "fake API: no scripted response left for this request"
            )
        scripted = getattr(item, "reply", item)  # a fault's reply, or the reply itself
        if isinstance(scripted, Reply):
            calls = [b.name for b in scripted.blocks if isinstance(b, ToolCall)]
            if refused := uncallable(body, calls):
                return self._reject(400, "invalid_request_error", refused)
        if isinstance(item, HttpError):
            return self._send_json(item.status, _error_body(item.error_type, item.message), item.headers)
        if isinstance(item, RawSSE):
            return self._stream([item.text.encode()])
        if isinstance(item, NoAnswer):
            self.fake.wait_silently(item.seconds)
            self.close_connection = True
            return None
        fault: Fault | MidStreamError | DropStream | None = None
        if isinstance(item, Stall | Reset | Malformed | Hold):
            fault, item = item, item.reply
        for block in item.blocks:
            if isinstance(block, ToolCall):
                self.fake.issued[block.id] = _issued_content(item)
        item = self.fake.cached(item, body)
        events = sse_events(item, body.get("model", "claude"), _estimate_tokens(body))
        if not body.get("stream"):
            return self._send_json(200, json.dumps(_final_message(events)).encode())
        fault = fault or item.fault
        frames, ending = _faulted_frames(events, fault, platform)
        kind = (
            "application/vnd.amazon.eventstream"
            if platform == "bedrock"
            else "text/event-stream; charset=utf-8"
        )
        self._stream(
            frames,
            ending=ending,
            delay_s=item.delay_s,
            stall=fault if isinstance(fault, Stall) else None,
            holds=_hold_points(events, fault.marks) if isinstance(fault, Hold) else [],
            content_type=kind,
        )

    def _stream(
        self,
        frames: list[bytes],
        *,
        ending: Literal["complete", "drop", "reset"] = "complete",
        delay_s: float = 0.0,
        stall: Stall | None = None,
        holds: list[int] | None = None,
        content_type: str = "text/event-stream; charset=utf-8",
    ) -> None:
        """Send `frames` as a chunked SSE body, pausing before each index in `holds` until the test
        resumes, then end it: `complete` (the final chunk), `drop` (the connection closed without
        it) or `reset` (a TCP reset)."""
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:20]}")
        self.end_headers()
        try:
            for index in range(len(frames) + 1):  # a stall may also come after the last event
                if index in (holds or []) and not self.fake.hold():
                    ending = "drop"  # the server stops: hang up rather than finish
                    break
                if stall is not None and index == min(stall.after, len(frames)):
                    ping = (lambda: self._chunk(PING)) if stall.ping_every else None
                    if not self.fake.wait_silently(stall.seconds, ping, stall.ping_every or 0.0):
                        ending = "drop"  # the server stops: hang up rather than finish
                        break
                if index == len(frames):
                    break
                if delay_s:
                    time.sleep(delay_s)
                self._chunk(frames[index])
            if ending == "reset":
                # SO_LINGER with a zero timeout makes close() send RST instead of FIN
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.close_connection = True
                self.connection.close()
            elif ending == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
            else:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except OSError:  # a broken pipe, a reset: the client went away (an interrupt, a timeout)
            self.close_connection = True

    def _chunk(self, frame: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.flush()


def _faulted_frames(
    events: list[tuple[str, dict[str, Any]]],
    fault: Fault | MidStreamError | DropStream | None,
    platform: str,
) -> tuple[list[bytes], Literal["complete", "drop", "reset"]]:
    """The frames of `events` as `fault` changes them, and how the stream ends."""
    frames = [(_aws_frame if platform == "bedrock" else _frame)(name, data) for name, data in events]
    if isinstance(fault, MidStreamError):
        error = _error_body(fault.error_type, fault.message).decode()
        last = (
            _aws_exception(fault.error_type, fault.message)
            if platform == "bedrock"
            else f"event: error\ndata: {error}\n\n".encode()
        )
        return [*frames[: fault.after], last], "complete"
    if isinstance(fault, DropStream):
        return frames[: fault.after], "complete" if fault.clean else "drop"
    if isinstance(fault, Reset):
        return frames[: fault.after], "reset"
    if isinstance(fault, Malformed):
        frames.insert(fault.after, _frame(str(fault.event.get("type", "message")), fault.event))
    return frames, "complete"


def _final_message(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """A non-streaming response body, folded from the same events."""
    message = dict(events[0][1]["message"])
    content: list[dict[str, Any]] = []
    parts: dict[int, list[str]] = {}
    for name, data in events[1:]:
        if name == "content_block_start":
            content.append(dict(data["content_block"]))
            parts[data["index"]] = []
        elif name == "content_block_delta":
            d = data["delta"]
            block = content[data["index"]]
            if d["type"] == "text_delta":
                block["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                block["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
            elif d["type"] == "input_json_delta":
                parts[data["index"]].append(d["partial_json"])
        elif name == "message_delta":
            message["stop_reason"] = data["delta"]["stop_reason"]
            message["usage"] = data["usage"]
    for index, block in enumerate(content):
        if block["type"] == "tool_use":
            block["input"] = json.loads("".join(parts[index]) or "{}")
    message["content"] = content
    return message
