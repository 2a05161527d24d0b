"""Anthropic's Messages API over plain HTTP (httpx2, the SDK's own transport, a tenth of its import):
the path every first-party request takes when a key or a token is at hand.

Piton encodes the request body and folds the reply's events itself, and retries on its own; all the
SDK would add is a second's import. What it did on the wire is done here: the key as `x-api-key` (or
`ANTHROPIC_AUTH_TOKEN` as `Authorization: Bearer`, for gateways), `anthropic-version`, the user's
`ANTHROPIC_CUSTOM_HEADERS`, `ANTHROPIC_BASE_URL`, the proxy variables (httpx2 reads them), and error
responses read into the same one-line failures. Credentials that need resolving (a profile on disk,
workload identity federation) and the clouds go through the SDK instead (`sdk_messages.py`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import quote

from piton.core.providers import ProviderError
from piton.core.providers.anthropic_events import sse_batches
from piton.core.providers.cloud import custom_headers
from piton.core.providers.failures import (
    DEFAULT_BASE_URL,
    Retry,
    StatusError,
    connection_failure,
    describe,
    status_failure,
)
from piton.core.providers.waits import Waits
from piton.core.records import record
from piton.core.version import __version__

if TYPE_CHECKING:
    import httpx2

# the Messages API version Piton's bodies and event handling are written against
API_VERSION = "2026-10-21"
_ERROR_BODY_LIMIT = 64 * 1024  # an error page is read only this far: a proxy may send megabytes


class Opened(Protocol):
    """A reply whose response has started: its events in batches as they arrive, then `close`;
    `request_id` is the API's id for the request (its `request-id` header), if it sent one."""

    request_id: str

    def events(self) -> AsyncGenerator[list[Any], None]: ...

    async def close(self) -> None: ...


class MessagesTransport(Protocol):
    """What sends a request body and opens its reply: plain HTTP here, the SDK for the clouds."""

    base_url: str

    async def open(self, body: bytes) -> Opened:
        """Send `body`; raise `Retry` for what asking again may fix, else `ProviderError`."""
        ...

    async def model_name(self, model: str, timeout_s: float) -> str: ...

    async def aclose(self) -> None: ...


@record(frozen=True)
class Endpoint:
    base_url: str
    headers: dict[str, str]


def endpoint(env: Mapping[str, str], *, api_key: str | None, base_url: str | None) -> Endpoint | None:
    """Where first-party requests go and the headers they carry, or None when no key or token is at
    hand (a profile or federation, which the SDK resolves). An explicit key wins over the
    environment; `ANTHROPIC_API_KEY` over `ANTHROPIC_AUTH_TOKEN`, as in the SDK."""
    key = api_key or env.get("ANTHROPIC_API_KEY") or None
    token = None if api_key else env.get("ANTHROPIC_AUTH_TOKEN") or None
    if key is None and token is None:
        return None
    auth = {"x-api-key": key} if key else {"authorization": f"Bearer {token}"}
    headers = {
        "anthropic-version": API_VERSION,
        "content-type": "application/json",
        "accept": "application/json",
        "user-agent": f"piton/{__version__}",
        **auth,
        **custom_headers(env),  # last: a gateway may want its own Authorization
    }
    url = base_url or env.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL
    return Endpoint(url.rstrip("/"), headers)


def http_timeout(waits: Waits) -> httpx2.Timeout:
    """The transport's own limits. Our timers bound each wait (see `AnthropicProvider`); the read
    limit is only a backstop behind them, so that it never fires first with a vaguer reason."""
    import httpx2

    backstop = max(waits.idle_s, waits.response_s) + 1
    return httpx2.Timeout(waits.response_s, connect=waits.connect_s, read=backstop, write=waits.idle_s)


class _SSEReply:
    def __init__(self, response: httpx2.Response) -> None:
        self._response = response
        self.request_id = response.headers.get("request-id", "")

    def events(self) -> AsyncGenerator[list[Any], None]:
        return sse_batches(self._response.aiter_bytes())

    async def close(self) -> None:
        await self._response.aclose()


class MessagesHTTP:
    """First-party requests over one pooled httpx2 client."""

    def __init__(self, where: Endpoint, waits: Waits) -> None:
        import httpx2

        from piton.core import tls

        _load_async_backend()
        self.base_url = where.base_url
        self._waits = waits
        self._url = f"{where.base_url}/v1/messages"
        try:
            verify = tls.for_url(where.base_url)
        except tls.CertificatesError as e:
            raise ProviderError(str(e), kind="config") from e
        self._client = httpx2.AsyncClient(headers=where.headers, timeout=http_timeout(waits), verify=verify)

    async def open(self, body: bytes) -> Opened:
        import httpx2

        request = self._client.build_request("POST", self._url, content=body)
        try:
            response = await self._client.send(request, stream=True)
        except httpx2.TransportError as e:
            raise connection_failure(e, self.base_url, self._waits) from e
        if response.is_success:
            return _SSEReply(response)
        raise status_failure(await _status_error(response), self.base_url)

    async def model_name(self, model: str, timeout_s: float) -> str:
        """The model's display name, from `GET /v1/models/{id}` (spends no tokens)."""
        import httpx2

        try:
            response = await self._client.get(
                f"{self.base_url}/v1/models/{quote(model, safe='')}", timeout=timeout_s
            )
        except httpx2.TransportError as e:
            raise ProviderError(f"cannot reach {self.base_url}: {describe(e)}", kind="connection") from e
        if not response.is_success:
            error = StatusError.from_body(
                response.status_code, response.text, response.headers, response.reason_phrase
            )
            failure = status_failure(error, self.base_url)
            raise failure.give_up(1) if isinstance(failure, Retry) else failure
        info = response.json()
        return str(info.get("display_name") or info.get("id") or model)

    async def aclose(self) -> None:
        await self._client.aclose()


def _load_async_backend() -> None:
    """httpx2's async transport loads anyio's asyncio backend and primitives at its first request (a
    tenth of a second); loading them with the client (before the session opens, see `prewarm`)
    keeps that off the first request's path."""
    import anyio

    anyio.run(anyio.sleep, 0)
    for name in ("Lock", "Event", "Semaphore", "CancelScope"):
        getattr(anyio, name)


async def _status_error(response: httpx2.Response) -> StatusError:
    """The error response read (a bounded amount of it) and closed."""
    import httpx2

    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= _ERROR_BODY_LIMIT:
                break
    except httpx2.TransportError:  # what came before the break is enough to say what went wrong
        pass
    finally:
        await response.aclose()
    text = b"".join(chunks)[:_ERROR_BODY_LIMIT].decode("utf-8", "replace")
    return StatusError.from_body(response.status_code, text, response.headers, response.reason_phrase)
