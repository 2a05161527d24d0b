"""What a connection to one MCP server stands on: the environment a stdio server starts with (never
Piton's API credentials), the tail of its stderr that explains a failure, one line for an error,
and its read stream watched for the server's end."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TextIO

import anyio

# the API credentials are Piton's, not a server's business
_PRIVATE_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_CUSTOM_HEADERS",
    "OPENAI_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
)
_STDERR_TAIL = 300


def inherited_env() -> dict[str, str]:
    """What a stdio server inherits of Piton's environment (its entry's `env` comes on top)."""
    return {k: v for k, v in os.environ.items() if k not in _PRIVATE_ENV}


def resolve_command(command: str, cwd: Path, path: str) -> str:
    """Where a stdio server's `command` is: a path (relative to `cwd`), or found on `path`;
    `FileNotFoundError` ("command not found") when it is not there."""
    found: str | None
    if os.sep in command:
        found = command if os.path.isabs(command) else os.path.join(cwd, command)
        found = found if os.path.isfile(found) and os.access(found, os.X_OK) else None
    else:
        found = shutil.which(command, path=path)
    if found is None:
        raise FileNotFoundError(errno.ENOENT, "command not found", command)
    return found


def stderr_tail(errlog: TextIO | None) -> str:
    """The last few lines the server wrote to stderr, on one line."""
    if errlog is None:
        return ""
    with contextlib.suppress(OSError, ValueError):
        errlog.flush()
        errlog.seek(0, os.SEEK_END)
        size = errlog.tell()
        errlog.seek(max(0, size - 4 * _STDERR_TAIL))
        text = errlog.read()
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-3:])[-_STDERR_TAIL:]
    return ""


def describe(error: BaseException) -> str:
    from mcp.shared.exceptions import MCPError

    if isinstance(error, MCPError):
        return error.error.message
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe(e) for e in error.exceptions[:3])
    if isinstance(error, FileNotFoundError):
        return f"command not found: {error.filename or error}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class EndWatch:
    """A transport's read stream that notes when the server's side of it has ended (the server exited
    or hung up), so that a call to a dead server starts it again rather than fail first, and tells
    `on_end` at once. It is the stream the SDK reads; everything else passes through."""

    def __init__(self, inner: Any, on_end: Callable[[], None] | None = None) -> None:
        self._inner = inner
        self._on_end = on_end
        self.ended = False

    @property
    def last_context(self) -> Any:  # what the SDK asks of a stream after each message
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self.ended = True
            if self._on_end is not None:
                self._on_end()
            raise

    async def aclose(self) -> None:
        self.ended = True
        await self._inner.aclose()

    def __aiter__(self) -> EndWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> EndWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def watched(
    transport: Any, watch: list[EndWatch], on_end: Callable[[], None] | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """`transport` with its read stream watched (the watch is put in `watch`; `on_end` is told when
    the server's side ends)."""
    async with transport as (read, write):
        watch.append(EndWatch(read, on_end))
        yield watch[-1], write
