"""The Anthropic provider: requests over the official SDK, streamed into typed events, every wait bounded.

The SDK is imported on first use (it costs about a second). Request bodies are encoded here,
incrementally (`body.BodyEncoder`), and handed to the SDK as bytes: it adds authentication and raises
typed errors. Retrying is ours, not the SDK's (its `max_retries` is 0): it would sleep in silence,
for as long as any `retry-after` says. One loop covers what fails before a reply starts (408, 409,
429, 5xx and 529 responses, connection errors, a response that never comes) and what breaks it
midway (an `error` event, a stream that ends before `message_stop`, a dropped or reset connection, a
garbled or malformed event, a stream gone silent). Each failure voids the partial reply, so nothing
reaches the history twice, and a `StreamRetry` says why and for how long before the pause. Waits and
retries are bounded by `waits.Waits`; every one of them is asyncio, so an interrupt ends it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import json
import os
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

from piton.core.conversation.events import Notice, StreamEvent, StreamRetry
from piton.core.models import model_info, model_warnings
from piton.core.providers import ModelRequest, ProviderError
from piton.core.providers.accumulate import MalformedEvent, ReplyAccumulator
from piton.core.providers.anthropic_events import Clock, bedrock_events, sse_events
from piton.core.providers.body import BodyEncoder, thinking_param
from piton.core.providers.cloud import Platform, make_client, missing_extra, platform, platform_model
from piton.core.providers.credentials import NO_API_KEY, credential_source
from piton.core.providers.failures import Retry, describe, status_failure, transport_failure
from piton.core.providers.waits import (
    CONNECT_VAR,
    IDLE_VAR,
    RESPONSE_VAR,
    RETRY_WAIT_VAR,
    Waits,
    say_seconds,
)

_END_GRACE_S = 1.0  # after message_stop, for the end of the body
_PLATFORM_NAMES = {
    "anthropic": "the Anthropic API",
    "bedrock": "Amazon Bedrock",
    "vertex": "Google Vertex AI",
}
_sdk_lock = threading.Lock()
_sdk_ready = False


def _load_sdk() -> None:
    """Import the SDK and what a request needs of it, then freeze the heap: the SDK's thousands of
    long-lived objects would otherwise be walked by every full garbage collection of a long session."""
    global _sdk_ready
    # what the first request would otherwise import on the way (the stream's types, the client's
    # transport, the thread pool that resolves host names), so that none of it counts as waiting on
    # the API
    import concurrent.futures.thread  # noqa: F401

    import anthropic.types  # noqa: F401
    import httpcore2  # noqa: F401

    with _sdk_lock:
        if not _sdk_ready:
            gc.freeze()
            _sdk_ready = True


def _deprecations(request: ModelRequest) -> list[str]:
    """What people should hear about this request's model (we send the body ourselves, so the SDK's
    own warnings never come), first lines."""
    thinking = thinking_param(request)
    return model_warnings(model_info(request.model).id, thinking["type"] if thinking else None)


class AnthropicProvider:
    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        waits: Waits | None = None,
        backoff_s: float | None = None,
    ) -> None:
        """`waits`: the limits on every wait (default: from the environment, see `waits.py`);
        `backoff_s` replaces its first pause alone."""
        self._problems: list[str] = []
        if waits is None:
            waits, self._problems = Waits.from_env(os.environ)
        self._waits = waits if backoff_s is None else dataclasses.replace(waits, backoff_s=backoff_s)
        self._api_key = api_key
        self._base_url = base_url
        self._sdk_client: Any = None
        self._building = threading.Lock()
        self._body = BodyEncoder()
        self._noticed: set[str] = set()
        self._platform: Platform | None = None  # fixed when the client is made (the settings' env applied)

    @property
    def platform(self) -> Platform:
        """Anthropic's API, Bedrock or Vertex: as the environment says (the user's settings' `env`
        included, once applied), fixed from the first request on."""
        return self._platform or platform(os.environ)

    def check(self) -> None:
        """Raise `ProviderError` now when no request could succeed (no credentials at all)."""
        if self.platform != "anthropic":  # the cloud's own credentials, resolved by the SDK per request
            missing = missing_extra(self.platform, os.environ)
            if missing is not None:
                raise ProviderError(missing, kind="config")
            self._client()
            return
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
                import httpx2

                self._platform = platform(os.environ)
                w = self._waits
                # our own timers bound each wait (see `_open`, `_events`); the transport's read limit
                # is only a backstop behind them, so that it never fires first with a vaguer reason
                backstop = max(w.idle_s, w.response_s) + 1
                timeout = httpx2.Timeout(w.response_s, connect=w.connect_s, read=backstop, write=w.idle_s)
                try:
                    client = make_client(
                        self.platform,
                        os.environ,
                        api_key=self._api_key,
                        base_url=self._base_url,
                        max_retries=0,
                        timeout=timeout,
                    )
                except (
                    anthropic.AnthropicError,
                    ValueError,
                    RuntimeError,
                ) as e:  # a broken profile, no region
                    raise ProviderError(" ".join(str(e).split()), kind="config") from e
                first_party = self.platform == "anthropic"
                if (
                    first_party
                    and client.api_key is None
                    and client.auth_token is None
                    and client.credentials is None
                ):
                    raise ProviderError(NO_API_KEY, kind="config")
                self._sdk_client = client
            return self._sdk_client

    async def probe(self, model: str, timeout_s: float = 10) -> str:
        """Ask the API about `model`, spending no tokens: its display name, or a `ProviderError`
        saying why no request could succeed (no connection, the key refused, the model unknown)."""
        import anthropic

        client = await asyncio.to_thread(self._client)
        if self.platform != "anthropic":  # no model lookup there: what would be asked is said instead
            return f"{platform_model(model, self.platform)} on {_PLATFORM_NAMES[self.platform]} (not checked)"
        try:
            info = await client.models.retrieve(model, timeout=timeout_s)
        except anthropic.APIStatusError as e:
            failure = status_failure(e, str(client.base_url))
            if isinstance(failure, Retry):
                raise failure.give_up(1) from e
            raise failure from e
        except anthropic.APIConnectionError as e:
            raise ProviderError(f"cannot reach {client.base_url}: {describe(e)}", kind="connection") from e
        return str(getattr(info, "display_name", "") or info.id)

    async def aclose(self) -> None:
        """Release the HTTP connections; call it on the event loop that used them."""
        if self._sdk_client is not None:
            client, self._sdk_client = self._sdk_client, None
            await client.close()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # the first request may still wait for the SDK's import: wait off the event loop, so a key
        # press (Esc) is seen meanwhile
        client = self._sdk_client if self._sdk_client is not None else await asyncio.to_thread(self._client)
        if self.platform != "anthropic":
            request = dataclasses.replace(request, model=platform_model(request.model, self.platform))
        body = self._body.encode(request)
        # people should not miss a setting we could not read, nor that a model is going away (the SDK
        # would only warn, and Python hides DeprecationWarning)
        for text in [*self._problems, *_deprecations(request)]:
            if text not in self._noticed:
                self._noticed.add(text)
                yield Notice(text)
        attempts = self._waits.attempts
        capped = False  # a wait the API asked for was cut to the cap once already
        waited = Clock()  # time spent waiting on the API, not on whoever reads these events
        try:
            for attempt in range(1, attempts + 1):
                acc = ReplyAccumulator()
                try:
                    stream = await self._open(client, body, attempt, waited)
                    try:
                        async for event in self._events(stream, acc, waited):
                            yield event
                    finally:
                        await stream.close()
                    if acc.complete:
                        yield dataclasses.replace(acc.done(), api_seconds=waited.seconds)
                        return
                    failure = Retry(
                        "the stream ended before message_stop",
                        final="The API stream ended before message_stop",
                        kind="stream",
                    )
                except Retry as e:
                    failure = e
                if attempt == attempts:
                    raise failure.give_up(attempt) from failure
                delay, reason = self._delay(failure, capped)
                capped = capped or (failure.retry_after or 0) > self._waits.max_retry_wait_s
                if delay is None:
                    delay = self._waits.backoff(attempt)
                yield StreamRetry(attempt, attempts, delay, reason, failure.status, failure.error_type)
                await waited.on(asyncio.sleep(delay))
        except ProviderError as e:
            e.api_seconds = waited.seconds
            raise

    def _delay(self, failure: Retry, capped: bool) -> tuple[float | None, str]:
        """The wait the API asked for, if it did, and the reason to announce. A wait longer than the
        cap is cut to the cap once (saying so); asked again, the run ends instead: the API has said
        that asking sooner fails, and nobody should sit through an hour's silence."""
        asked, cap = failure.retry_after, self._waits.max_retry_wait_s
        if asked is None or asked <= cap:
            return asked, failure.reason
        said = f"the API asks to wait {say_seconds(asked)}, more than the {say_seconds(cap)} Piton waits"
        if capped:
            raise ProviderError(
                f"{failure.final} ({said} ({RETRY_WAIT_VAR}); try again later)",
                kind=failure.kind,
                status=failure.status,
            )
        return cap, f"{failure.reason}; {said}"

    async def _open(self, client: Any, body: bytes, attempt: int, waited: Clock) -> Any:
        """Send the request and wait for the response to start: the stream, or why not."""
        import anthropic

        w = self._waits
        base_url = str(client.base_url)
        try:
            async with asyncio.timeout(w.response_s):
                return await waited.on(self._send(client, body, attempt))
        except TimeoutError as e:
            raise Retry(
                f"no response within {say_seconds(w.response_s)}",
                final=f"The API at {base_url} sent no response within {say_seconds(w.response_s)}",
                kind="timeout",
                hint=f"{RESPONSE_VAR} sets the wait",
            ) from e
        except anthropic.APIStatusError as e:
            raise status_failure(e, base_url) from e
        except anthropic.APITimeoutError as e:
            raise self._transport_timeout(e.__cause__, base_url) from e
        except anthropic.APIConnectionError as e:
            what = describe(e.__cause__ or e)
            raise Retry(
                f"cannot connect: {what}",
                final=f"Cannot reach the API at {base_url}: {what}",
                kind="connection",
            ) from e
        except anthropic.AnthropicError as e:
            raise ProviderError(f"API request failed: {describe(e)}", kind="stream") from e
        except Exception as e:
            if self.platform == "anthropic":
                raise
            # AWS or Google credentials that cannot be resolved, a project id missing, an expired SSO token
            where = _PLATFORM_NAMES[self.platform]
            raise ProviderError(f"{where}: {describe(e)}", kind="auth") from e

    def _transport_timeout(self, cause: BaseException | None, base_url: str) -> Retry:
        """A limit the transport reached before our own timers: connecting (the usual one), or sending
        the request body."""
        import httpx2

        w = self._waits
        if isinstance(cause, httpx2.WriteTimeout):
            stalled = f"stalled for {say_seconds(w.idle_s)}"
            return Retry(
                f"sending the request {stalled}",
                final=f"Sending the request to {base_url} {stalled}",
                kind="timeout",
                hint=f"{IDLE_VAR} sets the wait",
            )
        if isinstance(cause, httpx2.ConnectTimeout):
            what, hint = f"no connection within {say_seconds(w.connect_s)}", f"{CONNECT_VAR} sets the wait"
        else:
            what, hint = describe(cause) if cause else "timed out", ""
        return Retry(
            f"cannot connect: {what}",
            final=f"Cannot reach the API at {base_url}: {what}",
            kind="connection",
            hint=hint,
        )

    async def _send(self, client: Any, body: bytes, attempt: int) -> Any:
        """`messages.create(..., stream=True)` with the body already encoded (the SDK's documented way to
        send a request of one's own): the SDK skips copying and encoding it again."""
        from anthropic import AsyncStream
        from anthropic.types import Message, RawMessageStreamEvent

        # the SDK counts its own retries in this header; the API's side sees ours the same way
        options: Any = {"headers": {"x-stainless-retry-count": str(attempt - 1)}}
        # Bedrock's and Vertex's clients move the model into the URL: they need the body as a dict
        content = {"content": body} if self.platform == "anthropic" else {"body": json.loads(body)}
        return await client.post(
            "/v1/messages",
            cast_to=Message,
            options=options,
            stream=True,
            stream_cls=AsyncStream[RawMessageStreamEvent],
            **content,
        )

    async def _events(self, stream: Any, acc: ReplyAccumulator, waited: Clock) -> AsyncIterator[StreamEvent]:
        """The reply's events as they arrive, each wait on the next bounded by the idle limit."""
        import httpx2

        idle = self._waits.idle_s
        events = bedrock_events(stream) if self.platform == "bedrock" else sse_events(stream)
        try:
            while True:
                try:
                    # after message_stop only the body's end is due, at once on a healthy connection;
                    # reading it lets the connection serve the next request
                    async with asyncio.timeout(min(idle, _END_GRACE_S) if acc.complete else idle):
                        event = await waited.on(anext(events))
                except StopAsyncIteration:
                    return
                except (TimeoutError, httpx2.TransportError) as e:
                    if acc.complete:  # all there; only the end of the body was late or lost
                        return
                    raise transport_failure(e, idle) from e
                if event is None:
                    continue
                try:
                    out = acc.feed(event)
                except MalformedEvent as e:
                    raise Retry(
                        f"a malformed event ({e})",
                        final=f"The API sent a malformed event: {e}",
                        kind="stream",
                    ) from e
                if out is not None:
                    yield out
        finally:
            await events.aclose()
