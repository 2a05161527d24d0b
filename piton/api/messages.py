"""The messages a run yields, typed: what `piton -p --output-format stream-json` prints, one object
per line, and what `piton.query` and `piton.Agent` yield to Python. `MessageStream` makes them from
the agent's events; the shapes are Claude Code's, so parsers written for it read both unchanged."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from piton import __version__
from piton.api.init_line import Catalogue
from piton.api.partial import PartialEvents
from piton.api.result_line import result_to_dict
from piton.api.task_events import TaskEvents
from piton.api.tool_use_result import by_result
from piton.api.turn_clock import TurnClock
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
    Compacting,
    HookResponse,
    MessageDone,
    Notice,
    Result,
    SessionStarted,
    StreamRetry,
    SubagentEvent,
    TextDelta,
    ThinkingDelta,
    ToolFinished,
    ToolInputDelta,
    ToolResultsMessage,
    ToolUseStart,
)
from piton.core.conversation.messages import ContentBlock, Message, TextBlock
from piton.core.version import CLAUDE_CODE_PROTOCOL

if TYPE_CHECKING:
    pass


def _new_uuid() -> str:
    return str(uuid.uuid4())


def _now() -> str:
    """An ISO 8601 UTC time to the millisecond, as Claude Code stamps its lines."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class SystemMessage:
    """`system` lines: `init` (the session, its tools and model), `api_retry`, `compact_boundary`,
    `hook_response`; and `notice` (one line for people, which stream-json writes to stderr)."""

    subtype: str
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "system", "subtype": self.subtype, **self.data}


@dataclass(slots=True)
class AssistantMessage:
    """One content block of a reply of the model, as Claude Code sends them (a subagent's carries
    the id of the Task call it serves)."""

    content: list[ContentBlock]
    model: str
    message_id: str
    stop_reason: str | None
    usage: dict[str, Any]
    session_id: str
    parent_tool_use_id: str | None = None
    uuid: str = field(default_factory=_new_uuid)
    timestamp: str = field(default_factory=_now)
    request_id: str | None = None  # the API's id for the request that made the reply
    more: dict[str, Any] = field(default_factory=dict)  # `thinking_duration_ms` on a thinking line

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def to_dict(self) -> dict[str, Any]:
        message = Message(role="assistant", content=self.content)
        return {
            "type": "assistant",
            "message": {
                "id": self.message_id,
                "type": "message",
                "role": "assistant",
                "model": self.model,
                "content": message.wire_content(),
                "stop_reason": self.stop_reason,
                "stop_sequence": None,
                "usage": self.usage,
                "context_management": None,
            },
            "parent_tool_use_id": self.parent_tool_use_id,
            "session_id": self.session_id,
            "uuid": self.uuid,
            "timestamp": self.timestamp,
            **({"request_id": self.request_id} if self.request_id else {}),
            **self.more,
        }


@dataclass(slots=True)
class UserMessage:
    """A tool's result going back to the model, and the tool's own account of it for clients."""

    content: list[ContentBlock]
    session_id: str
    parent_tool_use_id: str | None = None
    tool_use_result: str | dict[str, Any] | None = None
    uuid: str = field(default_factory=_new_uuid)
    timestamp: str = field(default_factory=_now)

    def to_dict(self) -> dict[str, Any]:
        line: dict[str, Any] = {
            "type": "user",
            "message": Message(role="user", content=self.content).to_wire(),
            "parent_tool_use_id": self.parent_tool_use_id,
            "session_id": self.session_id,
            "uuid": self.uuid,
            "timestamp": self.timestamp,
        }
        if self.tool_use_result is not None:
            line["tool_use_result"] = self.tool_use_result
        return line


@dataclass(slots=True)
class ResultMessage:
    """The end of a run or turn: its answer, cost, usage and how it ended (`subtype`)."""

    result: Result
    uuid: str = field(default_factory=_new_uuid)
    more: dict[str, Any] = field(default_factory=dict)  # what the stream knows: timings, subagents

    @property
    def subtype(self) -> str:
        return self.result.subtype

    @property
    def is_error(self) -> bool:
        return self.result.is_error

    @property
    def text(self) -> str:
        return self.result.result

    @property
    def session_id(self) -> str:
        return self.result.session_id

    @property
    def total_cost_usd(self) -> float:
        return self.result.total_cost_usd

    @property
    def structured_output(self) -> Any:
        """The answer of a run with `output_schema`, matching it (None otherwise)."""
        return self.result.structured_output

    def to_dict(self) -> dict[str, Any]:
        return {**result_to_dict(self.result), **self.more, "uuid": self.uuid}


@dataclass(slots=True)
class StreamEvent:
    """A raw Messages API stream event, rebuilt as the reply streams (`include_partial_messages`)."""

    event: dict[str, Any]
    session_id: str
    parent_tool_use_id: str | None = None
    uuid: str = field(default_factory=_new_uuid)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "stream_event",
            "uuid": self.uuid,
            "session_id": self.session_id,
            "event": self.event,
            "parent_tool_use_id": self.parent_tool_use_id,
        }


RunMessage = SystemMessage | AssistantMessage | UserMessage | ResultMessage | StreamEvent


def retry_category(event: StreamRetry) -> str:
    """The error class Claude Code's `api_retry` line gives, for parsers written against it."""
    if event.status == 429 or event.error_type == "rate_limit_error":
        return "rate_limit"
    if (event.status or 0) >= 500 or event.error_type in ("overloaded_error", "api_error"):
        return "server_error"
    return "unknown"


class MessageStream:
    """Turns the agent's events into the run's messages. It keeps what a message needs from events
    before it: the session id, the results of a batch of calls, the partial stream's blocks."""

    def __init__(
        self, *, partial: bool = False, catalogue: Catalogue | None = None, hook_events: bool = False
    ) -> None:
        self.session_id = ""
        self.catalogue = catalogue or Catalogue()
        self.hook_events = hook_events  # a `hook_response` message for each hook that ran
        # the MCP servers' state and prompts change as they connect: read when `init` is made
        self.mcp_servers: Callable[[], list[dict[str, str]]] = list
        self.mcp_commands: Callable[[], list[str]] = list
        self._partial = PartialEvents() if partial else None
        self._finished: dict[str, ToolFinished] = {}  # results of this batch, for `tool_use_result`
        self._thought = 0  # characters of thinking streamed in this reply (`thinking_tokens`)
        self._tasks = TaskEvents()  # the subagents' `task_*` lines
        self._clock = TurnClock()
        self._compacting = False  # a `status: compacting` line is out, its end not yet

    def convert(self, event: AgentEvent) -> list[RunMessage]:
        match event:
            case Notice(text=text, level=level) if self._compacting and text.startswith("compaction failed"):
                self._compacting = False
                notice = SystemMessage("notice", {"text": text, "session_id": self.session_id})
                return [self._status(None, compact_result="failed"), notice]
            case Notice(text=text, level=level):
                info = {"level": "info"} if level == "info" else {}  # what was done, not a warning
                return [SystemMessage("notice", {"text": text, **info, "session_id": self.session_id})]
            case StreamRetry():
                self._thought = 0
                self._clock.retried()
                return self._retry(event, None)
            case SubagentEvent():
                return self._subagent(event)
            case Result():
                self._thought = 0
                if self._partial is not None:
                    self._partial.reset()  # an interrupted message never gets its message_stop
                more = {**self._clock.result_fields(event.model_usage), "subagent_stats": self._tasks.stats()}
                return [ResultMessage(event, more=more)]
            case SessionStarted():
                self.session_id = event.session_id
                self._clock.turn()
                return [self._init(event)]
            case TextDelta() | ThinkingDelta() | ToolUseStart() | ToolInputDelta():
                self._clock.streamed(thinking=isinstance(event, ThinkingDelta))
                told = self._thinking_tokens(event) if isinstance(event, ThinkingDelta) else []
                if self._partial is None:
                    return told
                return [*told, *(StreamEvent(e, self.session_id) for e in self._partial.delta(event))]
            case MessageDone():
                self._thought = 0
                self._tasks.calls(event.message)
                streamed = [] if self._partial is None else self._partial.done(event)
                lines = self._assistant(event, thought_ms=self._clock.reply_done())
                return [*(StreamEvent(e, self.session_id) for e in streamed), *lines]
            case ToolFinished():
                self._finished[event.tool_use_id] = event
            case ToolResultsMessage():
                return self._tool_results(event)
            case HookResponse():
                return [_hook_response(event, self.session_id)] if self.hook_events else []
            case Compacting():
                self._compacting = True
                return [self._status("compacting")]
            case Compacted():
                metadata = {"trigger": event.trigger, "pre_tokens": event.pre_tokens}
                data = {"compact_metadata": metadata, "session_id": self.session_id, "uuid": _new_uuid()}
                done = [self._status(None, compact_result="success")] if self._compacting else []
                self._compacting = False
                return [*done, SystemMessage("compact_boundary", data)]
        return []

    def _init(self, event: SessionStarted) -> SystemMessage:
        return SystemMessage(
            "init",
            {
                "cwd": event.cwd,
                "session_id": event.session_id,
                "tools": list(event.tools),
                "mcp_servers": self.mcp_servers(),
                "model": event.model,
                "permissionMode": event.permission_mode,
                "slash_commands": [*self.catalogue.slash_commands, *self.mcp_commands()],
                "agents": self.catalogue.agent_names(),
                "skills": list(self.catalogue.skills),
                "apiKeySource": "ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else "none",
                "output_style": self.catalogue.output_style,
                **self.catalogue.session,
                # SDKs read Claude Code's version field to judge what the CLI supports
                "claude_code_version": CLAUDE_CODE_PROTOCOL,
                "piton_version": __version__,
                "uuid": _new_uuid(),
            },
        )

    def _status(self, status: str | None, **more: str) -> SystemMessage:
        """Claude Code's `system/status`: `compacting` while a summary is written, then null."""
        return SystemMessage(
            "status", {"status": status, **more, "session_id": self.session_id, "uuid": _new_uuid()}
        )

    def _thinking_tokens(self, event: ThinkingDelta) -> list[RunMessage]:
        """Claude Code's `system/thinking_tokens`: how much the model has thought so far in this
        reply, estimated (four characters a token), as it streams."""
        before, self._thought = self._thought, self._thought + len(event.thinking)
        tokens, delta = -(-self._thought // 4), -(-self._thought // 4) - -(-before // 4)
        if not delta:
            return []
        data = {"estimated_tokens": tokens, "estimated_tokens_delta": delta, "session_id": self.session_id}
        return [SystemMessage("thinking_tokens", {**data, "uuid": _new_uuid()})]

    def _assistant(
        self, event: MessageDone, parent: str | None = None, thought_ms: int | None = None
    ) -> list[AssistantMessage]:
        """One line per content block, as Claude Code streams them: each with the reply's id and
        usage, and `stop_reason` null (a block ends before the reply says why it stopped; the
        result line has it); a thinking block's says how long it took."""
        blocks = [[block] for block in event.message.content] or [[]]
        lines = [
            AssistantMessage(
                content=block,
                model=event.model,
                message_id=event.message_id,
                stop_reason=None,
                usage=event.usage.to_dict(),
                session_id=self.session_id,
                parent_tool_use_id=parent,
                request_id=event.request_id or None,
            )
            for block in blocks
        ]
        thinking = next((line for line in lines if line.content and line.content[0].type == "thinking"), None)
        if thinking is not None and thought_ms is not None:
            thinking.more["thinking_duration_ms"] = thought_ms
        return lines

    def _tool_results(self, event: ToolResultsMessage) -> list[RunMessage]:
        """A `user` line per result, as Claude Code writes them (`by_result`)."""
        return [
            UserMessage(blocks, self.session_id, tool_use_result=shown)
            for blocks, shown in by_result(event.message.content, self._finished)
        ]

    def _retry(self, event: StreamRetry, parent: str | None) -> list[RunMessage]:
        if self._partial is not None and parent is None:
            self._partial.reset()  # what the failed attempt streamed is void
        # Claude Code's shape, so parsers written for it read ours; `reason` says it in words
        data = {
            "attempt": event.attempt,
            "max_retries": event.max_attempts - 1,
            "retry_delay_ms": round(event.delay_s * 1000),
            "error_status": event.status,
            "error": retry_category(event),
            "reason": event.reason,
            "parent_tool_use_id": parent,
            "session_id": self.session_id,
            "uuid": _new_uuid(),
        }
        return [SystemMessage("api_retry", data)]

    def _subagent(self, event: SubagentEvent) -> list[RunMessage]:
        """A subagent's messages, as Claude Code streams them: tagged with the Task call's id."""
        inner, parent = event.event, event.parent_tool_use_id
        told: list[RunMessage] = [
            SystemMessage(subtype, {**data, "session_id": self.session_id})
            for subtype, data in self._tasks.seen(event)
        ]
        if told:
            return told
        if isinstance(inner, StreamRetry):
            return self._retry(inner, parent)
        if isinstance(inner, MessageDone):
            return list(self._assistant(inner, parent))
        if isinstance(inner, ToolResultsMessage):
            return [UserMessage(list(inner.message.content), self.session_id, parent_tool_use_id=parent)]
        return []


def _hook_response(event: HookResponse, session_id: str) -> SystemMessage:
    """Claude Code's line for a hook that ran (the Agent SDK reads it as a HookEventMessage)."""
    data: dict[str, Any] = {
        "hook_id": _new_uuid(),
        "hook_name": event.hook_event,
        "hook_event": event.hook_event,
        "output": event.stdout + event.stderr,
        "stdout": event.stdout,
        "stderr": event.stderr,
        "outcome": event.outcome,
        "session_id": session_id,
        "uuid": _new_uuid(),
    }
    if event.exit_code is not None:
        data["exit_code"] = event.exit_code
    return SystemMessage("hook_response", data)
