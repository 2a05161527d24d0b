"""Ctrl-O: the conversation so far in full, thinking and whole tool results included (the screen shows
thinking's last lines and the first lines of each result), in a pager on the terminal's alternate
screen so the scrollback stays as it was; `q` goes back to the prompt."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
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
                    if not block.text.startswith("<system-reminder>"):
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
    text = (
        content
        if isinstance(content, str)
        else "\n".join(b.text if isinstance(b, TextBlock) else "[image]" for b in content)
    )
    return "  ⎿  " + text.replace("\n", "\n     ")


def show(history: Sequence[Message], width: int) -> str | None:
    """Page the transcript; the text shown instead when no pager can run (None: it was paged)."""
    pager = _pager()
    if pager is None:
        return render(history, width)
    try:
        subprocess.run(pager, input=render(history, width).encode(), check=False)
    except OSError:
        return render(history, width)
    return None


def _pager() -> list[str] | None:
    """`less` on the alternate screen (colours kept, starting at the end), else $PAGER as it is."""
    less = shutil.which("less")
    if less is not None:
        return [less, "-R", "+G"]
    chosen = os.environ.get("PAGER", "").split()
    return chosen if chosen and shutil.which(chosen[0]) else None
