"""Piton's events and saved history as the protocol's session updates: what an editor shows in its
agent panel. A tool call is announced when the model starts writing it (`tool_call`), filled in
when it runs (title, kind, the files it touches and the lines), and closed with its status and
what it did: a diff for a file change, the output for a command, the text for the rest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from acp import schema

from piton.core.conversation.results import part_text

if TYPE_CHECKING:
    from piton.core.conversation.events import Result
    from piton.core.conversation.messages import Message
    from piton.core.conversation.results import ToolResult

Kind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
Update = (
    schema.AgentMessageChunk
    | schema.AgentThoughtChunk
    | schema.UserMessageChunk
    | schema.ToolCallStart
    | schema.ToolCallProgress
    | schema.AgentPlanUpdate
    | schema.AvailableCommandsUpdate
    | schema.CurrentModeUpdate
)

_KINDS: dict[str, Kind] = {
    "Read": "read",
    "Edit": "edit",
    "Write": "edit",
    "NotebookEdit": "edit",
    "Bash": "execute",
    "BashOutput": "execute",
    "KillShell": "execute",
    "Grep": "search",
    "Glob": "search",
    "ToolSearch": "search",
    "WebFetch": "fetch",
    "WebSearch": "fetch",
    "Task": "think",
    "Agent": "think",
    "TodoWrite": "think",
    "ExitPlanMode": "switch_mode",
}
_PATH_KEYS = ("file_path", "notebook_path", "path")
RESULT_CHARS = 40_000  # what a tool call's panel shows of a long result; the model got all of it


def kind_of(name: str) -> Kind:
    return _KINDS.get(name, "other")


def title_of(name: str, tool_input: dict[str, Any], cwd: Path) -> str:
    from piton.cli.output import tool_label

    return tool_label(name, tool_input, width=80, base=cwd)


def locations_of(
    tool_input: dict[str, Any], cwd: Path, line: int | None = None
) -> list[schema.ToolCallLocation]:
    """The file a call reads or changes, absolute, at `line` (or the line a Read starts at), so an
    editor can follow the agent through the project."""
    for key in _PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            offset = tool_input.get("offset")
            at = line if line is not None else (offset if isinstance(offset, int) and offset > 0 else None)
            return [schema.ToolCallLocation(path=str(cwd / value), line=at)]
    return []


def announced(tool_use_id: str, name: str) -> schema.ToolCallStart:
    """The model has begun a call: its input is still streaming."""
    return schema.ToolCallStart(
        session_update="tool_call", tool_call_id=tool_use_id, title=name, kind=kind_of(name), status="pending"
    )


def running(tool_use_id: str, name: str, tool_input: dict[str, Any], cwd: Path) -> schema.ToolCallProgress:
    return schema.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=tool_use_id,
        title=title_of(name, tool_input, cwd),
        kind=kind_of(name),
        status="in_progress",
        locations=locations_of(tool_input, cwd) or None,
        raw_input=tool_input,
    )


def finished(
    tool_use_id: str, name: str, tool_input: dict[str, Any], result: ToolResult, cwd: Path
) -> schema.ToolCallProgress:
    data = result.data or {}
    line = _first_changed_line(data)
    return schema.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=tool_use_id,
        status="failed" if result.is_error else "completed",
        content=content_of(name, tool_input, result, cwd) or None,
        locations=(locations_of(tool_input, cwd, line) or None) if line is not None else None,
        raw_output=data or None,
    )


def content_of(
    name: str, tool_input: dict[str, Any], result: ToolResult, cwd: Path
) -> list[schema.ContentToolCallContent | schema.FileEditToolCallContent]:
    """What a finished call shows: a file change as a diff the editor renders, a command's output in
    a code block, other results as their text (and images as images)."""
    data = result.data or {}
    path = tool_input.get("file_path")
    if not result.is_error and isinstance(path, str) and name in ("Edit", "Write"):
        where = str(cwd / path)
        if name == "Edit":
            old, new = data.get("oldString"), data.get("newString")
        else:
            old, new = data.get("originalFile"), data.get("content")
        if isinstance(new, str):
            old_text = old if isinstance(old, str) and (old or name == "Edit") else None
            return [schema.FileEditToolCallContent(type="diff", path=where, old_text=old_text, new_text=new)]
    parts: list[schema.ContentToolCallContent | schema.FileEditToolCallContent] = []
    pieces = [result.content] if isinstance(result.content, str) else result.content
    for piece in pieces:
        if isinstance(piece, str) or piece.type != "image":
            text = piece if isinstance(piece, str) else part_text(piece)
            if text:
                parts.append(_text_content(_shown(name, text)))
        elif piece.source.type == "base64":
            image = schema.ImageContentBlock(
                type="image", data=piece.source.data, mime_type=piece.source.media_type
            )
            parts.append(schema.ContentToolCallContent(type="content", content=image))
    return parts


def _shown(name: str, text: str) -> str:
    if len(text) > RESULT_CHARS:
        text = text[:RESULT_CHARS] + f"\n… ({len(text) - RESULT_CHARS} more characters)"
    if name in ("Bash", "BashOutput"):
        fence = "```"
        while fence in text:
            fence += "`"
        return f"{fence}console\n{text}\n{fence}"
    return text


def _text_content(text: str) -> schema.ContentToolCallContent:
    return schema.ContentToolCallContent(
        type="content", content=schema.TextContentBlock(type="text", text=text)
    )


def _first_changed_line(data: dict[str, Any]) -> int | None:
    """The first line a change touched: its first hunk's start, past the unchanged lines around it."""
    patch = data.get("structuredPatch")
    if not isinstance(patch, list) or not patch or not isinstance(patch[0], dict):
        return None
    start, lines = patch[0].get("newStart"), patch[0].get("lines")
    if not isinstance(start, int):
        return None
    kept = 0
    for line in lines if isinstance(lines, list) else []:
        if not isinstance(line, str) or not line.startswith(" "):
            break
        kept += 1
    return start + kept


def _change(name: str, tool_input: dict[str, Any]) -> dict[str, Any] | None:
    """What a saved file change did, from its input (the log keeps what the model read, not the diff)."""
    if name == "Edit":
        return {"oldString": tool_input.get("old_string"), "newString": tool_input.get("new_string")}
    if name == "Write":
        return {"content": tool_input.get("content")}
    return None


def plan_of(tool_input: dict[str, Any]) -> schema.AgentPlanUpdate | None:
    """A TodoWrite's list as the editor's plan."""
    todos = tool_input.get("todos")
    if not isinstance(todos, list):
        return None
    entries = []
    for todo in todos:
        if not isinstance(todo, dict) or not isinstance(todo.get("content"), str):
            continue
        status = todo.get("status")
        entries.append(
            schema.PlanEntry(
                content=todo["content"],
                priority="medium",
                status=status if status in ("pending", "in_progress", "completed") else "pending",
            )
        )
    return schema.AgentPlanUpdate(session_update="plan", entries=entries)


def message_text(text: str) -> schema.AgentMessageChunk:
    return schema.AgentMessageChunk(
        session_update="agent_message_chunk", content=schema.TextContentBlock(type="text", text=text)
    )


def thought_text(text: str) -> schema.AgentThoughtChunk:
    return schema.AgentThoughtChunk(
        session_update="agent_thought_chunk", content=schema.TextContentBlock(type="text", text=text)
    )


StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


def stop_reason_of(result: Result) -> StopReason:
    if result.subtype == "error_max_turns":
        return "max_turn_requests"
    if result.stop_reason in ("max_tokens", "refusal"):
        return result.stop_reason  # type: ignore[return-value]
    return "end_turn"


def usage_of(result: Result) -> schema.Usage:
    u = result.usage
    read, written = u.cache_read_input_tokens, u.cache_creation_input_tokens
    return schema.Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cached_read_tokens=read,
        cached_write_tokens=written,
        total_tokens=u.input_tokens + u.output_tokens + read + written,
    )


def replayed(history: list[Message], cwd: Path) -> list[Update]:
    """A saved conversation as the updates that would have shown it: the user's words, the agent's
    words and thoughts, and each tool call with its final status (`session/load`)."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[Update] = []
    for message in history:
        for block in message.content:
            out += _replayed_block(message.role, block, calls, cwd)
    for tool_use_id in calls:  # a call the session ended before it finished
        out.append(
            schema.ToolCallProgress(
                session_update="tool_call_update", tool_call_id=tool_use_id, status="failed"
            )
        )
    return out


def _replayed_block(
    role: str, block: Any, calls: dict[str, tuple[str, dict[str, Any]]], cwd: Path
) -> list[Update]:
    from piton.core.conversation.messages import (
        FAILED_REQUEST,
        INTERRUPTED_REQUEST,
        ImageBlock,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
    )
    from piton.core.conversation.results import ToolResult
    from piton.core.modes import is_reminder

    ours = (INTERRUPTED_REQUEST, FAILED_REQUEST.partition("{")[0])  # Piton's notes, not the user's words
    if isinstance(block, TextBlock) and block.text and not is_reminder(block.text):
        if role == "assistant":
            return [message_text(block.text)]
        if block.text.startswith(ours):
            return []
        text = schema.TextContentBlock(type="text", text=block.text)
        return [schema.UserMessageChunk(session_update="user_message_chunk", content=text)]
    if isinstance(block, ThinkingBlock) and block.thinking:
        return [thought_text(block.thinking)]
    if isinstance(block, ImageBlock) and block.source.type == "base64" and role == "user":
        image = schema.ImageContentBlock(
            type="image", data=block.source.data, mime_type=block.source.media_type
        )
        return [schema.UserMessageChunk(session_update="user_message_chunk", content=image)]
    if isinstance(block, ToolUseBlock):
        calls[block.id] = (block.name, block.input)
        return [announced(block.id, block.name), running(block.id, block.name, block.input, cwd)]
    if isinstance(block, ToolResultBlock) and block.tool_use_id in calls:
        name, tool_input = calls.pop(block.tool_use_id)
        content = block.content if isinstance(block.content, str) else list(block.content)
        result = ToolResult(content=content, is_error=bool(block.is_error), data=_change(name, tool_input))
        return [finished(block.tool_use_id, name, tool_input, result, cwd)]
    return []
