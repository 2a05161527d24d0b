"""The Anthropic provider: requests streamed into typed events, every wait bounded.

Request bodies are encoded here, incrementally (`body.BodyEncoder`), and sent by a transport: plain
HTTP for Anthropic's API (`messages_http.py`), the SDK for Bedrock, Vertex and credentials only it
resolves (`sdk_messages.py`, imported only then). Retrying is ours: one loop covers what fails before a
reply starts (408, 409, 429, 5xx and 529 responses, connection errors, a response that never comes)
and what breaks it midway (an `error` event, a stream that ends before `message_stop`, a dropped or
reset connection, a garbled or malformed event, a stream gone silent). Each failure voids the partial
reply, so nothing reaches the history twice, and a `StreamRetry` says why and for how long before the
pause. Waits and retries are bounded by `waits.Waits`, a whole reply by its own limit; every one of
them is asyncio, so an interrupt ends it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import threading
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from piton.core.conversation.events import Notice, StreamEvent, StreamRetry
from piton.core.models import model_info, model_warnings
from piton.core.providers import ModelRequest, ProviderError
from piton.core.providers.accumulate import MalformedEvent, ReplyAccumulator
from piton.core.providers.anthropic_events import Clock
from piton.core.providers.body import BodyEncoder, thinking_param
from piton.core.providers.cloud import Platform, missing_extra, platform, platform_model
from piton.core.providers.credentials import NO_API_KEY, credential_source
from piton.core.providers.failures import Retry, transport_failure
from piton.core.providers.waits import REPLY_VAR, RESPONSE_VAR, RETRY_WAIT_VAR, Waits, say_seconds

if TYPE_CHECKING:
    from piton.core.providers.messages_http import MessagesTransport, Opened

_END_GRACE_S = 1.0  # after message_stop, for the end of the body


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
        self._sender: MessagesTransport | None = None
        self._building = threading.Lock()
        self._body = BodyEncoder()
        self._noticed: set[str] = set()
        self._platform: Platform | None = None  # fixed when the transport is made (the settings' env applied)

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
            self._transport()
            return
        source = credential_source(self._api_key)
        if source is None:
            raise ProviderError(NO_API_KEY, kind="config")
        if source == "sdk":  # a profile or federation: the SDK resolves it, or says what is wrong
            self._transport()

    def prewarm(self) -> None:
        """Make the transport now, before the session opens, so that the first request does not
        wait for it; what goes wrong is for that request to report. Not on a thread of its own:
        start-up is Python work under one interpreter lock, and a second thread only made the two
        take turns (about 40 ms more CPU for `piton -p hello`, and a later first request)."""
        with contextlib.suppress(Exception):
            self._transport()

    def _transport(self) -> MessagesTransport:
        with self._building:
            if self._sender is None:
                from piton.core.providers.messages_http import MessagesHTTP, endpoint

                self._platform = platform(os.environ)
                direct = None
                if self._platform == "anthropic":
                    direct = endpoint(os.environ, api_key=self._api_key, base_url=self._base_url)
                if direct is not None:
                    self._sender = MessagesHTTP(direct, self._waits)
                else:
                    from piton.core.providers.sdk_messages import SDKMessages

                    self._sender = SDKMessages(
                        self._platform, self._waits, api_key=self._api_key, base_url=self._base_url
                    )
            return self._sender

    async def probe(self, model: str, timeout_s: float = 10) -> str:
        """Ask the API about `model`, spending no tokens: its display name, or a `ProviderError`
        saying why no request could succeed (no connection, the key refused, the model unknown)."""
        sender = await asyncio.to_thread(self._transport)
        if self.platform != "anthropic":  # no model lookup there: what would be asked is said instead
            from piton.core.providers.sdk_messages import PLATFORM_NAMES

            where = PLATFORM_NAMES[self.platform]
            return f"{platform_model(model, self.platform)} on {where} (not checked)"
        return await sender.model_name(model, timeout_s)

    async def aclose(self) -> None:
        """Release the HTTP connections; call it on the event loop that used them."""
        if self._sender is not None:
            sender, self._sender = self._sender, None
            await sender.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # the first request may still wait for the transport (and, for the clouds, the SDK's import):
        # wait off the event loop, so a key press (Esc) is seen meanwhile
        sender = self._sender if self._sender is not None else await asyncio.to_thread(self._transport)
        if self.platform != "anthropic":
            request = dataclasses.replace(request, model=platform_model(request.model, self.platform))
        body = self._body.encode(request)
        # people should not miss a setting we could not read, nor that a model is going away
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
                    async for event in self._attempt(sender, body, acc, waited):
                        yield event
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
                if attempt >= min(attempts, failure.attempts or attempts):
                    raise failure.give_up(attempt) from failure
                delay, reason = self._delay(failure, capped)
                capped = capped or (failure.retry_after or 0) > self._waits.max_retry_wait_s
                if delay is None:
                    delay = self._waits.backoff(attempt)
                tries = min(attempts, failure.attempts or attempts)
                yield StreamRetry(attempt, tries, delay, reason, failure.status, failure.error_type)
                await waited.on(asyncio.sleep(delay))
        except ProviderError as e:
            e.api_seconds = waited.seconds
            raise

    async def _attempt(
        self, sender: MessagesTransport, body: bytes, acc: ReplyAccumulator, waited: Clock
    ) -> AsyncIterator[StreamEvent]:
        """One request and its reply, within the reply's overall limit."""
        deadline = asyncio.get_running_loop().time() + self._waits.reply_s
        reply = await self._open(sender, body, waited)
        acc.request_id = reply.request_id
        try:
            async for event in self._events(reply, acc, waited, deadline):
                yield event
        finally:
            await reply.close()

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

    async def _open(self, sender: MessagesTransport, body: bytes, waited: Clock) -> Opened:
        """Send the request and wait for the response to start: the reply, or why not."""
        w = self._waits
        try:
            async with asyncio.timeout(min(w.response_s, w.reply_s)):
                return await waited.on(sender.open(body))
        except TimeoutError as e:
            if w.reply_s < w.response_s:
                raise self._too_long() from e
            raise Retry(
                f"no response within {say_seconds(w.response_s)}",
                final=f"The API at {sender.base_url} sent no response within {say_seconds(w.response_s)}",
                kind="timeout",
                hint=f"{RESPONSE_VAR} sets the wait",
            ) from e

    def _too_long(self) -> ProviderError:
        """A reply still unfinished at its overall limit (a server that only sends pings, or that
        trickles): not asked again, as the next would likely take as long."""
        limit = say_seconds(self._waits.reply_s)
        return ProviderError(
            f"The API's reply did not finish within {limit} ({REPLY_VAR} sets the limit)", kind="timeout"
        )

    async def _events(
        self, reply: Opened, acc: ReplyAccumulator, waited: Clock, deadline: float
    ) -> AsyncIterator[StreamEvent]:
        """The reply's events as they arrive, each wait on the next chunk bounded by the idle limit,
        and all of them by the reply's deadline."""
        import httpx2

        idle = self._waits.idle_s
        loop = asyncio.get_running_loop()
        batches = reply.events()
        try:
            while True:
                # after message_stop only the body's end is due, at once on a healthy connection;
                # reading it lets the connection serve the next request
                wait = min(idle, _END_GRACE_S) if acc.complete else idle
                left = deadline - loop.time()
                try:
                    async with asyncio.timeout(min(wait, left)):
                        batch = await waited.on(anext(batches))
                except StopAsyncIteration:
                    return
                except (TimeoutError, httpx2.TransportError) as e:
                    if acc.complete:  # all there; only the end of the body was late or lost
                        return
                    if isinstance(e, TimeoutError) and left < wait:
                        raise self._too_long() from e
                    raise transport_failure(e, idle) from e
                for event in batch:
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
            await batches.aclose()
