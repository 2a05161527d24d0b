"""Folding the Messages API's stream events into one assistant reply, yielding typed deltas on the way.

Events are read by attribute, as the SDK delivers them. Tool input JSON is parsed once, when its
block closes: parsing the growing buffer on every delta costs quadratic time on large inputs, and a
malformed input must become an error the model can correct, not an exception that kills the stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from piton.core.context.usage import Usage
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


@dataclass(slots=True)
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
        if value is not None:
            setattr(usage, name, int(value))


class ReplyAccumulator:
    def __init__(self) -> None:
        self.message_id = ""
        self.model = ""
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.complete = False  # message_stop seen
        self._blocks: dict[int, _Partial] = {}

    def feed(self, event: Any) -> StreamEvent | None:
        kind = event.type
        if kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        if kind == "content_block_start":
            return self._start(event.index, event.content_block)
        if kind == "message_start":
            self.message_id = event.message.id
            self.model = event.message.model
            _usage_update(self.usage, event.message.usage)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            _usage_update(self.usage, event.usage)
        elif kind == "message_stop":
            self.complete = True
        return None

    def _start(self, index: int, block: Any) -> StreamEvent | None:
        kind = block.type
        if kind == "text":
            self._blocks[index] = _Partial("text", [block.text] if block.text else [])
        elif kind == "thinking":
            self._blocks[index] = _Partial(
                "thinking", [block.thinking] if block.thinking else [], signature=block.signature or ""
            )
        elif kind == "redacted_thinking":
            self._blocks[index] = _Partial("redacted_thinking", data=block.data)
        elif kind == "tool_use":
            self._blocks[index] = _Partial("tool_use", id=block.id, name=block.name)
            return ToolUseStart(block.id, block.name)
        return None  # block types we never ask for (server tools...) are left out

    def _delta(self, index: int, delta: Any) -> StreamEvent | None:
        partial = self._blocks.get(index)
        if partial is None:
            return None
        kind = delta.type
        if kind == "text_delta":
            partial.parts.append(delta.text)
            return TextDelta(delta.text)
        if kind == "thinking_delta":
            partial.parts.append(delta.thinking)
            return ThinkingDelta(delta.thinking)
        if kind == "signature_delta":
            partial.signature = delta.signature
        elif kind == "input_json_delta":
            partial.parts.append(delta.partial_json)
            return ToolInputDelta(partial.id, delta.partial_json)
        return None

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
        )


def parse_tool_input(raw: str) -> tuple[dict[str, Any], str | None]:
    """The tool input object, or `{}` and a one-line reason when the model sent something else."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        return {}, f"{e.msg} at character {e.pos}"
    if not isinstance(value, dict):
        return {}, f"expected a JSON object, got {type(value).__name__}"
    return value, None
