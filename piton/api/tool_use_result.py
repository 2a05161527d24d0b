"""`tool_use_result`: a call's result as Claude Code attaches it to the `user` line that carries
it back to the model, for clients that read it (a command's `stdout`), and the plain text of what a
call showed people."""

from __future__ import annotations

from typing import Any

from piton.core.conversation.messages import TextBlock
from piton.core.display import CommandOutput, Display, FileDiff, TodoList
from piton.core.tools import ToolResult

TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☒"}


def tool_use_result(result: ToolResult) -> str | dict[str, Any] | None:
    """Claude Code's object where Piton has its fields; else what the call showed people (a
    diff, a task list), else its text (`Error: …` for a failure)."""
    shown = _command_result(result.display, result.is_error) or display_text(result.display)
    if shown:
        return shown
    text = result.content if isinstance(result.content, str) else _text_of(result.content)
    return f"Error: {text}" if result.is_error else text


def _command_result(display: Display | None, is_error: bool) -> dict[str, Any] | None:
    """A command that ran as Claude Code reports it to clients (`tool_use_result.stdout`): its
    output, which Piton reads as one stream, and whether it was cut short. A failure stays a line
    of text, as Claude Code's does."""
    if not isinstance(display, CommandOutput) or is_error:
        return None
    return {
        "stdout": display.output,
        "stderr": "",
        "interrupted": display.exit_code is None,
        "isImage": False,
        "noOutputExpected": False,
    }


def display_text(display: Display | None) -> str:
    """A call's display as plain lines (diffs and task lists; command output is the result itself)."""
    match display:
        case FileDiff(diff=diff):
            return diff
        case TodoList(items=items):
            return "\n".join(f"{TODO_MARKS[i.status]} {i.content}" for i in items)
        case _:
            return ""


def _text_of(blocks: list[Any]) -> str:
    return "\n".join(b.text for b in blocks if isinstance(b, TextBlock))
