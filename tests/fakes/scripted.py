"""An in-process provider that replays scripted replies: fast loop tests without HTTP.

It records every request, fails loudly on a call beyond its script, and `assert_complete()` checks
that every scripted reply was used. It streams the same typed events the Anthropic provider does.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from core.events import MessageDone, StreamEvent, TextDelta, ThinkingDelta, ToolInputDelta, ToolUseStart
from core.messages import ContentBlock, Message, RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock
from core.providers import ModelRequest
from core.providers.accumulate import parse_tool_input
from core.usage import Usage
from tests.fakes.script import RedactedThinking, Reply, Text, Thinking, chunks

Step = Reply | BaseException | Callable[[ModelRequest], "Reply | BaseException"]


@dataclass(frozen=True)
class SeenRequest:
    """A request as the provider saw it; `messages` is a copy, so later appends do not show."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...]
    thinking: bool


class ScriptedProvider:
    def __init__(
        self, *steps: Step, model: str = "claude-sonnet-5-5", delay_s: float = 0.0, record: bool = True
    ) -> None:
        self._steps: deque[Step] = deque(steps)
        self.model = model
        self.delay_s = delay_s  # pause before each streamed event, for interrupt tests
        self.record = record  # benchmarks turn it off: copying the history each call is not the loop's cost
        self.requests: list[SeenRequest] = []
        self.closed = False

    def add(self, *steps: Step) -> None:
        self._steps.extend(steps)

    async def aclose(self) -> None:
        self.closed = True

    def assert_complete(self) -> None:
        assert not self._steps, f"{len(self._steps)} scripted step(s) were never requested"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if self.record:
            self.requests.append(
                SeenRequest(
                    request.model,
                    request.system,
                    tuple(request.messages),
                    tuple(request.tools),
                    request.thinking,
                )
            )
        if not self._steps:
            raise AssertionError("unexpected model call: the script is exhausted")
        step = self._steps.popleft()
        if callable(step) and not isinstance(step, BaseException):
            step = step(request)
        if isinstance(step, BaseException):
            raise step
        content: list[ContentBlock] = []
        errors: dict[str, str] = {}
        for block in step.blocks:
            for event in _events(block, step.chunk):
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                yield event
            if isinstance(block, Text):
                content.append(TextBlock(text=block.text))
            elif isinstance(block, Thinking):
                content.append(ThinkingBlock(thinking=block.thinking, signature=block.signature))
            elif isinstance(block, RedactedThinking):
                content.append(RedactedThinkingBlock(data=block.data))
            else:
                tool_input, error = parse_tool_input(block.json)
                if error:
                    errors[block.id] = error
                content.append(ToolUseBlock(id=block.id, name=block.name, input=tool_input))
        usage = Usage(
            input_tokens=step.input_tokens if step.input_tokens is not None else 100,
            output_tokens=step.output_tokens if step.output_tokens is not None else 10,
            cache_creation_input_tokens=step.cache_creation_input_tokens,
            cache_read_input_tokens=step.cache_read_input_tokens,
        )
        yield MessageDone(
            message=Message(role="assistant", content=content),
            usage=usage,
            stop_reason=step.effective_stop_reason,
            model=self.model,
            message_id=f"msg_{uuid.uuid4().hex[:24]}",
            input_errors=errors,
        )


def _events(block: Any, size: int) -> list[StreamEvent]:
    if isinstance(block, Text):
        return [TextDelta(c) for c in chunks(block.text, size)]
    if isinstance(block, Thinking):
        return [ThinkingDelta(c) for c in chunks(block.thinking, size)]
    if isinstance(block, RedactedThinking):
        return []
    return [
        ToolUseStart(block.id, block.name),
        *(ToolInputDelta(block.id, c) for c in chunks(block.json, size)),
    ]
