"""Keeping a conversation valid for the API: pairing repair and the request's message list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from piton.core.conversation.messages import (
    INTERRUPTED_TOOL_RESULT,
    ContentBlock,
    Message,
    ToolResultBlock,
)


def interrupted_result(tool_use_id: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_use_id, content=INTERRUPTED_TOOL_RESULT, is_error=True)


def repair(history: Sequence[Message]) -> list[Message]:
    """Return a history in which every tool_use is answered by the next message and nothing else is.

    Missing results become "interrupted" results, results without a matching tool_use are dropped,
    and a leading assistant message (nothing for it to answer) is dropped. Untouched messages are
    kept as the same objects, so their cached wire form survives.
    """
    out: list[Message] = []
    pending: list[str] = []  # tool_use ids of the previous assistant message, still unanswered
    for message in history:
        if message.role == "assistant":
            if pending:
                out.append(Message(role="user", content=[interrupted_result(i) for i in pending]))
            if not out:
                continue
            out.append(message)
            pending = [b.id for b in message.tool_uses]
            continue
        answered: set[str] = set()
        results: list[ContentBlock] = []
        others: list[ContentBlock] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                if block.tool_use_id in pending and block.tool_use_id not in answered:
                    answered.add(block.tool_use_id)
                    results.append(block)
            else:
                others.append(block)
        missing = [interrupted_result(i) for i in pending if i not in answered]
        content = results + missing + others
        unchanged = len(content) == len(message.content) and all(
            a is b for a, b in zip(content, message.content, strict=True)
        )
        if content:
            out.append(message if unchanged else Message(role="user", content=content))
        pending = []
    if pending:
        out.append(Message(role="user", content=[interrupted_result(i) for i in pending]))
    return out


def is_valid(history: Sequence[Message]) -> bool:
    """True when `repair` would change nothing."""
    repaired = repair(history)
    return len(repaired) == len(history) and all(a is b for a, b in zip(repaired, history, strict=True))


def to_api_messages(history: Sequence[Message]) -> list[dict[str, Any]]:
    """The `messages` parameter for a request: empty blocks dropped, same-role neighbours merged,
    tool results first in their user message (the API rejects anything before them)."""
    merged: list[dict[str, Any]] = []
    for message in history:
        content = message.wire_content()
        if not content:
            continue
        if merged and merged[-1]["role"] == message.role:
            merged[-1]["content"] = merged[-1]["content"] + content
        else:
            merged.append({"role": message.role, "content": content})
    for entry in merged:
        blocks = entry["content"]
        if entry["role"] == "user" and any(b["type"] == "tool_result" for b in blocks):
            entry["content"] = [b for b in blocks if b["type"] == "tool_result"] + [
                b for b in blocks if b["type"] != "tool_result"
            ]
    return merged


def api_entry_ending_at(history: Sequence[Message], count: int) -> int | None:
    """The index, in `to_api_messages(history)`, of the entry that ends exactly where `history[:count]`
    ends; None when that point falls inside a merged entry (or there is no such point)."""
    index = -1
    role: str | None = None
    for position, message in enumerate(history):
        if not message.wire_content():
            continue
        if position >= count:
            return index if role is not None and message.role != role else None
        if message.role != role:
            index += 1
            role = message.role
    return None
