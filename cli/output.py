"""Headless writers: the agent's events as text, one JSON result, or stream-json lines.

JSON shapes follow Claude Code's (`system/init`, `assistant`, `user`, `result`) so scripts and SDK
parsers written for it read ours unchanged.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from typing import Any, Protocol, TextIO

from piton import __version__
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
    MessageDone,
    Notice,
    Result,
    SessionStarted,
    StreamRetry,
    SubagentEvent,
    ToolFinished,
    ToolResultsMessage,
    ToolStarted,
)
from piton.core.display import Display, FileDiff, TodoList
from piton.core.providers.waits import say_seconds

TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☒"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Writer(Protocol):
    def handle(self, event: AgentEvent) -> None: ...

    def notice(self, text: str) -> None: ...


def tool_label(name: str, tool_input: dict[str, Any], width: int = 60) -> str:
    """`Name(first argument)`, the way a tool call is shown to people."""
    first = next((v for v in tool_input.values() if isinstance(v, str) and v.strip()), "")
    first = " ".join(first.split())
    if len(first) > width:
        first = first[: width - 1] + "…"
    return f"{name}({first})"


def display_text(display: Display | None) -> str:
    """A call's display as plain lines (diffs and task lists; command output is the result itself)."""
    match display:
        case FileDiff(diff=diff):
            return diff
        case TodoList(items=items):
            return "\n".join(f"{TODO_MARKS[i.status]} {i.content}" for i in items)
        case _:
            return ""


def result_to_dict(result: Result) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "result",
        "subtype": result.subtype,
        "is_error": result.is_error,
        "duration_ms": result.duration_ms,
        "duration_api_ms": result.duration_api_ms,
        "num_turns": result.num_turns,
        "result": result.result,
        "session_id": result.session_id,
        "total_cost_usd": result.total_cost_usd,
        "usage": result.usage.to_dict(),
        "modelUsage": result.model_usage,
        "permission_denials": list(result.permission_denials),
        "stop_reason": result.stop_reason,
        "uuid": str(uuid.uuid4()),
    }
    if result.errors:
        out["errors"] = list(result.errors)
    out["metrics"] = result.metrics
    return out


def retry_line(event: StreamRetry) -> str:
    """`retrying in 2 s (529 overloaded_error, attempt 2/5)`: how long, why, and how many tries remain."""
    return (
        f"retrying in {say_seconds(event.delay_s)} ({event.reason}, "
        f"attempt {event.attempt + 1}/{event.max_attempts})"
    )


def retry_category(event: StreamRetry) -> str:
    """The error class Claude Code's `api_retry` line gives, for parsers written against it."""
    if event.status == 429 or event.error_type == "rate_limit_error":
        return "rate_limit"
    if (event.status or 0) >= 500 or event.error_type in ("overloaded_error", "api_error"):
        return "server_error"
    return "unknown"


def compacted_line(event: Compacted) -> str:
    how = "older tool results cleared" if event.phase == "tool-results" else "earlier part summarised"
    return (
        f"compacted the conversation ({event.trigger}, {how}): "
        f"{event.pre_tokens:,} → {event.post_tokens:,} tokens"
    )


class _Base:
    def __init__(self, stdout: TextIO, stderr: TextIO, verbose: bool) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.verbose = verbose

    def notice(self, text: str) -> None:
        self.stderr.write(f"piton: {text}\n")
        self.stderr.flush()

    def handle(self, event: AgentEvent) -> None:
        if isinstance(event, Notice):
            self.notice(event.text)
        elif isinstance(event, StreamRetry):
            self._retry(event)
        elif isinstance(event, SubagentEvent) and isinstance(event.event, StreamRetry):
            self._retry(event.event, event.parent_tool_use_id)
        elif isinstance(event, Result):
            self._result(event)
        else:
            self._event(event)

    def _result(self, result: Result) -> None:
        raise NotImplementedError

    def _retry(self, event: StreamRetry, parent_tool_use_id: str | None = None) -> None:
        """Said with or without --verbose: a wait on the API must never be a silent one."""
        where = " for a subagent" if parent_tool_use_id else ""
        self.notice(f"API request{where} failed; {retry_line(event)}")

    def _event(self, event: AgentEvent, indent: str = "") -> None:
        """Progress lines on stderr for --verbose (a subagent's calls indented under its Task)."""
        if not self.verbose:
            return
        if isinstance(event, SubagentEvent):
            if isinstance(event.event, ToolStarted | ToolFinished):
                self._event(event.event, indent="    ")
            return
        if isinstance(event, ToolStarted):
            self.stderr.write(f"{indent}● {tool_label(event.name, event.input)}\n")
        elif isinstance(event, ToolFinished):
            if event.result.is_error:
                self.stderr.write(f"{indent}  ⎿ {event.result.summary or 'error'}\n")
            shown = display_text(event.result.display)
            if shown:  # the model chose this text: no control sequences may reach the terminal
                safe = _CONTROL.sub("", shown)
                self.stderr.write("".join(f"    {line}\n" for line in safe.splitlines()))
        elif isinstance(event, Compacted):
            self.stderr.write(f"piton: {compacted_line(event)}\n")
        else:
            return
        self.stderr.flush()


class TextWriter(_Base):
    def _result(self, result: Result) -> None:
        if result.is_error:
            self.stderr.write(f"piton: {result.result}\n")
            self.stderr.flush()
        else:
            text = result.result
            self.stdout.write(text if text.endswith("\n") else text + "\n")
            self.stdout.flush()


class JsonWriter(_Base):
    def _result(self, result: Result) -> None:
        self.stdout.write(json.dumps(result_to_dict(result), ensure_ascii=False) + "\n")
        self.stdout.flush()


class StreamJsonWriter(_Base):
    def __init__(self, stdout: TextIO, stderr: TextIO, verbose: bool) -> None:
        super().__init__(stdout, stderr, verbose)
        self.session_id = ""

    def _line(self, data: dict[str, Any]) -> None:
        self.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        self.stdout.flush()

    def _result(self, result: Result) -> None:
        self._line(result_to_dict(result))

    def _event(self, event: AgentEvent, indent: str = "") -> None:
        # progress is in the stream itself; stderr stays for notices
        if isinstance(event, SubagentEvent):
            self._subagent(event)
        elif isinstance(event, SessionStarted):
            self.session_id = event.session_id
            self._line(
                {
                    "type": "system",
                    "subtype": "init",
                    "cwd": event.cwd,
                    "session_id": event.session_id,
                    "tools": list(event.tools),
                    "mcp_servers": [],
                    "model": event.model,
                    "permissionMode": "default",
                    "slash_commands": [],
                    "apiKeySource": "ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else "none",
                    "output_style": "default",
                    "piton_version": __version__,
                    "uuid": str(uuid.uuid4()),
                }
            )
        elif isinstance(event, MessageDone):
            self._message_line("assistant", _assistant_message(event))
        elif isinstance(event, ToolResultsMessage):
            self._message_line("user", event.message.to_wire())
        elif isinstance(event, Compacted):
            self._line(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "compact_metadata": {"trigger": event.trigger, "pre_tokens": event.pre_tokens},
                    "session_id": self.session_id,
                    "uuid": str(uuid.uuid4()),
                }
            )

    def _retry(self, event: StreamRetry, parent_tool_use_id: str | None = None) -> None:
        # Claude Code's shape, so parsers written for it read ours; `reason` says it in words
        self._line(
            {
                "type": "system",
                "subtype": "api_retry",
                "attempt": event.attempt,
                "max_retries": event.max_attempts - 1,
                "retry_delay_ms": round(event.delay_s * 1000),
                "error_status": event.status,
                "error": retry_category(event),
                "reason": event.reason,
                "parent_tool_use_id": parent_tool_use_id,
                "session_id": self.session_id,
                "uuid": str(uuid.uuid4()),
            }
        )

    def _subagent(self, event: SubagentEvent) -> None:
        """A subagent's messages, as Claude Code streams them: tagged with the Task call's id."""
        inner = event.event
        if isinstance(inner, MessageDone):
            self._message_line("assistant", _assistant_message(inner), event.parent_tool_use_id)
        elif isinstance(inner, ToolResultsMessage):
            self._message_line("user", inner.message.to_wire(), event.parent_tool_use_id)

    def _message_line(self, kind: str, message: dict[str, Any], parent: str | None = None) -> None:
        self._line(
            {
                "type": kind,
                "message": message,
                "parent_tool_use_id": parent,
                "session_id": self.session_id,
                "uuid": str(uuid.uuid4()),
            }
        )


def _assistant_message(event: MessageDone) -> dict[str, Any]:
    return {
        "id": event.message_id,
        "type": "message",
        "role": "assistant",
        "model": event.model,
        "content": event.message.wire_content(),
        "stop_reason": event.stop_reason,
        "stop_sequence": None,
        "usage": event.usage.to_dict(),
    }


WRITERS: dict[str, type[TextWriter | JsonWriter | StreamJsonWriter]] = {
    "text": TextWriter,
    "json": JsonWriter,
    "stream-json": StreamJsonWriter,
}


def make_writer(output_format: str, stdout: TextIO, stderr: TextIO, verbose: bool) -> Writer:
    return WRITERS[output_format](stdout, stderr, verbose)
