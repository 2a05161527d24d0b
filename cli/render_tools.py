"""Tool calls on screen: the line a call starts with, and when it finishes its summary, with the first
lines a command printed, the diff of an edit or the task list under it.

The model's text (and what its tools return) must not steer the terminal: `CONTROL` characters are
stripped from everything shown, here and in the streamed answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.console import Console
from rich.table import Table
from rich.text import Text

from piton.cli.output import TODO_MARKS, tool_label
from piton.core.conversation.events import ToolFinished, ToolStarted
from piton.core.display import CommandOutput, FileDiff, TodoItem, TodoList

OUTPUT_LINES = 4  # of a shell command's output, under its tool line
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # all but tab and newline


_HUNK = re.compile(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def diff_text(diff: str) -> Text:
    """A unified diff, coloured line by line, each changed or context line after its line number: the
    old file's for a removed line, the new file's for the others."""
    rows = list(_numbered(CONTROL.sub("", diff).splitlines()))
    width = max((len(number) for number, _, _ in rows), default=0)
    text = Text()
    for number, line, style in rows:
        text.append(f"    {number:>{width}} {line}\n" if width else f"    {line}\n", style=style)
    return text


def _numbered(lines: list[str]) -> Iterator[tuple[str, str, str]]:
    """Each line of a unified diff with its line number (or "") and its style."""
    old = new = 0
    for line in lines:
        if line.startswith(("---", "+++")):
            yield "", line, "bold"
        elif hunk := _HUNK.match(line):
            old, new = int(hunk[1]), int(hunk[2])
            yield "", line, "cyan"
        elif line.startswith("+"):
            yield str(new), line, "green"
            new += 1
        elif line.startswith("-"):
            yield str(old), line, "red"
            old += 1
        elif line.startswith(" "):
            yield str(new), line, "dim"
            old, new = old + 1, new + 1
        else:  # "\\ No newline at end of file", or a note that the rest is left out
            yield "", line, "dim"


def under_call(text: Text, width: int) -> Text | Table:
    """`text` after the `  ⎿  ` that sets it under a call's line; one too long for a line of `width`
    wraps under itself."""
    if "\n" not in text.plain and len(text.plain) + 5 <= width:
        return Text(f"  ⎿  {text.plain}", style=text.style)
    grid = Table.grid()
    grid.add_column(width=5, no_wrap=True)
    grid.add_column()
    grid.add_row(Text("  ⎿  ", style=text.style), text)
    return grid


def todo_text(items: tuple[TodoItem, ...]) -> Text:
    """A task list, one line a task, done ones dimmed."""
    text = Text()
    for item in items:
        line = CONTROL.sub("", f"{TODO_MARKS[item.status]} {item.content}")
        text.append(f"    {line}\n", style="dim" if item.status == "completed" else "")
    return text


class ToolLines:
    """The lines of the tool calls of a run, printed to `console` as calls start and finish."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.shown_diffs: set[str] = set()  # diffs a permission question showed: not shown again
        self._running: dict[str, str] = {}  # labels of the calls started and not finished, by id
        self._batch_started = 0  # calls started since none was running

    def reset(self) -> None:
        """The run ended: calls an interrupt cut short never report."""
        self._running.clear()
        self._batch_started = 0

    def started(self, event: ToolStarted) -> None:
        label = tool_label(event.name, event.input)
        self._running[event.tool_use_id] = label
        self._batch_started += 1
        self.console.print(Text("● ", style="bold green") + Text(CONTROL.sub("", label), style="bold"))

    def finished(self, event: ToolFinished) -> None:
        result = event.result
        summary = result.summary or ("error" if result.is_error else "done")
        style = "red" if result.is_error else "dim"
        label = self._running.pop(event.tool_use_id, None)
        if label is not None and (self._running or self._batch_started > 1):
            # calls of one batch finish in any order, under lines printed together: say which this is
            summary = f"{label}: {summary}"
        if not self._running:
            self._batch_started = 0
        self.console.print(under_call(Text(CONTROL.sub("", summary), style=style), self.console.width))
        match result.display:
            case CommandOutput(output=output) if output.strip():
                self.console.print(self._output_lines(output, style), end="")
            case FileDiff(diff=diff) if diff and diff in self.shown_diffs:
                self.shown_diffs.discard(diff)  # the question showed it just before it was allowed
            case FileDiff(diff=diff) if diff:
                self.console.print(diff_text(diff), end="")
            case TodoList(items=items) if items:
                self.console.print(todo_text(items), end="")
            case _:
                pass

    def _output_lines(self, output: str, style: str) -> Text:
        """The first lines a command printed, under its tool line."""
        lines = CONTROL.sub("", output).splitlines()
        shown = Text()
        for line in lines[:OUTPUT_LINES]:
            shown.append(f"     {line[: self.console.width - 6]}\n", style=style)
        if len(lines) > OUTPUT_LINES:
            shown.append(f"     … {len(lines) - OUTPUT_LINES} more lines\n", style="dim")
        return shown
