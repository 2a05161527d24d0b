"""What a fake model says, in one vocabulary for both fakes (the HTTP API and the scripted provider)."""

from __future__ import annotations

import hashlib
import itertools
import json
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


Block = Text | Thinking | RedactedThinking | ToolCall


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
