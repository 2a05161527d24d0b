"""Who to tell when something changed: callbacks (a status line to redraw) and an event a waiter
awaits (the agents' news, the schedule's next time). Made without a loop: the event is made in the
loop that first waits on it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Changes:
    def __init__(self) -> None:
        self.listeners: list[Callable[[], None]] = []
        self._event: asyncio.Event | None = None

    def next(self) -> asyncio.Event:
        """An event set by the next change (after this call)."""
        if self._event is None:
            self._event = asyncio.Event()
        self._event.clear()
        return self._event

    def tell(self) -> None:
        if self._event is not None:
            self._event.set()
        for listener in list(self.listeners):
            listener()
