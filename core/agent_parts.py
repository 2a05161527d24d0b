"""What an agent is made of besides its provider and tools: its configuration, and the collaborators
the composition root hands it whole at construction (`AgentParts`): where it logs, what checks its
calls, what looks at their results, what watches its turns, the hooks of its session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from piton.core.conversation.events import AgentEvent
from piton.core.conversation.messages import Message, ToolUseBlock
from piton.core.models import Prices
from piton.core.records import record
from piton.core.tools import ToolResult

if TYPE_CHECKING:
    from piton.core.activation_prep import ActivationPreparer
    from piton.core.context.compaction import Compactor
    from piton.core.context.metrics import SessionMetrics
    from piton.core.context.result_store import ResultCapper
    from piton.core.conversation.usage import Usage
    from piton.core.deferral import DeferredTools, ToolSearchMode
    from piton.core.hooks.session import Hooks
    from piton.core.safety.permissions import PermissionGate
    from piton.core.structured import OutputSchema
    from piton.core.tools import ToolContext


@record
class AgentConfig:
    model: str
    system_prompt: str
    cwd: Path
    session_id: str
    max_turns: int | None = None
    thinking: bool = True
    context_window: int | None = None  # None: the model table's
    max_output_tokens: int | None = None  # None: the model table's
    skills_listing: str = ""  # the part of the system prompt that lists the skills (for /context)
    max_budget_usd: float | None = None  # the run stops before a turn once it has cost more
    effort: str | None = None  # low ... max: sent to models that take an effort level
    thinking_display: str | None = None  # `thinking.display`: summarized or omitted
    output: OutputSchema | None = None  # `--json-schema`: the main agent's answer must match it
    fallback_model: str | None = None  # the model to go on with once the API stays overloaded
    max_budget_tokens: int | None = None  # the run stops before a request once it has used more tokens
    output_style: str | None = None  # a style's name (not Default): the model is reminded each turn
    prices: Mapping[str, Prices] = field(default_factory=dict)  # the session's own (`modelPrices`)
    tool_search: ToolSearchMode | None = None  # None: every tool's definition goes in every request


class Transcript(Protocol):
    """Where the agent logs what it appends (a session log, or nothing)."""

    def append_message(
        self,
        message: Message,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        line_id: str | None = None,
    ) -> None: ...

    def record(self, kind: str, **data: object) -> None: ...

    def compacted(
        self, messages: Sequence[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        """Log that the history became `messages` (or the old one with `stubs` for some results)."""
        ...


class TurnObserver(Protocol):
    """Sees each event of the main agent's turns as it is yielded (telemetry); `ended` says a turn
    stopped without its `Result` (interrupted, or failed inside)."""

    def seen(self, event: AgentEvent) -> None: ...

    def ended(self) -> None: ...


class Blind:
    """An observer that has failed: it sees nothing more."""

    def seen(self, event: AgentEvent) -> None:
        pass

    def ended(self) -> None:
        pass


class AfterTool(Protocol):
    """Looks at each finished call before the model sees its result (PostToolUse hooks): returns the
    result to send, the same or with feedback added."""

    async def __call__(self, use: ToolUseBlock, result: ToolResult) -> ToolResult: ...


class AfterToolChain:
    """The steps that look at each finished call, in the order they were put: the settings'
    PostToolUse hooks, then a client's (the library's Python hooks, the Agent SDK's callbacks).
    Each step has an owner's name; putting a step under a name already there replaces it in place
    (a client that initializes again)."""

    def __init__(self, steps: Mapping[str, AfterTool] | None = None) -> None:
        self._steps: dict[str, AfterTool] = dict(steps or {})

    def put(self, name: str, step: AfterTool) -> None:
        self._steps[name] = step

    def __bool__(self) -> bool:
        return bool(self._steps)

    async def __call__(self, use: ToolUseBlock, result: ToolResult) -> ToolResult:
        for step in list(self._steps.values()):
            result = await step(use, result)
        return result


class Working(Protocol):
    """What the loop's collaborators (`TurnRules`, `ToolRound`) see of the agent they serve: its
    configuration, context and history, and how a message joins it."""

    config: AgentConfig
    history: list[Message]
    context: ToolContext
    gate: PermissionGate | None
    metrics: SessionMetrics

    def append(
        self,
        message: Message,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        line_id: str | None = None,
    ) -> None: ...

    def max_output(self) -> int: ...


@record
class AgentParts:
    """An agent's collaborators, each optional: without them an agent logs nothing, asks nobody,
    caps no result and never compacts (tests, and callers that decided already)."""

    transcript: Transcript | None = None
    context: ToolContext | None = None
    gate: PermissionGate | None = None  # None: every call is allowed
    capper: ResultCapper | None = None
    compactor: Compactor | None = None
    hooks: Hooks | None = None  # the settings' hooks (Stop, UserPromptSubmit, PreCompact…)
    after_tool: AfterToolChain = field(default_factory=AfterToolChain)
    observer: TurnObserver | None = None  # None: nothing watches (no telemetry)
    prepare: ActivationPreparer | None = None  # runs a skill's `!`cmd`` lines, inlines `@file`s
    agent_id: str | None = None  # a subagent's id (its stop is a SubagentStop)
    deferred: DeferredTools | None = None  # the tools held back until ToolSearch loads them
