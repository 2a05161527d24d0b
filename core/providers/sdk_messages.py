"""Requests through the `anthropic` SDK, where it earns its import: Amazon Bedrock (SigV4, AWS's binary
event stream), Google Vertex AI (Google's credentials), and first-party credentials only the SDK
resolves (a profile on disk, workload identity federation). The body is still Piton's own, sent with
the client's documented `post`; the SDK's errors are read into the same failures as plain HTTP's.
"""

from __future__ import annotations

import gc
import json
import os
import threading
from collections.abc import AsyncGenerator
from typing import Any

from piton.core.providers import ProviderError
from piton.core.providers.anthropic_events import bedrock_batches, sse_batches
from piton.core.providers.cloud import Platform, make_client
from piton.core.providers.credentials import NO_API_KEY
from piton.core.providers.failures import Retry, StatusError, connection_failure, describe, status_failure
from piton.core.providers.messages_http import Opened, http_timeout
from piton.core.providers.waits import Waits

PLATFORM_NAMES = {
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
    import concurrent.futures.thread  # noqa: F401  (the pool that resolves host names)

    import anthropic.types  # noqa: F401
    import httpcore2  # noqa: F401

    with _sdk_lock:
        if not _sdk_ready:
            gc.freeze()
            _sdk_ready = True


class _StreamReply:
    def __init__(self, stream: Any, bedrock: bool) -> None:
        self._stream = stream
        self._bedrock = bedrock
        headers = getattr(getattr(stream, "response", None), "headers", None)
        self.request_id = str(headers.get("request-id", "")) if headers is not None else ""

    def events(self) -> AsyncGenerator[list[Any], None]:
        if self._bedrock:
            return bedrock_batches(self._stream)
        return sse_batches(self._stream.response.aiter_bytes())

    async def close(self) -> None:
        await self._stream.close()


class SDKMessages:
    """One SDK client for the platform, made with no retries of its own and Piton's timeouts."""

    def __init__(self, where: Platform, waits: Waits, *, api_key: str | None, base_url: str | None) -> None:
        _load_sdk()
        import anthropic

        self.platform = where
        self._waits = waits
        try:
            client = make_client(
                where,
                os.environ,
                api_key=api_key,
                base_url=base_url,
                max_retries=0,
                timeout=http_timeout(waits),
            )
        except (anthropic.AnthropicError, ValueError, RuntimeError) as e:  # a broken profile, no region
            raise ProviderError(" ".join(str(e).split()), kind="config") from e
        if (
            where == "anthropic"
            and client.api_key is None
            and client.auth_token is None
            and client.credentials is None
        ):
            raise ProviderError(NO_API_KEY, kind="config")
        self._client = client
        self.base_url = str(client.base_url)

    async def open(self, body: bytes) -> Opened:
        import anthropic
        from anthropic import AsyncStream
        from anthropic.types import Message, RawMessageStreamEvent

        # Bedrock's and Vertex's clients move the model into the URL: they need the body as a dict
        content = {"content": body} if self.platform == "anthropic" else {"body": json.loads(body)}
        try:
            stream = await self._client.post(
                "/v1/messages",
                cast_to=Message,
                stream=True,
                stream_cls=AsyncStream[RawMessageStreamEvent],
                **content,
            )
        except anthropic.APIStatusError as e:
            raise status_failure(_status_error(e), self.base_url) from e
        except anthropic.APIConnectionError as e:  # timeouts included: the cause says which
            raise connection_failure(e.__cause__ or e, self.base_url, self._waits) from e
        except anthropic.AnthropicError as e:
            raise ProviderError(f"API request failed: {describe(e)}", kind="stream") from e
        except Exception as e:
            if self.platform == "anthropic":
                raise
            # AWS or Google credentials that cannot be resolved, a project id missing, an expired SSO token
            raise ProviderError(f"{PLATFORM_NAMES[self.platform]}: {describe(e)}", kind="auth") from e
        return _StreamReply(stream, bedrock=self.platform == "bedrock")

    async def model_name(self, model: str, timeout_s: float) -> str:
        import anthropic

        try:
            info = await self._client.models.retrieve(model, timeout=timeout_s)
        except anthropic.APIStatusError as e:
            failure = status_failure(_status_error(e), self.base_url)
            raise failure.give_up(1) if isinstance(failure, Retry) else failure from e
        except anthropic.APIConnectionError as e:
            raise ProviderError(f"cannot reach {self.base_url}: {describe(e)}", kind="connection") from e
        return str(getattr(info, "display_name", "") or info.id)

    async def aclose(self) -> None:
        await self._client.close()


def _status_error(e: Any) -> StatusError:
    message = getattr(e, "api_message", None) or getattr(e, "message", None) or str(e)
    error_type = e.type if isinstance(e.type, str) else None
    return StatusError(e.status_code, error_type, message, e.response.headers, e.response.reason_phrase)
