"""Folding the Messages API's stream events into one assistant reply, yielding typed deltas on the way.

Events are read by attribute (decoded JSON objects, as the SDK's models are). Tool input JSON is
parsed once, when its block closes: parsing the growing buffer on every delta costs quadratic time on
large inputs, and a malformed input must become an error the model can correct, not an exception that
kills the stream. An event that breaks the protocol itself (a delta without its delta, a block that
never started) is another matter: the reply cannot be trusted, and `MalformedEvent` says why, for the
provider to ask again.
"""

from __future__ import annotations

import json
from dataclasses import field
from typing import Any

from piton.core.conversation.events import (
    MessageDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolInputDelta,
    ToolUseStart,
)
from piton.core.conversation.messages import (
    ContentBlock,
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from piton.core.conversation.usage import Usage
from piton.core.records import record


@record
class _Partial:
    type: str
    parts: list[str] = field(default_factory=list)  # text, thinking or tool JSON, as streamed
    signature: str = ""
    data: str = ""  # redacted thinking
    id: str = ""
    name: str = ""


def _usage_update(usage: Usage, reported: Any) -> None:
    """Apply reported counts; message_delta counts are cumulative and absent ones keep their value."""
    for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = getattr(reported, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            setattr(usage, name, value)
    searches = getattr(getattr(reported, "server_tool_use", None), "web_search_requests", None)
    if isinstance(searches, int) and not isinstance(searches, bool):
        usage.web_search_requests = searches
    hour = getattr(getattr(reported, "cache_creation", None), "ephemeral_1h_input_tokens", None)
    if isinstance(hour, int) and not isinstance(hour, bool):
        usage.cache_creation_1h_input_tokens = hour
    tier = getattr(reported, "service_tier", None)
    if isinstance(tier, str) and tier:
        usage.service_tier = tier


def _search_results(block: Any) -> list[dict[str, str]]:
    """A web_search_tool_result's results as title and URL, or its error as `error`."""
    content = getattr(block, "content", None)
    if not isinstance(content, list):
        return [{"error": str(getattr(content, "error_code", None) or "unknown")}]
    found: list[dict[str, str]] = []
    for item in content:
        url, title = getattr(item, "url", None), getattr(item, "title", None)
        if isinstance(url, str):
            found.append({"title": title if isinstance(title, str) else url, "url": url})
    return found


class MalformedEvent(ValueError):
    """An event that is valid JSON but not what its type promises: the stream cannot be trusted."""


def _field(obj: Any, name: str, kind: str, types: type | tuple[type, ...] = str) -> Any:
    value = getattr(obj, name, None)
    if value is None or isinstance(value, bool) or not isinstance(value, types):
        raise MalformedEvent(f"{kind} without a valid {name}")
    return value


# which block type each delta type belongs to; deltas of other types (citations...) are not ours to keep
_DELTA_BLOCK = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "signature_delta": "thinking",
    "input_json_delta": "tool_use",
}


class ReplyAccumulator:
    """Folds one reply's events. An event missing what its type requires, or naming a block that never
    started, raises `MalformedEvent`: a reply built from it would be silently wrong."""

    def __init__(self) -> None:
        self.message_id = ""
        self.model = ""
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.complete = False  # message_stop seen
        self._started = False  # message_start seen
        self._blocks: dict[int, _Partial] = {}
        self._skipped: set[int] = set()  # blocks of types we never ask for
        self.web_results: list[dict[str, str]] = []  # of server-side searches, in the order they came
        self.request_id = ""  # the API's id for the request, from the response's headers

    def feed(self, event: Any) -> StreamEvent | None:
        kind = getattr(event, "type", None)
        if kind == "content_block_delta":
            return self._delta(_field(event, "index", kind, int), _field(event, "delta", kind, object), kind)
        if kind == "content_block_start":
            if not self._started:
                raise MalformedEvent("content_block_start before message_start")
            index = _field(event, "index", kind, int)
            if index in self._blocks or index in self._skipped:
                raise MalformedEvent(f"content_block_start for block {index}, which had started already")
            return self._start(index, _field(event, "content_block", kind, object))
        if kind == "message_start":
            message = _field(event, "message", kind, object)
            self.message_id = _field(message, "id", "message_start's message")
            self.model = _field(message, "model", "message_start's message")
            _usage_update(self.usage, getattr(message, "usage", None))
            self._started = True
        elif kind == "message_delta":
            stop_reason = getattr(_field(event, "delta", kind, object), "stop_reason", None)
            if stop_reason is not None and not isinstance(stop_reason, str):
                raise MalformedEvent("message_delta with a stop_reason that is not text")
            self.stop_reason = stop_reason
            _usage_update(self.usage, getattr(event, "usage", None))
        elif kind == "message_stop":
            if not self._started:
                raise MalformedEvent("message_stop before message_start")
            self.complete = True
        elif not isinstance(kind, str):
            raise MalformedEvent("an event without a type")
        return None  # content_block_stop, and event types newer than this code

    def _start(self, index: int, block: Any) -> StreamEvent | None:
        kind = getattr(block, "type", None)
        where = f"a {kind} block"
        if kind == "text":
            text = _field(block, "text", where)
            self._blocks[index] = _Partial("text", [text] if text else [])
        elif kind == "thinking":
            thinking = _field(block, "thinking", where)
            signature = getattr(block, "signature", None) or ""
            self._blocks[index] = _Partial("thinking", [thinking] if thinking else [], signature=signature)
        elif kind == "redacted_thinking":
            self._blocks[index] = _Partial("redacted_thinking", data=_field(block, "data", where))
        elif kind == "tool_use":
            partial = _Partial("tool_use", id=_field(block, "id", where), name=_field(block, "name", where))
            self._blocks[index] = partial
            return ToolUseStart(partial.id, partial.name)
        elif kind == "web_search_tool_result":  # a server-side search's results arrive whole
            self.web_results += _search_results(block)
            self._skipped.add(index)
        elif isinstance(kind, str):
            self._skipped.add(index)  # block types we never ask for (server tools...) are left out
        else:
            raise MalformedEvent(f"content_block_start for block {index} without a block type")
        return None

    def _delta(self, index: int, delta: Any, kind: str) -> StreamEvent | None:
        partial = self._blocks.get(index)
        if partial is None:
            if index in self._skipped:
                return None
            raise MalformedEvent(f"{kind} for block {index}, which never started")
        delta_type = getattr(delta, "type", None)
        if not isinstance(delta_type, str):
            raise MalformedEvent(f"{kind} for block {index} without a delta type")
        owner = _DELTA_BLOCK.get(delta_type)
        if owner is None:
            return None
        if owner != partial.type:
            raise MalformedEvent(f"{delta_type} for block {index}, a {partial.type} block")
        if delta_type == "text_delta":
            text = _field(delta, "text", delta_type)
            partial.parts.append(text)
            return TextDelta(text)
        if delta_type == "thinking_delta":
            thinking = _field(delta, "thinking", delta_type)
            partial.parts.append(thinking)
            return ThinkingDelta(thinking)
        if delta_type == "signature_delta":
            partial.signature = _field(delta, "signature", delta_type)
            return None
        partial_json = _field(delta, "partial_json", delta_type)
        partial.parts.append(partial_json)
        return ToolInputDelta(partial.id, partial_json)

    def done(self) -> MessageDone:
        content: list[ContentBlock] = []
        errors: dict[str, str] = {}
        for index in sorted(self._blocks):
            p = self._blocks[index]
            if p.type == "text":
                text = "".join(p.parts)
                if text:
                    content.append(TextBlock(text=text))
            elif p.type == "thinking":
                content.append(ThinkingBlock(thinking="".join(p.parts), signature=p.signature))
            elif p.type == "redacted_thinking":
                content.append(RedactedThinkingBlock(data=p.data))
            else:
                tool_input, error = parse_tool_input("".join(p.parts))
                if error is not None:
                    errors[p.id] = error
                content.append(ToolUseBlock(id=p.id, name=p.name, input=tool_input))
        return MessageDone(
            message=Message(role="assistant", content=content),
            usage=self.usage,
            stop_reason=self.stop_reason,
            model=self.model,
            message_id=self.message_id,
            input_errors=errors,
            web_results=list(self.web_results),
            request_id=self.request_id,
        )


def parse_tool_input(raw: str) -> tuple[dict[str, Any], str | None]:
    """The tool input object, or `{}` and a one-line reason when the model sent something else."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return {}, f"{e.msg} at character {e.pos}"
    except RecursionError:  # valid JSON nested deeper than Python's parser goes
        return {}, "nested too deeply to be read"
    if not isinstance(value, dict):
        return {}, f"expected a JSON object, got {type(value).__name__}"
    return value, None
