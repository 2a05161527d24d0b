"""The Anthropic provider: requests over the official SDK, streamed into typed events.

The SDK is imported on first use (it costs about a second). Request bodies are encoded here,
incrementally (`body.BodyEncoder`), and handed to the SDK as bytes: it still adds authentication,
retries failed HTTP requests (408/409/429/5xx/529, connection errors), decodes the SSE stream into
typed events and raises typed errors. What it does not retry is ours: an `error` event in the
middle of a stream, a stream that ends without `message_stop`, and a connection that breaks (or
garbles an event) while the body is streaming. Each of those voids the partial reply (a
`StreamRetry` says so) and asks again with backoff, so nothing reaches the history twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import json
import random
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from piton.core.conversation.events import Notice, StreamEvent, StreamRetry
from piton.core.models import model_info
from piton.core.providers import ModelRequest, ProviderError
from piton.core.providers.accumulate import ReplyAccumulator
from piton.core.providers.body import BodyEncoder, thinking_param
from piton.core.providers.credentials import NO_API_KEY, credential_source

_RETRYABLE_STREAM_ERRORS = {"overloaded_error", "api_error", "rate_limit_error", "timeout_error"}
_SDK_RETRIED = {408, 409, 429}  # and every status from 500 up
_KIND_BY_STATUS = {
    400: "invalid_request",
    401: "auth",
    402: "billing",
    403: "permission",
    404: "not_found",
    413: "invalid_request",
    422: "invalid_request",
    429: "rate_limit",
}
_KIND_BY_ERROR_TYPE = {
    "invalid_request_error": "invalid_request",
    "authentication_error": "auth",
    "permission_error": "permission",
    "not_found_error": "not_found",
    "request_too_large": "invalid_request",
    "billing_error": "billing",
}
_HINTS = {
    "auth": " (check ANTHROPIC_API_KEY)",
    "not_found": " (is the model id right? see --model)",
    "billing": " (check the account's plan and credits)",
}
T = TypeVar("T")
_sdk_lock = threading.Lock()
_sdk_ready = False


def _load_sdk() -> None:
    """Import the SDK and what a request needs of it, then freeze the heap: the SDK's thousands of
    long-lived objects would otherwise be walked by every full garbage collection of a long session."""
    global _sdk_ready
    # what a request needs besides: tracing hooks, the deprecation table, the client's transport, and
    # what the first request would otherwise import on the way (the async backend, the thread pool
    # that resolves host names, tracing propagation), so that none of it counts as waiting on the API
    import concurrent.futures.thread  # noqa: F401

    import anthropic.lib._tracing
    import anthropic.resources.messages.messages  # noqa: F401
    import anyio._backends._asyncio  # noqa: F401
    import httpcore2  # noqa: F401

    with contextlib.suppress(ImportError):  # present when the SDK traces requests
        import opentelemetry.propagate  # noqa: F401

    with _sdk_lock:
        if not _sdk_ready:
            gc.freeze()
            _sdk_ready = True


class _Retry(Exception):
    """A failure of one streamed attempt that asking again may fix."""


def _deprecations(request: ModelRequest) -> list[str]:
    """The warnings `messages.create` gives for this request (we send the body ourselves), first lines."""
    from anthropic.resources.messages.messages import (
        DEPRECATED_MODELS,
        MODELS_TO_WARN_WITH_THINKING_ENABLED,
    )

    model = model_info(request.model).id
    texts = []
    if model in DEPRECATED_MODELS:
        end = DEPRECATED_MODELS[model]
        texts.append(f"The model '{model}' is deprecated and will reach end-of-life on {end}.")
    thinking = thinking_param(request)
    if model in MODELS_TO_WARN_WITH_THINKING_ENABLED and thinking and thinking["type"] == "enabled":
        texts.append(
            f"Using Claude with {model} and 'thinking.type=enabled' is deprecated. Use "
            "'thinking.type=adaptive' instead which results in better model performance in our testing: "
            "https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking"
        )
    return texts


def _api_message(exc: Any) -> str:
    return getattr(exc, "api_message", None) or getattr(exc, "message", None) or str(exc)


def _fatal(exc: Exception, base_url: str) -> ProviderError:
    """One readable line for an error no retry of ours will fix."""
    import anthropic

    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        if status == 200:  # an `error` event inside the stream
            kind = _KIND_BY_ERROR_TYPE.get(str(exc.type), "stream")
            return ProviderError(f"API error during the reply ({exc.type}): {_api_message(exc)}", kind=kind)
        retried = status in _SDK_RETRIED or status >= 500
        kind = _KIND_BY_STATUS.get(status, "overloaded" if retried else "invalid_request")
        hint = (
            " (still failing after the SDK's retries; try again later)" if retried else _HINTS.get(kind, "")
        )
        return ProviderError(f"API error {status}: {_api_message(exc)}{hint}", kind=kind, status=status)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__ or exc
        return ProviderError(f"Cannot reach the API at {base_url}: {cause}", kind="connection")
    return ProviderError(f"API request failed: {type(exc).__name__}: {exc}", kind="stream")


def _is_retryable_midstream(exc: Exception) -> bool:
    import anthropic
    import httpx2

    if isinstance(exc, anthropic.APIStatusError):
        return exc.status_code == 200 and str(exc.type) in _RETRYABLE_STREAM_ERRORS
    # a garbled event (a proxy cutting a line) is as good as a dropped connection
    return isinstance(exc, httpx2.TransportError | anthropic.APIConnectionError | json.JSONDecodeError)


def _describe(exc: Exception) -> str:
    api_type = getattr(exc, "type", None)
    if isinstance(api_type, str):
        return f"{api_type}: {_api_message(exc)}"
    return f"{type(exc).__name__}: {exc}"


class AnthropicProvider:
    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        sdk_max_retries: int = 4,
        stream_attempts: int = 3,
        backoff_s: float = 1.0,
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._sdk_max_retries = sdk_max_retries
        self._stream_attempts = stream_attempts
        self._backoff_s = backoff_s
        self._sdk_client: Any = None
        self._building = threading.Lock()
        self._body = BodyEncoder()
        self._noticed: set[str] = set()

    def check(self) -> None:
        """Raise `ProviderError` now when no request could succeed (no credentials at all)."""
        source = credential_source(self._api_key)
        if source is None:  # known without the SDK (a second's import)
            raise ProviderError(NO_API_KEY, kind="config")
        if source == "sdk":  # a profile or federation: the SDK resolves it, or says what is wrong
            self._client()

    def prewarm(self, then: Callable[[], object] | None = None) -> None:
        """Import the SDK and build the client on a background thread, overlapping other start-up work
        (a request made meanwhile waits for it; what goes wrong is for that request to report), then
        call `then`, whatever happened."""

        def build() -> None:
            try:
                with contextlib.suppress(Exception):
                    self._client()
            finally:
                if then is not None:
                    then()

        threading.Thread(target=build, name="piton-sdk-import", daemon=True).start()

    def _client(self) -> Any:
        with self._building:
            if self._sdk_client is None:
                _load_sdk()
                import anthropic

                try:
                    client = anthropic.AsyncAnthropic(
                        api_key=self._api_key, base_url=self._base_url, max_retries=self._sdk_max_retries
                    )
                except anthropic.AnthropicError as e:  # a broken profile
                    raise ProviderError(" ".join(str(e).split()), kind="config") from e
                if client.api_key is None and client.auth_token is None and client.credentials is None:
                    raise ProviderError(NO_API_KEY, kind="config")
                self._sdk_client = client
            return self._sdk_client

    async def aclose(self) -> None:
        """Release the HTTP connections; call it on the event loop that used them."""
        if self._sdk_client is not None:
            client, self._sdk_client = self._sdk_client, None
            await client.close()

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based): doubling, with up to 25% jitter."""
        return self._backoff_s * 2.0 ** (attempt - 1) * (1 + random.random() / 4)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # the first request may still wait for the SDK's import: wait off the event loop, so a key
        # press (Esc) is seen meanwhile
        client = self._sdk_client if self._sdk_client is not None else await asyncio.to_thread(self._client)
        body = self._body.encode(request)
        # people should not miss that a model is going away (the SDK would only warn, and Python hides
        # DeprecationWarning)
        for text in _deprecations(request):
            if text not in self._noticed:
                self._noticed.add(text)
                yield Notice(text)
        waited = _Clock()  # time spent waiting on the API, not on whoever reads these events
        try:
            for attempt in range(1, self._stream_attempts + 1):
                acc = ReplyAccumulator()
                stream = await waited.on(self._send(client, body))
                reason = ""
                try:
                    async for event in self._events(stream, acc, waited):
                        yield event
                    if acc.complete:
                        yield dataclasses.replace(acc.done(), api_seconds=waited.seconds)
                        return
                    reason = "the stream ended before message_stop"
                except _Retry as e:
                    reason = str(e)
                finally:
                    await stream.close()
                if attempt == self._stream_attempts:
                    raise ProviderError(
                        f"The API stream failed {attempt} times in a row; last: {reason}", kind="stream"
                    )
                delay = self.backoff(attempt)
                yield StreamRetry(attempt, self._stream_attempts, delay, reason)
                await asyncio.sleep(delay)
        except ProviderError as e:
            e.api_seconds = waited.seconds
            raise

    async def _send(self, client: Any, body: bytes) -> Any:
        """`messages.create(..., stream=True)` with the body already encoded: the SDK skips copying and
        encoding it again, and does everything else as `create` does."""
        from anthropic import AsyncStream
        from anthropic._base_client import make_request_options
        from anthropic.lib._tracing import messages_create_request_attributes
        from anthropic.types import Message, RawMessageStreamEvent

        options = make_request_options(
            span_name="anthropic.messages.create",
            span_route="/v1/messages",
            span_attributes=messages_create_request_attributes,
        )
        try:
            return await client.post(
                "/v1/messages",
                cast_to=Message,
                content=body,
                options=options,
                stream=True,
                stream_cls=AsyncStream[RawMessageStreamEvent],
            )
        except Exception as e:  # the SDK has already retried what it retries
            raise _fatal(e, str(client.base_url)) from e

    async def _events(self, stream: Any, acc: ReplyAccumulator, waited: _Clock) -> AsyncIterator[StreamEvent]:
        iterator = stream.__aiter__()
        while True:
            try:
                event = await waited.on(iterator.__anext__())
            except StopAsyncIteration:
                return
            except Exception as e:
                if _is_retryable_midstream(e):
                    raise _Retry(_describe(e)) from e
                raise _fatal(e, "the API") from e
            out = acc.feed(event)
            if out is not None:
                yield out


class _Clock:
    """Adds up the time spent in the awaits it is given."""

    def __init__(self) -> None:
        self.seconds = 0.0

    async def on(self, awaitable: Awaitable[T]) -> T:
        started = time.monotonic()
        try:
            return await awaitable
        finally:
            self.seconds += time.monotonic() - started
