"""What a tool call shows people beside its result, as a closed set of types.

Displays never reach the model. The terminal and the headless writers switch on the type (never on
a tool's name), so a new tool that produces a diff or a task list is shown like Edit or TodoWrite.
"""

from __future__ import annotations

from typing import Literal

from piton.core.records import record

TodoStatus = Literal["pending", "in_progress", "completed"]


@record(frozen=True)
class FileDiff:
    """A change to one file, as a unified diff."""

    path: str
    diff: str


@record(frozen=True)
class TodoItem:
    content: str
    status: TodoStatus
    active_form: str


@record(frozen=True)
class TodoList:
    items: tuple[TodoItem, ...]


@record(frozen=True)
class CommandOutput:
    """What a shell command printed (stdout and stderr together), and how it ended."""

    output: str
    exit_code: int | None  # None: killed (a timeout)


Display = FileDiff | TodoList | CommandOutput


def counted(n: int, word: str, plural: str | None = None) -> str:
    """`1 tool call`, `2 tool calls`: a count with its noun agreeing."""
    if n == 1:
        return f"1 {word}"
    return f"{n:,} {plural or (word + 'es' if word.endswith(('s', 'x', 'ch')) else word + 's')}"
