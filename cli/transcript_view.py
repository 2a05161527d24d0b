"""Ctrl-O: the conversation so far in full, thinking and whole tool results included (the screen shows
thinking's last lines and the first lines of each result), in a pager on the terminal's alternate
screen so the scrollback stays as it was; `q` goes back to the prompt."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from piton.core.conversation.messages import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.conversation.results import part_text
from piton.core.modes import is_reminder

if TYPE_CHECKING:
    from collections.abc import Sequence


def render(history: Sequence[Message], width: int, color: bool = True) -> str:
    """The transcript as terminal text (ANSI styles unless `color` is off)."""
    from piton.cli.output import tool_label

    console = Console(
        width=width,
        record=True,
        file=io.StringIO(),
        color_system="standard" if color else None,
        highlight=False,
    )
    console.print(
        Text("Transcript: thinking and tool results in full · q returns to the prompt", style="bold")
    )
    for message in history:
        for block in message.content:
            if isinstance(block, ThinkingBlock):
                console.print(Text(f"✻ Thinking\n{block.thinking}", style="dim italic"))
            elif isinstance(block, RedactedThinkingBlock):
                console.print(Text("✻ Thinking (redacted by the API)", style="dim italic"))
            elif isinstance(block, TextBlock) and block.text.strip():
                if message.role == "user":
                    if not is_reminder(block.text):
                        console.print(Text(f"❯ {block.text}", style="bold cyan"))
                else:
                    console.print(Text(block.text))
            elif isinstance(block, ToolUseBlock):
                tool_input = block.input if isinstance(block.input, dict) else {}
                console.print(Text(f"● {tool_label(block.name, tool_input)}", style="bold"))
                console.print(Text(json.dumps(tool_input, indent=2, ensure_ascii=False), style="dim"))
            elif isinstance(block, ToolResultBlock):
                console.print(Text(_result(block), style="red" if block.is_error else ""))
        console.print()
    return console.export_text(styles=color)


def _result(block: ToolResultBlock) -> str:
    content = block.content
    text = content if isinstance(content, str) else "\n".join(part_text(b) for b in content)
    return "  ⎿  " + text.replace("\n", "\n     ")


def show(history: Sequence[Message], width: int, project: Path) -> str | None:
    """Page the transcript; the text shown instead when no pager can run (None: it was paged)."""
    pager = pager_command(project)
    if pager is None:
        return render(history, width)
    try:
        subprocess.run(pager, input=render(history, width).encode(), check=False)
    except OSError:
        return render(history, width)
    return None


async def page_in_terminal(history: Sequence[Message], width: int, project: Path) -> None:
    """Ctrl-O at the prompt: the transcript paged, the prompt put aside meanwhile."""
    from prompt_toolkit.application import run_in_terminal

    def page() -> None:
        text = show(history, width, project)
        if text is not None:  # no pager here: the transcript goes to the scrollback
            sys.stdout.write(text)

    await run_in_terminal(page)


# the system's `less`, at fixed places: never looked up on PATH, where an activated project
# virtualenv (which the model can write) comes first
_SYSTEM_PAGERS = ("/usr/bin/less", "/bin/less", "/usr/local/bin/less")


def pager_command(project: Path) -> list[str] | None:
    """$PAGER when it names a program by absolute path, else the system's `less` (colours kept,
    opening at the end); never a program inside the project, which commands and the model write."""
    chosen = os.environ.get("PAGER", "").split()
    candidates = [chosen] if chosen and os.path.isabs(chosen[0]) else []
    candidates += [[path, "-R", "+G"] for path in _SYSTEM_PAGERS]
    root = project.resolve()
    for command in candidates:
        real = Path(command[0]).resolve()
        if real.is_file() and os.access(real, os.X_OK) and not real.is_relative_to(root):
            return command
    return None
