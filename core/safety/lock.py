"""The session's command lock: file-tool IO never overlaps a command that can write.

A sandboxed command that can write may turn any folder of the project into a symlink, create git
or settings files, or race the guard's snapshot of them. So it runs alone: file tools, read-only
commands and the guard's own checks of one session (main agent and every subagent) wait for it,
and it waits for them. Reads share the lock with each other. A waiting writer goes before readers
that come after it, so a stream of reads cannot starve a command.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class CommandLock:
    def __init__(self) -> None:
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def shared(self) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not self._writing and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            async with self._changed:
                self._readers -= 1
                self._changed.notify_all()

    @asynccontextmanager
    async def exclusive(self) -> AsyncIterator[None]:
        async with self._changed:
            self._writers_waiting += 1
            try:
                await self._changed.wait_for(lambda: not self._writing and not self._readers)
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            async with self._changed:
                self._writing = False
                self._changed.notify_all()
