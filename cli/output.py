"""Headless writers: the agent's events as text, one JSON result, or stream-json lines.

JSON shapes follow Claude Code's (`system/init`, `assistant`, `user`, `result`) so scripts and SDK
parsers written for it read ours unchanged.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from piton import __version__
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
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
    ToolStarted,
    ToolUseStart,
)
from piton.core.conversation.messages import TextBlock, ToolResultBlock
from piton.core.display import Display, FileDiff, TodoList
from piton.core.providers.waits import say_seconds

if TYPE_CHECKING:
    from piton.skills.catalog import Catalog

TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☒"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Writer(Protocol):
    def handle(self, event: AgentEvent) -> None: ...

    def notice(self, text: str) -> None: ...


_PATH_KEYS = ("file_path", "path", "notebook_path")


def tool_label(name: str, tool_input: dict[str, Any], width: int = 60, base: Path | None = None) -> str:
    """`Name(first argument)`, the way a tool call is shown to people: a path relative to the
    project (`base`, the working directory by default), cut in the middle so the file's name stays."""
    key, first = next(((k, v) for k, v in tool_input.items() if isinstance(v, str) and v.strip()), ("", ""))
    first = " ".join(first.split())
    if key in _PATH_KEYS:
        first = short_path(first, width, base if base is not None else Path.cwd())
    elif len(first) > width:
        first = first[: width - 1] + "…"
    if name.startswith("mcp__") and "__" in name[5:]:  # Claude Code's way: `github - create_issue (MCP)`
        server, tool = name[5:].split("__", 1)
        name = f"{server} - {tool} (MCP)"
    return f"{name}({first})"


def short_path(path: str, width: int, base: Path) -> str:
    """`path` relative to `base` when inside it, and `src/billing/…/invoice.py` when too long."""
    if os.path.isabs(path):
        relative = os.path.relpath(path, base)
        if not relative.startswith(".."):
            path = relative
    if len(path) <= width or "/" not in path:
        return path if len(path) <= width else "…" + path[-(width - 1) :]
    head, name = path.rsplit("/", 1)
    kept = ""
    for part in head.split("/"):
        candidate = f"{kept}{part}/"
        if len(candidate) + len(name) + 2 > width:
            break
        kept = candidate
    return f"{kept}…/{name}" if len(name) + 2 <= width else "…" + name[-(width - 1) :]


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
    if result.errors or result.is_error:  # Claude Code's error results always say what went wrong
        out["errors"] = list(result.errors) or [result.result]
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


def hook_line(event: HookResponse) -> str:
    """One line for people: which hook ran, how it ended, and the first line it said."""
    said = (event.stderr.strip() or event.stdout.strip()).splitlines()
    how = "timed out or could not start" if event.exit_code is None else f"exit {event.exit_code}"
    first = _CONTROL.sub("", said[0])[:160] if said else ""
    return f"{event.hook_event} hook `{event.command}` ({how})" + (f": {first}" if first else "")


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
        elif isinstance(event, HookResponse):
            self.stderr.write(f"piton: {hook_line(event)}\n")
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


@dataclass(slots=True)
class Catalogue:
    """What the `system/init` line lists beside the tools: slash commands, skills, subagent types."""

    slash_commands: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    output_style: str = "default"

    @classmethod
    def of(
        cls, catalog: Catalog | None, agent_types: Iterable[str], output_style: str = "default"
    ) -> Catalogue:
        """What a run offers: the commands a user may type, the skills the model may use, the types,
        and the output style it answers in."""
        return cls(
            slash_commands=[s.name for s in catalog.for_user()] if catalog else [],
            skills=[s.name for s in catalog.for_model() if s.kind == "skill"] if catalog else [],
            agents=sorted(agent_types),
            output_style=output_style,
        )


class StreamJsonWriter(_Base):
    def __init__(
        self,
        stdout: TextIO,
        stderr: TextIO,
        verbose: bool,
        *,
        partial: bool = False,
        catalogue: Catalogue | None = None,
    ) -> None:
        super().__init__(stdout, stderr, verbose)
        self.session_id = ""
        self.catalogue = catalogue or Catalogue()
        self._partial = _PartialEvents(self._stream_event) if partial else None
        self._finished: dict[str, ToolFinished] = {}  # results of this batch, for `tool_use_result`
        self.hook_events = False  # --include-hook-events: a `system`/`hook_response` line per hook run
        # the MCP servers' state and prompts change as they connect: read when `system/init` is written
        self.mcp_servers: Callable[[], list[dict[str, str]]] = list
        self.mcp_commands: Callable[[], list[str]] = list

    def _stream_event(self, event: dict[str, Any]) -> None:
        self._line(
            {
                "type": "stream_event",
                "uuid": str(uuid.uuid4()),
                "session_id": self.session_id,
                "event": event,
                "parent_tool_use_id": None,
            }
        )

    def _line(self, data: dict[str, Any]) -> None:
        self.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
        self.stdout.flush()

    def _result(self, result: Result) -> None:
        if self._partial is not None:
            self._partial.reset()  # an interrupted message never gets its message_stop
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
                    "mcp_servers": self.mcp_servers(),
                    "model": event.model,
                    "permissionMode": event.permission_mode,
                    "slash_commands": [*self.catalogue.slash_commands, *self.mcp_commands()],
                    "agents": list(self.catalogue.agents),
                    "skills": list(self.catalogue.skills),
                    "apiKeySource": "ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY") else "none",
                    "output_style": self.catalogue.output_style,
                    # SDKs read Claude Code's version field to judge what the CLI supports
                    "claude_code_version": __version__,
                    "piton_version": __version__,
                    "uuid": str(uuid.uuid4()),
                }
            )
        elif isinstance(event, TextDelta | ThinkingDelta | ToolUseStart | ToolInputDelta):
            if self._partial is not None:
                self._partial.delta(event)
        elif isinstance(event, MessageDone):
            if self._partial is not None:
                self._partial.done(event)
            self._message_line("assistant", _assistant_message(event))
        elif isinstance(event, ToolFinished):
            self._finished[event.tool_use_id] = event
        elif isinstance(event, ToolResultsMessage):
            self._message_line("user", event.message.to_wire(), extra=self._tool_use_result(event))
        elif isinstance(event, HookResponse):
            if self.hook_events:
                self._line(_hook_response(event, self.session_id))
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

    def _tool_use_result(self, event: ToolResultsMessage) -> dict[str, Any]:
        """Claude Code attaches the tool's own result to a user line; ours is its text, or what it
        showed people (a diff, a task list) when it had that."""
        ids = [b.tool_use_id for b in event.message.content if isinstance(b, ToolResultBlock)]
        finished = [self._finished.pop(i) for i in ids if i in self._finished]
        if not finished:
            return {}
        result = finished[0].result
        shown = display_text(result.display)
        if shown:
            return {"tool_use_result": shown}
        text = result.content if isinstance(result.content, str) else _text_of(result.content)
        return {"tool_use_result": f"Error: {text}" if result.is_error else text}

    def _retry(self, event: StreamRetry, parent_tool_use_id: str | None = None) -> None:
        if self._partial is not None and parent_tool_use_id is None:
            self._partial.reset()  # what the failed attempt streamed is void
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

    def _message_line(
        self,
        kind: str,
        message: dict[str, Any],
        parent: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._line(
            {
                "type": kind,
                "message": message,
                "parent_tool_use_id": parent,
                "session_id": self.session_id,
                "uuid": str(uuid.uuid4()),
                **(extra or {}),
            }
        )


def _hook_response(event: HookResponse, session_id: str) -> dict[str, Any]:
    """Claude Code's line for a hook that ran (the Agent SDK reads it as a HookEventMessage)."""
    line: dict[str, Any] = {
        "type": "system",
        "subtype": "hook_response",
        "hook_id": str(uuid.uuid4()),
        "hook_name": event.hook_event,
        "hook_event": event.hook_event,
        "output": event.stdout + event.stderr,
        "stdout": event.stdout,
        "stderr": event.stderr,
        "outcome": event.outcome,
        "session_id": session_id,
        "uuid": str(uuid.uuid4()),
    }
    if event.exit_code is not None:
        line["exit_code"] = event.exit_code
    return line


def _text_of(blocks: list[Any]) -> str:
    return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))


class _PartialEvents:
    """The Messages API's raw stream events, rebuilt from the agent's typed deltas: the events carry
    text, thinking and tool input as they arrive; block boundaries are inferred from a change of kind."""

    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        self._emit = emit
        self._started = False
        self._index = -1
        self._open: str | None = None  # kind of the open block: text | thinking | tool_use

    def reset(self) -> None:
        self._started, self._index, self._open = False, -1, None

    def _start_message(self) -> None:
        if self._started:
            return
        self._started = True
        self._emit(
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{uuid.uuid4().hex[:24]}",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "",
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 0, "output_tokens": 0},
                },
            }
        )

    def _close(self) -> None:
        if self._open is not None:
            self._emit({"type": "content_block_stop", "index": self._index})
            self._open = None

    def _block(self, kind: str, block: dict[str, Any]) -> None:
        self._close()
        self._index += 1
        self._open = kind
        self._emit({"type": "content_block_start", "index": self._index, "content_block": block})

    def delta(self, event: TextDelta | ThinkingDelta | ToolUseStart | ToolInputDelta) -> None:
        self._start_message()
        if isinstance(event, ToolUseStart):
            self._block("tool_use", {"type": "tool_use", "id": event.id, "name": event.name, "input": {}})
            return
        if isinstance(event, TextDelta):
            kind, delta = "text", {"type": "text_delta", "text": event.text}
            if self._open != kind:
                self._block(kind, {"type": "text", "text": ""})
        elif isinstance(event, ThinkingDelta):
            kind, delta = "thinking", {"type": "thinking_delta", "thinking": event.thinking}
            if self._open != kind:
                self._block(kind, {"type": "thinking", "thinking": "", "signature": ""})
        else:
            delta = {"type": "input_json_delta", "partial_json": event.partial_json}
        self._emit({"type": "content_block_delta", "index": self._index, "delta": delta})

    def done(self, event: MessageDone) -> None:
        self._start_message()
        self._close()
        self._emit(
            {
                "type": "message_delta",
                "delta": {"stop_reason": event.stop_reason, "stop_sequence": None},
                "usage": event.usage.to_dict(),
            }
        )
        self._emit({"type": "message_stop"})
        self.reset()


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
