"""Headless writers: the agent's events as text, one JSON result, or stream-json lines.

JSON shapes follow Claude Code's (`system/init`, `assistant`, `user`, `result`) so scripts and SDK
parsers written for it read ours unchanged.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from piton.api.tool_use_result import TODO_MARKS as TODO_MARKS
from piton.api.tool_use_result import display_text
from piton.core.clip import one_line
from piton.core.conversation.events import (
    AgentEvent,
    Compacted,
    HookResponse,
    Notice,
    Result,
    StreamRetry,
    SubagentEvent,
    ToolFinished,
    ToolStarted,
)
from piton.core.display import counted
from piton.core.providers.waits import say_seconds

if TYPE_CHECKING:
    from piton.api.init_line import Catalogue

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class Writer(Protocol):
    def handle(self, event: AgentEvent) -> None: ...

    def notice(self, text: str) -> None: ...


_PATH_KEYS = ("file_path", "path", "notebook_path")


def tool_label(name: str, tool_input: dict[str, Any], width: int = 60, base: Path | None = None) -> str:
    """`Name(first argument)`, the way a tool call is shown to people: a path relative to the
    project (`base`, the working directory by default), cut in the middle so the file's name stays."""
    # a plan is Markdown shown whole at its question: its first line would show as raw markup here
    strings = ((k, v) for k, v in tool_input.items() if isinstance(v, str) and v.strip() and k != "plan")
    key, first = next(strings, ("", ""))
    first = " ".join(first.split()) or _listed(tool_input)
    if key in _PATH_KEYS:
        first = short_path(first, width, base if base is not None else Path.cwd())
    else:
        first = one_line(first, width)
    if name.startswith("mcp__") and "__" in name[5:]:  # Claude Code's way: `github - create_issue (MCP)`
        server, tool = name[5:].split("__", 1)
        name = f"{server} - {tool} (MCP)"
    return f"{name}({first})" if first else name


def _listed(tool_input: dict[str, Any]) -> str:
    """A call whose input is a list says what it holds: `TodoWrite(3 tasks)`, the question asked."""
    todos, questions = tool_input.get("todos"), tool_input.get("questions")
    if isinstance(todos, list):
        return counted(len(todos), "task")
    if isinstance(questions, list) and questions and isinstance(questions[0], dict):
        asked = str(questions[0].get("question") or "")
        more = f" (+{len(questions) - 1} more)" if len(questions) > 1 else ""
        return " ".join(asked.split()) + more
    return ""


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


def retry_line(event: StreamRetry) -> str:
    """`retrying in 2 s (529 overloaded_error, attempt 2/5)`: how long, why, and how many tries remain."""
    return (
        f"retrying in {say_seconds(event.delay_s)} ({event.reason}, "
        f"attempt {event.attempt + 1}/{event.max_attempts})"
    )


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
    first = one_line(_CONTROL.sub("", said[0]), 160) if said else ""
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
            if event.level == "warning" or self.verbose:
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
        from piton.api.result_line import result_to_dict  # a text run does not load the JSON lines

        self.stdout.write(json.dumps(result_to_dict(result), ensure_ascii=False) + "\n")
        self.stdout.flush()


class StreamJsonWriter(_Base):
    """The run's messages (`piton.api.messages`), one JSON object per line; notices go to stderr."""

    def __init__(
        self,
        stdout: TextIO,
        stderr: TextIO,
        verbose: bool,
        *,
        partial: bool = False,
        catalogue: Catalogue | None = None,
    ) -> None:
        from piton.api.messages import MessageStream  # loaded by the runs that write these lines only

        super().__init__(stdout, stderr, verbose)
        self.stream = MessageStream(partial=partial, catalogue=catalogue)  # what the lines are made of

    def handle(self, event: AgentEvent) -> None:
        if isinstance(event, Notice):
            if event.level == "warning" or self.verbose:
                self.notice(event.text)
            return
        for message in self.stream.convert(event):
            self.stdout.write(json.dumps(message.to_dict(), ensure_ascii=False) + "\n")
        self.stdout.flush()


WRITERS: dict[str, type[TextWriter | JsonWriter | StreamJsonWriter]] = {
    "text": TextWriter,
    "json": JsonWriter,
    "stream-json": StreamJsonWriter,
}


def make_writer(output_format: str, stdout: TextIO, stderr: TextIO, verbose: bool) -> Writer:
    return WRITERS[output_format](stdout, stderr, verbose)
