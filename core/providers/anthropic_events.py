"""The events of a streamed reply as the provider reads them: Anthropic's server-sent events decoded
here (pings kept: they tell a slow reply from a dead one), or Bedrock's, which its SDK client decodes;
and the clock that adds up the time spent waiting on the API."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable
from types import SimpleNamespace
from typing import Any, TypeVar

from piton.core.providers.failures import Retry, describe, stream_error

T = TypeVar("T")


def _attrs(data: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(**data)


async def sse_fields(lines: AsyncIterator[str]) -> AsyncGenerator[tuple[str | None, str], None]:
    """`(event, data)` for each server-sent event in `lines` (the HTML standard's framing: `field:
    value` lines, `:` comments, a blank line ends an event, data lines joined by newlines). An event
    cut off by the end of the stream is dropped, as the standard says."""
    event: str | None = None
    data: list[str] = []
    async for line in lines:
        if not line:
            if event is not None or data:
                yield event, "\n".join(data)
            event, data = None, []
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value


async def sse_events(lines: AsyncIterator[str]) -> AsyncGenerator[Any | None, None]:
    """The reply's events, decoded (None for a ping or an empty event): an `error` event raises what
    it means, a line a proxy cut is a `Retry` like a dropped stream."""
    fields = sse_fields(lines)
    try:
        async for event, data in fields:
            if event == "error":
                raise stream_error(data)
            if event is None or event == "ping" or not data:
                yield None
                continue
            try:
                yield json.loads(data, object_hook=_attrs)
            except json.JSONDecodeError as e:
                raise Retry(
                    f"a garbled event ({describe(e)})",
                    final=f"The API sent a garbled event: {describe(e)}",
                    kind="stream",
                ) from e
    finally:
        await fields.aclose()


async def bedrock_events(stream: Any) -> AsyncGenerator[Any | None, None]:
    """Bedrock frames events in AWS's binary event stream, which the SDK's stream decodes; its typed
    events read like the decoded JSON of `sse_events` (pings are not seen there)."""
    import anthropic

    try:
        async for event in stream:
            yield event
    except anthropic.APIStatusError as e:  # an `error` event in the stream
        body = e.body if isinstance(e.body, dict) else {"error": {"type": "error", "message": str(e)}}
        raise stream_error(json.dumps(body)) from e


class Clock:
    """Adds up the time spent in the awaits it is given."""

    def __init__(self) -> None:
        self.seconds = 0.0

    async def on(self, awaitable: Awaitable[T]) -> T:
        started = time.monotonic()
        try:
            return await awaitable
        finally:
            self.seconds += time.monotonic() - started
