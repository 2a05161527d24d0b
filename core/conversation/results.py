"""What a tool call returns: the content the model reads (error as data, never an exception), a line
for people, and what the terminal shows beside it. A contract shared by the tools, the agent and
its events, so it sits with the messages it becomes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from piton.core.activation import Activation
from piton.core.conversation.messages import (
    DocumentBlock,
    ImageBlock,
    TextBlock,
    ToolReferenceBlock,
    ToolResultBlock,
)
from piton.core.display import Display
from piton.core.records import record

NO_OUTPUT = "(no output)"
ResultPart = TextBlock | ImageBlock | DocumentBlock | ToolReferenceBlock  # what a tool result may hold


@record(frozen=True)
class ToolResult:
    content: str | list[ResultPart]
    is_error: bool = False
    summary: str = ""  # one line for people, e.g. "42 lines" or "exit 1"
    display: Display | None = None  # shown to people, never sent to the model
    activation: Activation | None = None  # a skill this call loaded: its text follows the results
    # what the call did, in the shape Claude Code gives clients as `tool_use_result` (a command's
    # `stdout`, a file's `structuredPatch`…); never sent to the model
    data: dict[str, Any] | None = None

    def to_block(self, tool_use_id: str) -> ToolResultBlock:
        content = self.content if self.content else NO_OUTPUT
        return ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=self.is_error)

    def with_note(self, note: str) -> ToolResult:
        """The same result with `note` after its content (feedback from a hook, for the model)."""
        if isinstance(self.content, str):
            return replace(self, content=f"{self.content}\n\n{note}" if self.content else note)
        return replace(self, content=[*self.content, TextBlock(text=note)])

    @classmethod
    def error(cls, message: str) -> ToolResult:
        return cls(content=message, is_error=True, summary=message.splitlines()[0] if message else "")


def part_text(part: ResultPart) -> str:
    """A result's part as people read it: its text, or a word for what it holds."""
    if isinstance(part, TextBlock):
        return part.text
    if isinstance(part, ToolReferenceBlock):
        return f"[loaded the tool {part.tool_name}]"
    return "[PDF]" if isinstance(part, DocumentBlock) else "[image]"
