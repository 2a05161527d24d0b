"""Each request to the provider its model names: Claude models to the Anthropic provider (the API,
Bedrock or Vertex), `provider:model` ones to an OpenAI-compatible endpoint, made when first needed.
One session may use both: a subagent, a skill or the fallback may name another model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from piton.core.models import split_model
from piton.core.providers import ModelRequest, Provider

if TYPE_CHECKING:  # loaded when a request needs it: whether a run needs Anthropic is asked first
    from piton.core.providers.openai_compat import OpenAICompatProvider


def default_model(model: str | None) -> str:
    """The model a run starts with, as far as is known before its settings are read."""
    import os

    return model or os.environ.get("ANTHROPIC_MODEL", "")


def needs_anthropic(model: str | None) -> bool:
    """Whether a run of `model` (or the environment's default) asks Anthropic's API first."""
    return split_model(default_model(model))[0] is None


class Router:
    def __init__(self, anthropic: Provider, default_model: str | None = None) -> None:
        self.anthropic = anthropic
        self.default = default_model or ""
        self._others: dict[str, OpenAICompatProvider] = {}

    def _for(self, model: str) -> Any:
        name, _ = split_model(model)
        if name is None:
            return self.anthropic
        if name not in self._others:
            from piton.core.providers.openai_compat import OpenAICompatProvider

            self._others[name] = OpenAICompatProvider(name)
        return self._others[name]

    def check(self) -> None:
        self._for(self.default).check()

    def prewarm(self) -> None:
        """When the run starts with a Claude model, make Anthropic's transport now (the HTTP client,
        or the SDK for the clouds)."""
        warm = getattr(self.anthropic, "prewarm", None)
        if warm is not None and needs_anthropic(self.default):
            warm()

    def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        return self._for(request.model).stream(request)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        await self.anthropic.aclose()
        for other in self._others.values():
            await other.aclose()

    def __getattr__(self, name: str) -> Any:
        """What callers ask of the Anthropic provider itself (`probe`, `platform`, `prewarm`)."""
        return getattr(self.anthropic, name)
