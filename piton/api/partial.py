"""What `--include-partial-messages` adds to a stream-json run: the Messages API's raw stream events,
rebuilt from the agent's typed deltas, as Claude Code's clients read them."""

from __future__ import annotations

import uuid
from typing import Any

from piton.core.conversation.events import MessageDone, TextDelta, ThinkingDelta, ToolInputDelta, ToolUseStart


class PartialEvents:
    """The Messages API's raw stream events, rebuilt from the agent's typed deltas: the events carry
    text, thinking and tool input as they arrive; block boundaries are inferred from a change of kind."""

    def __init__(self) -> None:
        self._started = False
        self._index = -1
        self._open: str | None = None  # kind of the open block: text | thinking | tool_use

    def reset(self) -> None:
        self._started, self._index, self._open = False, -1, None

    def _start_message(self, out: list[dict[str, Any]]) -> None:
        if self._started:
            return
        self._started = True
        message: dict[str, Any] = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "",
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        out.append({"type": "message_start", "message": message})

    def _close(self, out: list[dict[str, Any]]) -> None:
        if self._open is not None:
            out.append({"type": "content_block_stop", "index": self._index})
            self._open = None

    def _block(self, kind: str, block: dict[str, Any], out: list[dict[str, Any]]) -> None:
        self._close(out)
        self._index += 1
        self._open = kind
        out.append({"type": "content_block_start", "index": self._index, "content_block": block})

    def delta(self, event: TextDelta | ThinkingDelta | ToolUseStart | ToolInputDelta) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        self._start_message(out)
        if isinstance(event, ToolUseStart):
            self._block(
                "tool_use", {"type": "tool_use", "id": event.id, "name": event.name, "input": {}}, out
            )
            return out
        if isinstance(event, TextDelta):
            kind, delta = "text", {"type": "text_delta", "text": event.text}
            if self._open != kind:
                self._block(kind, {"type": "text", "text": ""}, out)
        elif isinstance(event, ThinkingDelta):
            kind, delta = "thinking", {"type": "thinking_delta", "thinking": event.thinking}
            if self._open != kind:
                self._block(kind, {"type": "thinking", "thinking": "", "signature": ""}, out)
        else:
            delta = {"type": "input_json_delta", "partial_json": event.partial_json}
        out.append({"type": "content_block_delta", "index": self._index, "delta": delta})
        return out

    def done(self, event: MessageDone) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        self._start_message(out)
        self._close(out)
        out.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": event.stop_reason, "stop_sequence": None},
                "usage": event.usage.to_dict(),
            }
        )
        out.append({"type": "message_stop"})
        self.reset()
        return out
