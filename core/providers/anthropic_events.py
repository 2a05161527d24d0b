"""The events of a streamed reply as the provider reads them: Anthropic's server-sent events decoded
(pings kept: they tell a slow reply from a dead one), or Bedrock's, which its SDK client decodes;
and the clock that adds up the time spent waiting on the API."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Awaitable
from types import SimpleNamespace
from typing import Any, TypeVar

from piton.core.providers.failures import Retry, describe, stream_error

T = TypeVar("T")


def _attrs(data: dict[str, Any]) -> SimpleNamespace:
    return SimpleNamespace(**data)


async def sse_events(stream: Any) -> AsyncGenerator[Any | None, None]:
    """The server-sent events of the reply, decoded (None for a ping or an empty event). The SDK's
    own iterator drops `ping` events, which are what tells a slow reply from a dead one, so the raw
    events are read here, pings included."""
    from anthropic import AsyncStream

    events = AsyncStream.raw_events(stream.response)
    try:
        async for sse in events:
            if sse.event == "error":
                raise stream_error(sse.data)
            if sse.event is None or sse.event == "ping" or not sse.data:
                yield None
                continue
            try:
                yield json.loads(sse.data, object_hook=_attrs)
            except json.JSONDecodeError as e:  # a proxy cutting a line: as good as a dropped stream
                raise Retry(
                    f"a garbled event ({describe(e)})",
                    final=f"The API sent a garbled event: {describe(e)}",
                    kind="stream",
                ) from e
    finally:
        await events.aclose()  # type: ignore[attr-defined]


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
