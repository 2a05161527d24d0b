"""Typed events: what a provider streams and what the agent yields to its consumers.

The agent never prints; the REPL renderer and the headless writers are two readers of these.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from piton.core.conversation.messages import Message
from piton.core.conversation.usage import Usage
from piton.core.records import record

if TYPE_CHECKING:
    from piton.core.conversation.results import ToolResult


# -- streamed by a provider ----------------------------------------------------------------------


@record(frozen=True)
class TextDelta:
    text: str


@record(frozen=True)
class ThinkingDelta:
    thinking: str


@record(frozen=True)
class ToolUseStart:
    id: str
    name: str


@record(frozen=True)
class ToolInputDelta:
    id: str
    partial_json: str


@record(frozen=True)
class StreamRetry:
    """Attempt `attempt` of `max_attempts` failed: whatever it streamed is void, and the provider asks
    again after `delay_s`. `reason` says why in a few words people can act on (never empty);
    `status` and `error_type` are the HTTP status and the API's error type, when there was one."""

    attempt: int
    max_attempts: int
    delay_s: float
    reason: str
    status: int | None = None
    error_type: str | None = None


@record(frozen=True)
class MessageDone:
    """One complete assistant reply. `input_errors` maps tool_use ids whose input was not valid JSON
    to the parse error (their `input` is then `{}`)."""

    message: Message
    usage: Usage
    stop_reason: str | None
    model: str
    message_id: str
    input_errors: dict[str, str] = field(default_factory=dict)
    # the results of server-side web searches the reply made (title and URL, or `error`)
    web_results: list[dict[str, str]] = field(default_factory=list)
    # time spent waiting on the API for this reply, from sending the request to the end of its stream
    # (the SDK's retries included); what `duration_api_ms` adds up
    api_seconds: float = 0.0
    request_id: str = ""  # the API's id for the request (its `request-id` header), when it sent one


@record(frozen=True)
class Notice:
    """Something people should know that does not fail the run (a deprecated model, a skipped line, a
    setting that could not be read); or, at level "info", what was done for them (a file attached)."""

    text: str
    level: Literal["warning", "info"] = "warning"


StreamEvent = TextDelta | ThinkingDelta | ToolUseStart | ToolInputDelta | StreamRetry | Notice | MessageDone


# -- yielded by the agent ------------------------------------------------------------------------


@record(frozen=True)
class SessionStarted:
    session_id: str
    model: str
    cwd: str
    tools: tuple[str, ...]
    permission_mode: str = "default"


@record(frozen=True)
class ToolStarted:
    tool_use_id: str
    name: str
    input: dict[str, Any]


@record(frozen=True)
class ToolFinished:
    tool_use_id: str
    name: str
    result: ToolResult
    duration_s: float


@record(frozen=True)
class SubagentEvent:
    """Something a subagent did, reported through the Task call that started it."""

    parent_tool_use_id: str
    agent_id: str
    agent_type: str
    event: Any  # the subagent's own AgentEvent
    transcript: str = ""  # where its own session log is written, if anywhere


@record(frozen=True)
class Compacting:
    """A summary of the conversation is being written (a model request: it takes a while)."""

    trigger: str


@record(frozen=True)
class Compacted:
    """The history was compacted: older tool results stubbed, or the earlier part summarised."""

    trigger: str  # auto | manual
    pre_tokens: int
    post_tokens: int
    phase: str  # tool-results | summary
    usage: Usage | None = None  # what the summary request cost (counted in the run's usage already)
    model: str | None = None


@record(frozen=True)
class HookResponse:
    """A hook command ran (Claude Code's `system`/`hook_response` line)."""

    hook_event: str  # PreToolUse, Stop, …
    command: str
    exit_code: int | None  # None: it timed out or could not start
    stdout: str
    stderr: str
    outcome: str  # success | blocked | error
    tool_use_id: str | None = None


@record(frozen=True)
class ToolResultsMessage:
    """The user message carrying every tool result of one turn, as appended to the history."""

    message: Message


@record(frozen=True)
class Result:
    """The run's outcome; always the last event. Shaped after Claude Code's result message."""

    subtype: str  # success | error_max_turns | error_during_execution
    is_error: bool
    result: str
    session_id: str
    num_turns: int
    duration_ms: int
    duration_api_ms: int
    usage: Usage
    model_usage: dict[str, dict[str, Any]]
    total_cost_usd: float
    stop_reason: str | None = None
    errors: tuple[str, ...] = ()
    permission_denials: tuple[dict[str, Any], ...] = ()
    metrics: dict[str, Any] = field(default_factory=dict)
    structured_output: Any = None  # the value a `--json-schema` run handed in
    terminal_reason: str = "completed"  # why the loop ended, in Claude Code's words
    api_error_status: int | None = None  # the HTTP status of the API error that ended it

    @classmethod
    def cut_short(cls, session_id: str, text: str, errors: tuple[str, ...], duration_ms: int) -> Result:
        """The result of a turn that ended without the agent's own (interrupted, or failed inside):
        clients wait for one."""
        return cls(
            subtype="error_during_execution",
            is_error=True,
            result=text,
            session_id=session_id,
            num_turns=0,
            duration_ms=duration_ms,
            duration_api_ms=0,
            usage=Usage(),
            model_usage={},
            total_cost_usd=0.0,
            errors=errors,
            terminal_reason="aborted_streaming",
        )


AgentEvent = (
    StreamEvent
    | SessionStarted
    | ToolStarted
    | ToolFinished
    | ToolResultsMessage
    | SubagentEvent
    | Compacting
    | Compacted
    | HookResponse
    | Result
)
