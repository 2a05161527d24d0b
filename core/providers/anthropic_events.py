"""The events of a streamed reply as the provider reads them, in batches: Anthropic's server-sent
events decoded here a chunk at a time (a chunk of pings is an empty batch: it tells a slow reply from
a dead one), or Bedrock's, which its SDK client decodes; and the clock that adds up the time spent
waiting on the API."""

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


class SSEDecoder:
    """Server-sent events from the bytes of a stream, as they come (the HTML standard's framing:
    `field: value` lines ended by LF, CRLF or CR, `:` comments, a blank line ends an event, data lines
    joined by newlines). Whole chunks are decoded at once: a reply's events cost one wait per chunk
    the network delivers, not one per event. An event cut off by the end of the stream is dropped,
    as the standard says."""

    def __init__(self) -> None:
        self._rest = b""
        self._event: bytes | None = None
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[tuple[str | None, bytes]]:
        """`(event, data)` for each event `chunk` completes."""
        text = self._rest + chunk
        held = b""
        if b"\r" in text:
            if text.endswith(b"\r"):  # maybe half of a CRLF: decided with the next chunk
                text, held = text[:-1], b"\r"
            text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = text.split(b"\n")
        self._rest = lines.pop() + held
        out: list[tuple[str | None, bytes]] = []
        for line in lines:
            if not line:
                if self._event is not None or self._data:
                    name = self._event.decode("utf-8", "replace") if self._event is not None else None
                    out.append((name, b"\n".join(self._data)))
                self._event, self._data = None, []
                continue
            field, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if field == b"data":
                self._data.append(value)
            elif field == b"event":
                self._event = value
        return out


def decode_events(fields: list[tuple[str | None, bytes]]) -> list[Any]:
    """The reply's events among `fields`, decoded (pings and empty events left out: their arrival is
    all they say): an `error` event raises what it means, a line a proxy cut is a `Retry` like a
    dropped stream."""
    out = []
    for event, data in fields:
        if event == "error":
            raise stream_error(data.decode("utf-8", "replace"))
        if event is None or event == "ping" or not data:
            continue
        try:
            out.append(json.loads(data, object_hook=_attrs))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise Retry(
                f"a garbled event ({describe(e)})",
                final=f"The API sent a garbled event: {describe(e)}",
                kind="stream",
            ) from e
    return out


async def sse_batches(chunks: AsyncIterator[bytes]) -> AsyncGenerator[list[Any], None]:
    """The reply's events, a list for each chunk of the body (empty for a chunk of pings)."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        yield decode_events(decoder.feed(chunk))


async def bedrock_batches(stream: Any) -> AsyncGenerator[list[Any], None]:
    """Bedrock frames events in AWS's binary event stream, which the SDK's stream decodes; its typed
    events read like the decoded JSON of `sse_batches` (pings are not seen there), one a batch."""
    import anthropic

    try:
        async for event in stream:
            yield [event]
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
