"""A stand-in for an OpenAI-compatible server on 127.0.0.1: `POST /v1/chat/completions` streamed as
the real API streams it (`data: {chunk}` server-sent events ending with `data: [DONE]`, tool calls
by index with their arguments in pieces, usage in a last chunk without choices), answering scripted
replies (the same `reply(...)` scripts as the fake Messages API) and checking each request as the
API would: roles, a `tool` message for every tool call right after it, function tool shapes."""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from piton.testing.script import HttpError, Reply, Text, Thinking, ToolCall


def check(body: dict[str, Any]) -> str | None:
    """What the API would refuse in `body`, or None."""
    if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
        return "model and messages are required"
    waiting: set[str] = set()
    for i, message in enumerate(body["messages"]):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            return f"messages[{i}].role: {role!r} is not valid"
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return (
                    f"messages[{i}]: a 'tool' message must answer a tool call of the assistant message before"
                )
            waiting.discard(message["tool_call_id"])
            if not isinstance(message.get("content"), str):
                return f"messages[{i}].content: a tool message's content must be a string here"
            continue
        if waiting:
            return f"messages[{i}]: tool calls {sorted(waiting)} have no tool message answering them"
        if role == "assistant":
            waiting = {c["id"] for c in message.get("tool_calls") or []}
            if message.get("content") is None and not waiting:
                return f"messages[{i}]: an assistant message needs content or tool_calls"
    for tool in body.get("tools") or []:
        if tool.get("type") != "function" or "name" not in tool.get("function", {}):
            return "tools: each must be {'type': 'function', 'function': {'name', ...}}"
    return None


def _chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake",
        "choices": [{"index": index, "delta": delta, "finish_reason": finish}],
    }


def chunks_of(item: Reply, prompt_tokens: int, one_index: bool = False) -> list[dict[str, Any]]:
    """`one_index`: every tool call at index 0, a new id starting the next (as some servers do)."""
    out: list[dict[str, Any]] = [_chunk(0, {"role": "assistant", "content": ""})]
    calls = 0
    size = max(1, item.chunk)
    for block in item.blocks:
        if isinstance(block, Thinking):
            out.append(_chunk(0, {"reasoning_content": block.thinking}))
        elif isinstance(block, Text):
            out += [_chunk(0, {"content": block.text[i : i + size]}) for i in range(0, len(block.text), size)]
        elif isinstance(block, ToolCall):
            raw = block.raw_json if block.raw_json is not None else json.dumps(block.input)
            index = 0 if one_index else calls
            start = {
                "index": index,
                "id": block.id,
                "type": "function",
                "function": {"name": block.name, "arguments": ""},
            }
            out.append(_chunk(0, {"tool_calls": [start]}))
            for i in range(0, len(raw), size):
                out.append(
                    _chunk(
                        0, {"tool_calls": [{"index": index, "function": {"arguments": raw[i : i + size]}}]}
                    )
                )
            calls += 1
    finish = "length" if item.stop_reason == "max_tokens" else "tool_calls" if calls else "stop"
    out.append(_chunk(0, {}, finish))
    cached = item.cache_read_input_tokens
    usage = {
        "prompt_tokens": prompt_tokens + cached,
        "completion_tokens": item.output_tokens or 25,
        "total_tokens": prompt_tokens + cached + (item.output_tokens or 25),
        "prompt_tokens_details": {"cached_tokens": cached},
    }
    out.append({**_chunk(0, {}), "choices": [], "usage": usage})
    return out


class FakeOpenAI:
    def __init__(self, api_key: str = "test-openai") -> None:
        self.api_key = api_key
        self.bodies: list[dict[str, Any]] = []
        self.rejections: list[str] = []
        self.one_index = False  # tool calls all at index 0
        self.models: dict[str, dict[str, Any]] = {}  # what GET /v1/models/{id} tells beside the id
        self.model_lookups: list[str] = []
        self._script: deque[Reply | HttpError] = deque()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def add(self, *items: Reply | HttpError) -> FakeOpenAI:
        self._script.extend(items)
        return self

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # an API server answers at once: the events are small writes, and with Nagle's algorithm each
    # waited for the client's delayed ACK of the one before (40 ms a request)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        if status == 400:
            fake.rejections.append(message)
        self._json(status, {"error": {"message": message, "type": kind, "code": None}})

    def do_GET(self) -> None:
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        name = self.path.removeprefix("/v1/models/")
        fake.model_lookups.append(name)
        if self.path.startswith("/v1/models/") and name in fake.models:
            return self._json(
                200, {"id": name, "object": "model", "created": 0, "owned_by": "fake", **fake.models[name]}
            )
        return self._error(404, f"The model `{name}` does not exist")

    def do_POST(self) -> None:
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        fake.bodies.append(body)
        if self.path != "/v1/chat/completions":
            return self._error(404, f"Unknown path {self.path}")
        if self.headers.get("authorization") != f"Bearer {fake.api_key}":
            return self._error(401, "Incorrect API key provided", "invalid_api_key")
        if problem := check(body):
            return self._error(400, problem)
        if not fake._script:
            return self._error(400, "fake server: no scripted reply left")
        item = fake._script.popleft()
        if isinstance(item, HttpError):
            return self._error(item.status, item.message, item.error_type)
        prompt_tokens = len(json.dumps(body["messages"])) // 4
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in [*(json.dumps(c) for c in chunks_of(item, prompt_tokens, fake.one_index)), "[DONE]"]:
            frame = f"data: {chunk}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
