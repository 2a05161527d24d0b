"""Small helpers shared by tests."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
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


PITON = str(Path(sys.executable).with_name("piton"))


def piton(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The installed `piton` with `args`, in `cwd`, with no input, its output captured."""
    return subprocess.run(
        [PITON, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )
