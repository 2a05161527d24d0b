"""A scripted provider whose first replies pause mid-stream until the test lets them go on: the test
acts while the model is surely at work (types a message, a command, Esc), then releases the reply,
instead of pacing the stream and hoping the moment has not passed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from piton.core.conversation.events import StreamEvent
from piton.core.providers import ModelRequest
from piton.testing.scripted import ScriptedProvider, Step


class HeldProvider(ScriptedProvider):
    def __init__(self, *steps: Step, after: int = 8, replies: int = 1) -> None:
        """The first `replies` replies pause after `after` of their events."""
        super().__init__(*steps)
        self.after = after
        self.replies = replies
        self.holding = False  # a reply is paused now
        self._go: asyncio.Event | None = None
        self._released = 0

    def release(self) -> None:
        """Let the paused reply (or the next one to pause) go on to its end."""
        self._released += 1
        if self._go is not None:
            self._go.set()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        number = len(self.requests) + 1  # this request's, once the script has recorded it
        sent = 0
        async for event in super().stream(request):
            yield event
            sent += 1
            if number <= self.replies and sent == self.after:
                await self._hold(number)

    async def _hold(self, number: int) -> None:
        self._go = asyncio.Event()
        if self._released < number:
            self.holding = True
            await self._go.wait()
            self.holding = False
