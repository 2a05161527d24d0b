"""Small helpers shared by tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def _collect(events: AsyncIterator[T]) -> list[T]:
    return [e async for e in events]


def collect(events: AsyncIterator[T]) -> list[T]:
    """Drain an async event stream into a list."""
    return asyncio.run(_collect(events))


def stream_all(provider: Any, request: Any) -> list[Any]:
    """Every event of one provider stream, closing the provider on the same event loop."""

    async def go() -> list[Any]:
        try:
            return [e async for e in provider.stream(request)]
        finally:
            await provider.aclose()

    return asyncio.run(go())
