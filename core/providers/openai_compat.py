"""OpenAI-compatible endpoints through the official `openai` SDK's streaming Chat Completions:
OpenAI itself and the local servers that speak its API (Ollama, LM Studio, vLLM, llama.cpp's
server). A model is named `provider:model` (`openai:gpt-5`, `ollama:qwen3-coder`). The format,
both ways, is `openai_format`'s; this module is the provider protocol around it (docs/providers.md
walks through it as the example of adding a provider).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from typing import Any

from piton.core.conversation.events import StreamEvent
from piton.core.models import add_window
from piton.core.providers import ModelRequest, ProviderError
from piton.core.providers.openai_format import (
    base_url,
    chat_events,
    chat_messages,
    chat_tools,
    error_message,
    split_model,
)

_KINDS = {401: "auth", 403: "permission", 404: "not_found", 429: "rate_limit", 400: "invalid_request"}


class OpenAICompatProvider:
    def __init__(self, name: str, *, api_key: str | None = None, url: str | None = None) -> None:
        self.name = name
        self._api_key = api_key
        self._url = url
        self._client: Any = None
        self._asked: set[str] = set()  # models whose context window was asked of the server

    def _key(self) -> str | None:
        """OpenAI's key; local servers take any (the SDK insists on one)."""
        if self.name != "openai":
            return self._api_key or "local"
        return self._api_key or os.environ.get("OPENAI_API_KEY")

    def check(self) -> None:
        import importlib.util

        if importlib.util.find_spec("openai") is None:
            raise ProviderError(
                "OpenAI-compatible models need the openai SDK: pip install 'piton-code[openai]'",
                kind="config",
            )
        if self._key() is None:
            raise ProviderError("OPENAI_API_KEY is not set. Export your key and run again.", kind="config")

    def _sdk(self) -> Any:
        if self._client is None:
            self.check()
            import openai

            from piton.core import tls

            url = self._url or base_url(self.name, os.environ)
            try:
                # the process's certificates, read once, and none for a local server on plain http:
                # the SDK's own client read the whole bundle for every provider made (25-70 ms each)
                verify = tls.for_url(url)
            except tls.CertificatesError as e:
                raise ProviderError(str(e), kind="config") from e
            self._client = openai.AsyncOpenAI(
                api_key=self._key(),
                base_url=url,
                max_retries=2,
                http_client=openai.DefaultAsyncHttpxClient(verify=verify),
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        client = self._sdk()  # says what is missing (the SDK, a key) before anything else
        import openai

        if request.model not in self._asked:
            self._asked.add(request.model)
            if (window := await server_window(client, split_model(request.model)[1])) is not None:
                add_window(request.model, window)
        params: dict[str, Any] = {
            "model": split_model(request.model)[1],
            "messages": chat_messages(request),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools := chat_tools(request.tools):
            params["tools"] = tools
        if request.max_tokens:
            params["max_completion_tokens" if self.name == "openai" else "max_tokens"] = request.max_tokens
        reasoning = re.match(r"(gpt-5|o\d)", split_model(request.model)[1])
        if request.effort in ("low", "medium", "high") and self.name == "openai" and reasoning:
            params["reasoning_effort"] = request.effort
        try:
            chunks = await client.chat.completions.create(**params)
            try:
                async for event in chat_events(chunks, request.model):
                    yield event
            finally:
                await chunks.close()  # an interrupt leaves no response open
        except openai.APIStatusError as e:
            kind = (
                "overloaded"
                if e.status_code in (502, 503, 529)
                else _KINDS.get(e.status_code, "invalid_request")
            )
            raise ProviderError(
                f"{self.name} API error {e.status_code}: {error_message(e)}", kind=kind, status=e.status_code
            ) from e
        except openai.APIConnectionError as e:
            raise ProviderError(
                f"cannot reach {client.base_url}: {e.__cause__ or e}", kind="connection"
            ) from e
        except openai.APIError as e:  # an error event in the stream, a body that is not what it should be
            raise ProviderError(f"{self.name} API error: {error_message(e)}", kind="stream") from e
        except (ValueError, TypeError) as e:  # a garbled event
            raise ProviderError(f"{self.name} sent a reply that cannot be read: {e}", kind="stream") from e


_WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")


async def server_window(client: Any, name: str) -> int | None:
    """The context window the server gives for `name`, if it says (vLLM's `max_model_len`,
    llama.cpp's `meta.n_ctx_train`, OpenRouter's and LM Studio's `context_length`…); None when it
    does not, or cannot be asked (OpenAI's own models are in the table)."""
    try:
        # once, quickly: a server that cannot say must not hold up the request
        model = await client.with_options(max_retries=0, timeout=5.0).models.retrieve(name)
    except Exception:  # a server without the endpoint, or an error: the table's value stands
        return None
    extra = dict(getattr(model, "model_extra", None) or {})
    meta = extra.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    for value in [*(extra.get(k) for k in _WINDOW_KEYS), meta.get("n_ctx_train"), meta.get("n_ctx")]:
        if isinstance(value, int) and value > 1024:
            return value
    return None
