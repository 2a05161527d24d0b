"""Keeping a conversation valid for the API: pairing repair and the request's message list (as data,
and as JSON kept in step with a growing history)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from piton.core.conversation.messages import (
    INTERRUPTED_TOOL_RESULT,
    UNFINISHED_TOOL_RESULT,
    ContentBlock,
    Message,
    ToolResultBlock,
    ToolUseBlock,
)
from piton.core.records import record


def interrupted_result(tool_use_id: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_use_id, content=INTERRUPTED_TOOL_RESULT, is_error=True)


def unfinished_result(tool_use_id: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_use_id, content=UNFINISHED_TOOL_RESULT, is_error=True)


@record(frozen=True)
class RepairReport:
    """What `repair` changed, each kind counted on its own (a net count hides a drop behind an add)."""

    results_dropped: int = 0  # tool results that answer no pending call (or answer it a second time)
    calls_interrupted: int = 0  # tool calls left without a result, now answered "did not finish"
    assistant_dropped: int = 0  # assistant messages before any prompt, with nothing to answer

    def __bool__(self) -> bool:
        return bool(self.results_dropped or self.calls_interrupted or self.assistant_dropped)

    def describe(self) -> str:
        """One line for people, e.g. "2 tool results without a call dropped; 1 tool call without a
        result marked interrupted"; empty when nothing changed."""
        parts = []
        if self.results_dropped:
            parts.append(f"{_count(self.results_dropped, 'tool result')} without a call dropped")
        if self.calls_interrupted:
            parts.append(f"{_count(self.calls_interrupted, 'tool call')} without a result marked unfinished")
        if self.assistant_dropped:
            parts.append(
                f"{_count(self.assistant_dropped, 'assistant message')} before the first prompt dropped"
            )
        return "; ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def repair(history: Sequence[Message]) -> list[Message]:
    """Return a history in which every tool_use is answered by the next message and nothing else is.

    Missing results become "did not finish" results (why is not known), results without a matching
    tool_use are dropped, and a leading assistant message (nothing for it to answer) is dropped.
    Untouched messages are kept as the same objects, so their cached wire form survives.
    """
    return repair_reporting(history)[0]


def _without_repeated_calls(message: Message) -> Message:
    """`message` with a tool_use whose id an earlier block of it already has left out: the API takes
    one call per id (only a damaged log can hold two)."""
    ids = [b.id for b in message.tool_uses]
    if len(ids) == len(set(ids)):
        return message
    seen: set[str] = set()
    content = []
    for block in message.content:
        if isinstance(block, ToolUseBlock):
            if block.id in seen:
                continue
            seen.add(block.id)
        content.append(block)
    return Message(role="assistant", content=content)


def repair_reporting(history: Sequence[Message]) -> tuple[list[Message], RepairReport]:
    """`repair`, and what it changed."""
    out: list[Message] = []
    pending: list[str] = []  # tool_use ids of the previous assistant message, still unanswered
    dropped = interrupted = leading = 0
    for message in history:
        if message.role == "assistant":
            if pending:
                out.append(Message(role="user", content=[unfinished_result(i) for i in pending]))
                interrupted += len(pending)
            if not out:
                leading += 1
                continue
            message = _without_repeated_calls(message)
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
                    dropped += 1
            else:
                others.append(block)
        missing = [unfinished_result(i) for i in pending if i not in answered]
        interrupted += len(missing)
        content = results + missing + others
        unchanged = len(content) == len(message.content) and all(
            a is b for a, b in zip(content, message.content, strict=True)
        )
        if content:
            out.append(message if unchanged else Message(role="user", content=content))
        pending = []
    if pending:
        out.append(Message(role="user", content=[unfinished_result(i) for i in pending]))
        interrupted += len(pending)
    return out, RepairReport(dropped, interrupted, leading)


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


_BREAKPOINT = b',"cache_control":{"type":"ephemeral"}}'
_HEADS = {"user": b'{"role":"user","content":[', "assistant": b'{"role":"assistant","content":['}


def with_breakpoint(block: bytes) -> bytes:
    """An encoded block (a JSON object) with a cache breakpoint added as its last key."""
    return block[:-1] + _BREAKPOINT


class ApiMessages:
    """`to_api_messages(history)` as UTF-8 JSON, one entry at a time, kept in step with a history
    that grows by appending. Each message is encoded once (`Message.wire_json`) and each request
    merges only what was appended since the previous one, so a long session costs the same per
    request. A history changed in any other way (compaction hands the agent a new list) is
    rebuilt from its messages' fragments."""

    def __init__(self) -> None:
        self._reset(None)

    def _reset(self, history: Sequence[Message] | None) -> None:
        self.history: Sequence[Message] | None = history
        self._count = 0  # messages taken in
        self._last: Message | None = None  # the last of them, to notice a history that was not appended to
        self._roles: list[str] = []  # per entry
        self._results: list[list[bytes]] = []  # per entry, its tool results (they go first)
        self._others: list[list[bytes]] = []  # per entry, its other blocks
        self._end: list[int] = []  # per entry, the history index of its last message
        # entries no message can join any more, encoded, comma-separated, in one buffer: a request
        # copies it in a few slices instead of gathering thousands of small objects from all over memory
        self._sealed = bytearray()
        self._starts: list[int] = []  # per sealed entry, where it starts in `_sealed`
        self._open = b""  # the last entry, encoded: a message of its role would still join it
        self._entry_at: list[int] = []  # per message, the entry of the last non-empty one up to it
        self.references: set[str] = set()  # the tools its `tool_reference` blocks name

    def __len__(self) -> int:
        return len(self._roles)

    def sync(self, history: Sequence[Message]) -> None:
        """Take in what was appended to `history` since the last call (all of it, if it changed)."""
        count = self._count
        appended = (
            history is self.history
            and len(history) >= count
            and (count == 0 or history[count - 1] is self._last)
        )
        if not appended:
            self._reset(history)
            count = 0
        for index in range(count, len(history)):
            self._add(index, history[index])
        self._count = len(history)
        self._last = history[-1] if history else None

    def _add(self, index: int, message: Message) -> None:
        self.references.update(message.tool_references)
        blocks = message.wire_json()
        if not blocks:
            self._entry_at.append(self._entry_at[-1] if self._entry_at else -1)
            return
        role = message.role
        if not self._roles or self._roles[-1] != role:
            if self._roles:
                self._seal()
            self._roles.append(role)
            self._results.append([])
            self._others.append([])
            self._end.append(index)
        entry = len(self._roles) - 1
        if role == "user":
            for wire, encoded in zip(message.wire_content(), blocks, strict=True):
                (self._results if wire["type"] == "tool_result" else self._others)[entry].append(encoded)
        else:
            self._others[entry].extend(blocks)
        self._open = self._encode(entry, marked=False)
        self._end[entry] = index
        self._entry_at.append(entry)

    def _seal(self) -> None:
        if self._sealed:
            self._sealed += b","
        self._starts.append(len(self._sealed))
        self._sealed += self._open

    def _encode(self, entry: int, *, marked: bool) -> bytes:
        blocks = self._results[entry] + self._others[entry]
        if marked:
            blocks[-1] = with_breakpoint(blocks[-1])
        return _HEADS[self._roles[entry]] + b",".join(blocks) + b"]}"

    def role(self, entry: int) -> str:
        return self._roles[entry]

    def entry_ending_at(self, count: int) -> int | None:
        """`api_entry_ending_at(history, count)`, without walking the history."""
        if count <= 0 or count > len(self._entry_at):
            return None
        entry = self._entry_at[count - 1]
        if entry < 0 or entry + 1 >= len(self._roles) or self._end[entry] >= count:
            return None
        return entry

    def encoded(self, marks: set[int]) -> list[bytes | memoryview]:
        """The `messages` array, with a cache breakpoint on the last block of each entry in `marks`, as
        pieces for one `b"".join` (the body is then copied once)."""
        if not self._roles:
            return [b"[]"]
        last = len(self._roles) - 1
        sealed = memoryview(self._sealed)
        parts: list[bytes | memoryview] = [b"["]
        position = 0
        for entry in sorted(m for m in marks if m < last):
            start = self._starts[entry]
            parts += [sealed[position:start], self._encode(entry, marked=True)]
            position = self._starts[entry + 1] - 1 if entry + 1 < len(self._starts) else len(sealed)
        parts.append(sealed[position:])
        if self._starts:
            parts.append(b",")
        parts += [self._encode(last, marked=True) if last in marks else self._open, b"]"]
        return parts
