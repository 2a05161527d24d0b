"""What a fake model says: one vocabulary for the scripted provider and for an HTTP stand-in of the
Messages API (the SSE events each reply becomes)."""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count(1)
SIGNING_SECRET = "fake-api-secret"


def sign(thinking: str) -> str:
    """The signature the fake API gives a thinking block; any change to the text breaks it."""
    return "sig_" + hashlib.sha256((SIGNING_SECRET + thinking).encode()).hexdigest()[:40]


@dataclass
class Text:
    text: str


@dataclass
class Thinking:
    thinking: str

    @property
    def signature(self) -> str:
        return sign(self.thinking)


@dataclass
class RedactedThinking:
    data: str = (
        "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj"
    )


@dataclass
class ToolCall:
    name: str
    input: dict[str, Any] = field(default_factory=dict)
    raw_json: str | None = None  # sent instead of `input`, to script malformed JSON
    id: str = field(default_factory=lambda: f"toolu_{next(_ids):06d}")

    @property
    def json(self) -> str:
        return self.raw_json if self.raw_json is not None else json.dumps(self.input)


@dataclass
class SearchResults:
    """A server-side web search the reply made (Anthropic's `web_search` tool): its query, then its
    results (title and URL) or an error code."""

    query: str
    results: list[tuple[str, str]] = field(default_factory=list)
    error: str | None = None
    id: str = field(default_factory=lambda: f"srvtoolu_{next(_ids):06d}")


Block = Text | Thinking | RedactedThinking | ToolCall | SearchResults


@dataclass
class MidStreamError:
    """After `after` SSE events, an `error` event (the HTTP status already said 200)."""

    after: int
    error_type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass
class DropStream:
    """After `after` SSE events the stream ends: cleanly but without message_stop, or by a broken
    connection (no final chunk)."""

    after: int
    clean: bool = True


@dataclass
class Reply:
    blocks: list[Block]
    stop_reason: str | None = None  # default: tool_use when a tool is called, else end_turn
    input_tokens: int | None = None  # default: estimated from the request size
    output_tokens: int | None = None
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    chunk: int = 20  # characters per delta
    delay_s: float = 0.0  # pause before each SSE event
    fault: MidStreamError | DropStream | None = None

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolCall) for b in self.blocks) else "end_turn"


@dataclass
class HttpError:
    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RawSSE:
    """A recorded stream, replayed byte for byte."""

    text: str


def reply(*blocks: Block | str, **kwargs: Any) -> Reply:
    """`reply("hello")`, `reply(Thinking("..."), ToolCall("Read", {...}))`..."""
    return Reply([Text(b) if isinstance(b, str) else b for b in blocks], **kwargs)


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse_events(item: Reply, model: str, input_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events the API would send for `item`, in order."""
    usage = {
        "input_tokens": item.input_tokens if item.input_tokens is not None else input_tokens,
        "cache_creation_input_tokens": item.cache_creation_input_tokens,
        "cache_read_input_tokens": item.cache_read_input_tokens,
        "output_tokens": 1,
    }
    message: dict[str, Any] = {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message}),
        ("ping", {"type": "ping"}),
    ]
    out_text, index = 0, 0
    for block in item.blocks:
        if isinstance(block, SearchResults):
            events += _search_events(block, index)
            index += 2
            continue
        start, deltas, written = _block_start(block, item.chunk)
        out_text += written
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    return [*events, *_message_end(item, usage, out_text)]


def _block_start(
    block: Text | Thinking | RedactedThinking | ToolCall, size: int
) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """A content block's start, its deltas in chunks of `size`, and the characters it streams."""
    if isinstance(block, Text):
        deltas = [{"type": "text_delta", "text": c} for c in chunks(block.text, size)]
        return {"type": "text", "text": ""}, deltas, len(block.text)
    if isinstance(block, Thinking):
        deltas = [{"type": "thinking_delta", "thinking": c} for c in chunks(block.thinking, size)]
        deltas.append({"type": "signature_delta", "signature": block.signature})
        return {"type": "thinking", "thinking": "", "signature": ""}, deltas, len(block.thinking)
    if isinstance(block, RedactedThinking):
        return {"type": "redacted_thinking", "data": block.data}, [], 0
    deltas = [{"type": "input_json_delta", "partial_json": c} for c in chunks(block.json, size)]
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}, deltas, len(block.json)


def _message_end(item: Reply, usage: dict[str, Any], out_text: int) -> list[tuple[str, dict[str, Any]]]:
    """`message_delta` (the stop reason and the whole usage) and `message_stop`."""
    output = item.output_tokens if item.output_tokens is not None else 1 + out_text // 4
    final_usage: dict[str, Any] = dict(usage, output_tokens=output)
    if searches := sum(isinstance(b, SearchResults) for b in item.blocks):
        final_usage["server_tool_use"] = {"web_search_requests": searches}
    delta = {"stop_reason": item.effective_stop_reason, "stop_sequence": None}
    return [
        ("message_delta", {"type": "message_delta", "delta": delta, "usage": final_usage}),
        ("message_stop", {"type": "message_stop"}),
    ]


def _search_events(block: SearchResults, index: int) -> list[tuple[str, dict[str, Any]]]:
    """A server tool's call (its input streamed as JSON) and its result block, which comes whole."""
    call = {"type": "server_tool_use", "id": block.id, "name": "web_search", "input": {}}
    if block.error is not None:
        content: Any = {"type": "web_search_tool_result_error", "error_code": block.error}
    else:
        content = [
            {
                "type": "web_search_result",
                "title": title,
                "url": url,
                "encrypted_content": "enc",
                "page_age": None,
            }
            for title, url in block.results
        ]
    result = {"type": "web_search_tool_result", "tool_use_id": block.id, "content": content}
    delta = {"type": "input_json_delta", "partial_json": json.dumps({"query": block.query})}
    return [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": call}),
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ("content_block_start", {"type": "content_block_start", "index": index + 1, "content_block": result}),
        ("content_block_stop", {"type": "content_block_stop", "index": index + 1}),
    ]
