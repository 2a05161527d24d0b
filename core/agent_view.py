"""The agent as compaction sees it (`Conversation`): its history and window, and the means to ask
the model and to swap the history."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Protocol

from piton.core.conversation.events import MessageDone, StreamEvent
from piton.core.conversation.messages import Message
from piton.core.conversation.usage import Usage
from piton.core.providers import ModelRequest, Provider

if TYPE_CHECKING:
    from piton.core.agent_parts import AgentConfig
    from piton.core.context.meter import ContextMeter
    from piton.core.tools import ToolContext, ToolRegistry


class Agent(Protocol):
    """What of `piton.core.agent.Agent` the view uses (that module imports this one)."""

    history: list[Message]
    config: AgentConfig
    meter: ContextMeter
    tools: ToolRegistry
    context: ToolContext
    provider: Provider

    def context_used(self) -> int: ...

    def context_limit(self) -> int: ...

    def replace_history(
        self, messages: list[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None: ...

    def count_usage(self, model: str, usage: Usage) -> None: ...


class AgentConversation:
    """A view of one agent for its compactor."""

    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    @property
    def history(self) -> Sequence[Message]:
        return self._agent.history

    @property
    def model(self) -> str:
        return str(self._agent.config.model)

    def used(self) -> int:
        return self._agent.context_used()

    def limit(self) -> int:
        return self._agent.context_limit()

    def tokens(self, message: Message) -> int:
        return sum(self._agent.meter.counter.message(message))

    def replace(
        self, messages: list[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        self._agent.replace_history(messages, stubs=stubs, **info)

    def carry_over(self) -> list[str]:
        return self._agent.tools.carry_over(self._agent.context)

    async def ask(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        agent = self._agent
        async for event in agent.provider.stream(request):
            if isinstance(event, MessageDone):
                agent.count_usage(event.model or agent.config.model, event.usage)
            yield event
