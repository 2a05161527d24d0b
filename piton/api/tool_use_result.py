"""`tool_use_result`: a call's result as Claude Code attaches it to the `user` line that carries
it back to the model, for clients that read it (a command's `stdout`), and the plain text of what a
call showed people."""

from __future__ import annotations

from typing import Any

from piton.core.conversation.messages import TextBlock
from piton.core.display import Display, FileDiff, TodoList
from piton.core.tools import ToolResult

TODO_MARKS = {"pending": "☐", "in_progress": "◐", "completed": "☒"}


def tool_use_result(result: ToolResult) -> str | dict[str, Any]:
    """Claude Code's object where the tool gave one (`ToolResult.data`); else what the call showed
    people (a diff, a task list), else its text. A failure is `Error: …`, as Claude Code's is."""
    text = result.content if isinstance(result.content, str) else _text_of(result.content)
    if result.is_error:
        return f"Error: {text}"
    return result.data or display_text(result.display) or text


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
