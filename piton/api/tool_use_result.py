"""`tool_use_result`: a call's result as Claude Code attaches it to the `user` line that carries
it back to the model, for clients that read it (a command's `stdout`), and the plain text of what a
call showed people."""

from __future__ import annotations

from typing import Any

from piton.core.conversation.events import ToolFinished
from piton.core.conversation.messages import ContentBlock, TextBlock, ToolResultBlock
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


def by_result(
    content: list[ContentBlock], finished: dict[str, ToolFinished]
) -> list[tuple[list[ContentBlock], str | dict[str, Any] | None]]:
    """The blocks going back to the model split a result a line, each with its `tool_use_result`
    (taken out of `finished`); blocks that are not results go with the last line."""
    lines: list[tuple[list[ContentBlock], str | dict[str, Any] | None]] = []
    rest: list[ContentBlock] = []
    for block in content:
        if isinstance(block, ToolResultBlock):
            done = finished.pop(block.tool_use_id, None)
            lines.append(([block], tool_use_result(done.result) if done is not None else None))
        else:
            rest.append(block)
    if not lines:
        return [(rest, None)]
    lines[-1] = (lines[-1][0] + rest, lines[-1][1])
    return lines


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
