"""MCP prompts as slash commands: `/mcp__<server>__<prompt> args` fetches the prompt (`prompts/get`)
and its messages become the user's turn.

As in Claude Code, the typed arguments are split on whitespace and given to the prompt's declared
arguments in order; words beyond the last argument join it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from piton.core.conversation.messages import ContentBlock, TextBlock
from piton.core.mcp.offers import PromptInfo
from piton.core.mcp.tool import McpCallError, content_blocks

if TYPE_CHECKING:
    from piton.core.mcp.manager import McpManager

PREFIX = "mcp__"
_LINE = re.compile(r"\A/(mcp__\S+)(?:\s+(.*))?\Z", re.DOTALL)


class PromptError(Exception):
    """Why a typed `/mcp__…` command did not make a turn; one line for people."""


def command_name(line: str) -> str | None:
    """`mcp__s__p` for a typed `/mcp__s__p args`, else None."""
    match = _LINE.match(line.strip())
    return match.group(1) if match else None


def find(manager: McpManager | None, name: str) -> PromptInfo | None:
    if manager is None:
        return None
    return next((p for p in manager.prompts() if p.command == name), None)


def arguments(prompt: PromptInfo, text: str) -> dict[str, str]:
    """The typed words on the prompt's arguments in order, the rest joined into the last one.
    Raises PromptError when a required argument has no word."""
    words = text.split()
    declared = prompt.arguments
    values: dict[str, str] = {}
    for number, argument in enumerate(declared):
        if number == len(declared) - 1:
            rest = words[number:]
            if rest:
                values[argument.name] = " ".join(rest)
        elif number < len(words):
            values[argument.name] = words[number]
    missing = [a.name for a in declared if a.required and a.name not in values]
    if missing:
        raise PromptError(f"/{prompt.command} needs {', '.join(missing)}: /{prompt.command} {prompt.usage}")
    return values


def blocks(result: Any) -> list[ContentBlock]:
    """A `GetPromptResult`'s messages as the content of one user turn: their text and images, in
    order (an assistant message's text too: the prompt's author wrote the whole exchange)."""
    out: list[ContentBlock] = []
    for message in result.messages:
        out += content_blocks([message.content])
    return out


async def expand(manager: McpManager | None, line: str) -> list[ContentBlock] | None:
    """The turn a typed `/mcp__…` line makes; None when the line is no such command. Raises
    PromptError for an unknown prompt, a missing argument, or a fetch that failed."""
    name = command_name(line)
    if name is None:
        return None
    if manager is not None:
        await manager.wait_started()  # a server still starting may be the one that offers it
    prompt = find(manager, name)
    if prompt is None:
        raise PromptError(f"Unknown MCP prompt /{name} (/mcp lists the servers and their prompts)")
    match = _LINE.match(line.strip())
    assert match is not None and manager is not None
    values = arguments(prompt, match.group(2) or "")
    try:
        result = await manager.get_prompt(prompt.server, prompt.name, values)
    except McpCallError as e:
        raise PromptError(str(e)) from None
    content = blocks(result)
    if not content:
        raise PromptError(f"/{name}: the server's prompt is empty")
    if not any(isinstance(b, TextBlock) for b in content):  # an image alone still gets a word
        content.insert(0, TextBlock(text=f"(/{name})"))
    return content
