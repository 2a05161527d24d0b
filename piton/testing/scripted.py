"""An in-process provider that replays scripted replies: fast loop tests without HTTP.

It records every request, fails loudly on a call beyond its script, and `assert_complete()` checks
that every scripted reply was used. A reply becomes the same stream events the fake HTTP API would
send, folded by the same accumulator the Anthropic provider uses, so both fakes agree by design.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from piton.core.conversation.events import StreamEvent
from piton.core.conversation.messages import Message
from piton.core.providers import ModelRequest
from piton.core.providers.accumulate import ReplyAccumulator
from piton.testing.script import Reply, sse_events

Step = Reply | BaseException | Callable[[ModelRequest], "Reply | BaseException"]
DEFAULT_INPUT_TOKENS = 100


@dataclass(frozen=True)
class SeenRequest:
    """A request as the provider saw it; `messages` is a copy, so later appends do not show."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...]
    thinking: bool


def _attrs(data: Any) -> Any:
    """A decoded JSON event with attribute access, as the SDK delivers events."""
    if isinstance(data, dict):
        return SimpleNamespace(**{k: _attrs(v) for k, v in data.items()})
    return data


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

    def check(self) -> None:
        pass

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
        acc = ReplyAccumulator()
        for _name, data in sse_events(step, self.model, DEFAULT_INPUT_TOKENS):
            out = acc.feed(_attrs(data))
            if out is not None:
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                yield out
        yield acc.done()
