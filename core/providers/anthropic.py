"""The Anthropic provider: requests over the official SDK, streamed into typed events.

The SDK is imported on first use (it costs about a second). The SDK retries failed HTTP requests
(408/409/429/5xx/529, connection errors); what it does not retry is ours: an `error` event in the
middle of a stream, a stream that ends without `message_stop`, and a connection that breaks (or
garbles an event) while the body is streaming. Each of those voids the partial reply (a
`StreamRetry` says so) and asks again with backoff, so nothing reaches the history twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import warnings
from collections.abc import AsyncIterator
from typing import Any

from piton.core.conversation.events import Notice, StreamEvent, StreamRetry
from piton.core.conversation.history import api_entry_ending_at, to_api_messages
from piton.core.models import model_info
from piton.core.providers import ModelRequest, ProviderError
from piton.core.providers.accumulate import ReplyAccumulator

EPHEMERAL = {"type": "ephemeral"}
MIN_THINKING_BUDGET = 1024  # the API's floor for `thinking: enabled`
MAX_THINKING_BUDGET = 16_000
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
NO_API_KEY = (
    "ANTHROPIC_API_KEY is not set. Export your key (export ANTHROPIC_API_KEY=sk-ant-...) and run again."
)


def prewarm() -> None:
    """Start importing the SDK on a background thread, so the import overlaps with other start-up work."""

    def _load() -> None:
        import anthropic  # noqa: F401

    threading.Thread(target=_load, name="piton-sdk-import", daemon=True).start()


class _Retry(Exception):
    """A failure of one streamed attempt that asking again may fix."""


def build_params(request: ModelRequest) -> dict[str, Any]:
    """The `messages.create` arguments for `request`: thinking per model, max_tokens from the model
    table, and up to three cache breakpoints: the end of tools and system, the end of what the
    previous request sent, and the newest message."""
    info = model_info(request.model)
    max_tokens = request.max_tokens or info.max_output_tokens
    params: dict[str, Any] = {"model": info.id, "max_tokens": max_tokens}
    tools = [dict(t) for t in request.tools]
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
    elif tools:
        tools[-1]["cache_control"] = EPHEMERAL
    if tools:
        params["tools"] = tools
    messages = to_api_messages(request.messages)
    marks = {len(messages) - 1} if messages else set()
    if request.cached_upto:
        previous = api_entry_ending_at(request.messages, request.cached_upto)
        if previous is not None and messages[previous]["role"] == "user":
            marks.add(previous)
    for index in marks:
        # both marks fall on user messages (a prompt or tool results), never on a thinking block
        entry = messages[index]
        blocks = [*entry["content"][:-1], {**entry["content"][-1], "cache_control": EPHEMERAL}]
        messages[index] = {"role": entry["role"], "content": blocks}  # copies: wire forms are shared
    params["messages"] = messages
    if request.thinking:
        budget = min(MAX_THINKING_BUDGET, max_tokens // 2)
        if info.thinking == "adaptive":
            params["thinking"] = {"type": "adaptive"}
        elif info.thinking == "enabled" and budget >= MIN_THINKING_BUDGET:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
    return params


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
        self._noticed: set[str] = set()

    def check(self) -> None:
        """Raise `ProviderError` now when no request could succeed (no credentials at all)."""
        if self._api_key or os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            return  # no need to wait for the SDK import to know that
        self._client()  # the SDK may still find credentials elsewhere (a profile)

    def _client(self) -> Any:
        if self._sdk_client is None:
            import anthropic

            client = anthropic.AsyncAnthropic(
                api_key=self._api_key, base_url=self._base_url, max_retries=self._sdk_max_retries
            )
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
        return self._backoff_s * 2 ** (attempt - 1) * (1 + random.random() / 4)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        client = self._client()
        params = build_params(request)
        base_url = str(client.base_url)
        for attempt in range(1, self._stream_attempts + 1):
            acc = ReplyAccumulator()
            try:
                # The SDK warns of deprecated models; Python hides DeprecationWarning, people should not
                # miss it. (Warning filters are process-wide: a concurrent request may see this one's.)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", DeprecationWarning)
                    stream = await client.messages.create(**params, stream=True)
            except Exception as e:  # the SDK has already retried what it retries
                raise _fatal(e, base_url) from e
            for warning in caught:
                text = str(warning.message).splitlines()[0]
                if (
                    issubclass(warning.category, DeprecationWarning | UserWarning)
                    and text not in self._noticed
                ):
                    self._noticed.add(text)
                    yield Notice(text)
            reason = ""
            try:
                async for event in self._events(stream, acc):
                    yield event
                if acc.complete:
                    yield acc.done()
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

    async def _events(self, stream: Any, acc: ReplyAccumulator) -> AsyncIterator[StreamEvent]:
        iterator = stream.__aiter__()
        while True:
            try:
                event = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except Exception as e:
                if _is_retryable_midstream(e):
                    raise _Retry(_describe(e)) from e
                raise _fatal(e, "the API") from e
            out = acc.feed(event)
            if out is not None:
                yield out
