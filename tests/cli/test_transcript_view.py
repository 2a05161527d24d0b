"""The Ctrl-O transcript: everything the screen cut or collapsed, and what happens with no pager."""

from __future__ import annotations

from piton.cli.transcript_view import render
from piton.core.conversation.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

HISTORY = [
    Message(
        role="user",
        content=[TextBlock(text="look"), TextBlock(text="<system-reminder>\nx\n</system-reminder>")],
    ),
    Message(
        role="assistant",
        content=[
            ThinkingBlock(thinking="line 1\nline 2\nline 3\nline 4\nline 5\nline 6", signature="s"),
            ToolUseBlock(id="t1", name="Bash", input={"command": "seq 100"}),
        ],
    ),
    Message(
        role="user", content=[ToolResultBlock(tool_use_id="t1", content="\n".join(map(str, range(100))))]
    ),
    Message(role="assistant", content=[TextBlock(text="Done.")]),
]


def test_the_transcript_has_all_thinking_and_whole_results_and_no_reminders() -> None:
    text = render(HISTORY, 80, color=False)
    assert "❯ look" in text and "system-reminder" not in text
    assert "line 1" in text and "line 6" in text
    assert "● Bash(seq 100)" in text and "     99" in text
    assert text.index("line 6") < text.index("● Bash") < text.index("     99") < text.index("Done.")
