"""Model providers: the `Provider` protocol, the request it serves and the one error it raises."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any, Protocol

from piton.core.records import record

if TYPE_CHECKING:  # kept out at run time: `credentials` is read before anything heavy is loaded
    from piton.core.conversation.events import StreamEvent
    from piton.core.conversation.messages import Message


@record(frozen=True)
class ModelRequest:
    model: str
    system: str
    messages: Sequence[Message]
    tools: Sequence[dict[str, Any]] = field(default_factory=tuple)
    thinking: bool = True
    max_tokens: int | None = None  # None: the model table's value
    # how many of `messages` the previous request of this conversation sent: a cache breakpoint there
    # reads back what that request wrote, however many blocks were added since
    cached_upto: int = 0
    # False: no cache breakpoints at all, for a one-off request whose prefix no later request repeats
    # (a cache write costs 1.25x input and would never be read)
    cache: bool = True
    effort: str | None = None  # `output_config.effort`, sent only to models that take it
    thinking_display: str | None = None  # `thinking.display`: summarized or omitted
    # True: tool search is on for this request, so `tool_reference` blocks go as they are (each names
    # a tool of `tools`, a loaded deferred one marked `defer_loading`); False: each becomes a line of text
    tool_references: bool = False


class Provider(Protocol):
    def check(self) -> None:
        """Raise `ProviderError` when no request could succeed (no credentials...), before a run starts."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one assistant reply; the last event is a `MessageDone`. Raise `ProviderError`."""
        ...

    async def aclose(self) -> None:
        """Release connections, on the event loop that used them."""
        ...


class ProviderError(Exception):
    """A request that cannot succeed as things stand; the message is one line meant for people.

    kind: auth | permission | invalid_request | not_found | rate_limit | overloaded | connection |
    timeout | stream | config
    """

    def __init__(self, message: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.api_seconds = 0.0  # spent waiting on the API before it failed
