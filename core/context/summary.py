"""What compaction keeps and writes, without asking the model: stubs for old tool results, the safe
point to split the history at, the transcript the model summarises, the user's own messages and
the skills in use, and the message that replaces what was summarised."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TypeGuard

from piton.core.activation import skill_name
from piton.core.context.result_store import ToolResultStore
from piton.core.conversation.messages import (
    INTERRUPTED_REQUEST,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ToolReferenceBlock,
    ToolResultBlock,
    ToolUseBlock,
)

SUMMARY_HEADER = "[Piton: this conversation was compacted to fit the context window."
_STUB_MARK = "result cleared to save context"
_SAVED_AS = re.compile(r"left out of ([\d,]+)\. The whole result is saved as (tr_[0-9a-f]+) at (\S+?):")
_USER_MESSAGE = re.compile(r"<user-message>\n?(.*?)\n?</user-message>", re.DOTALL)
_MIN_STUB_CHARS = 400  # smaller results stay: a stub would save nothing
_TRANSCRIPT_RESULT_CHARS = 2_000
_TRANSCRIPT_TEXT_CHARS = 8_000
_MAX_SKILLS_KEPT = 5
_SKILL_CHARS = 20_000


def _tool_names(history: Sequence[Message]) -> dict[str, str]:
    return {
        b.id: b.name
        for m in history
        if m.role == "assistant"
        for b in m.content
        if isinstance(b, ToolUseBlock)
    }


def _result_text(block: ToolResultBlock) -> str:
    if isinstance(block.content, str):
        return block.content
    return "\n".join(b.text for b in block.content if isinstance(b, TextBlock))


def _stored_already(text: str, store: ToolResultStore) -> str | None:
    """Where a preview's whole text is, if `text` is a preview this store holds the whole of: the
    handle must be the store's and the stored text as long as the note says (a result that merely
    quotes such a note, a log say, is stored itself)."""
    saved = _SAVED_AS.search(text)
    if saved is None:
        return None
    try:
        whole = store.read(saved.group(2))
    except (KeyError, OSError):
        return None
    if len(whole) != int(saved.group(1).replace(",", "")) or not Path(saved.group(3)).is_file():
        return None
    return f"{saved.group(2)} at {saved.group(3)}"


def _stub(block: ToolResultBlock, name: str, store: ToolResultStore | None) -> ToolResultBlock:
    if store is None:
        return block
    text = _result_text(block)
    where = _stored_already(text, store)
    if where is None:
        handle = store.put(
            name, text, {"tool_use_id": block.tool_use_id, "is_error": block.is_error, "compacted": True}
        )
        where = f"{handle.id} at {handle.path}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), "(no text)")[:120]
    images = _media(block)
    held = f" It held {images} image(s) or PDF(s), not kept: read the file again to see it."
    dropped = held if images else ""
    stub = f"[{name} {_STUB_MARK}: {first} … The text is saved as {where}; Read it if needed.{dropped}]"
    return ToolResultBlock(tool_use_id=block.tool_use_id, content=stub, is_error=block.is_error)


def _worth_clearing(block: object) -> TypeGuard[ToolResultBlock]:
    """A result not cleared yet, long enough that a stub saves something (or holding an image)."""
    if not isinstance(block, ToolResultBlock) or _STUB_MARK in _result_text(block):
        return False
    if not isinstance(block.content, str) and any(isinstance(b, ToolReferenceBlock) for b in block.content):
        return False  # it loaded tools (ToolSearch): a stub would unload them to save a few characters
    return _media(block) > 0 or len(_result_text(block)) >= _MIN_STUB_CHARS


def _media(block: ToolResultBlock) -> int:
    """The images and PDFs a result holds."""
    if isinstance(block.content, str):
        return 0
    return sum(isinstance(b, ImageBlock | DocumentBlock) for b in block.content)


def stub_tool_results(
    history: Sequence[Message], keep: int, store: ToolResultStore | None
) -> tuple[list[Message], dict[str, str]]:
    """The history with all but the `keep` most recent tool-result messages stubbed, and the stubs
    by tool_use id. Every tool_use keeps its tool_result; only the content changes."""
    names = _tool_names(history)
    with_results = [i for i, m in enumerate(history) if m.role == "user" and m.tool_results]
    old = set(with_results[: max(0, len(with_results) - keep)])
    out: list[Message] = []
    stubs: dict[str, str] = {}
    for i, message in enumerate(history):
        if i not in old:
            out.append(message)
            continue
        blocks: list[ContentBlock] = []
        for block in message.content:
            if _worth_clearing(block):
                new = _stub(block, names.get(block.tool_use_id, "tool"), store)
                if new is not block:
                    stubs[block.tool_use_id] = _result_text(new)
                block = new
            blocks.append(block)
        out.append(
            message
            if all(a is b for a, b in zip(blocks, message.content, strict=True))
            else Message(role="user", content=blocks)
        )
    return out, stubs


# -- phase 2 ---------------------------------------------------------------------------------------


def split_point(history: Sequence[Message], counts: Sequence[int], keep_budget: int) -> int | None:
    """Where the kept part begins: an assistant message, or a user message that carries no tool
    results (so no tool_use is separated from its result). The earliest such point whose suffix
    fits `keep_budget`, else the latest one; None when nothing before it could be summarised."""
    candidates = [
        i for i in range(1, len(history)) if history[i].role == "assistant" or not history[i].tool_results
    ]
    if not candidates:
        return None
    suffix = [0] * (len(history) + 1)
    for i in range(len(history) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + counts[i]
    fitting = [i for i in candidates if suffix[i] <= keep_budget]
    return fitting[0] if fitting else candidates[-1]


def user_messages(history: Sequence[Message]) -> list[str]:
    """What the user wrote in `history`, verbatim, including what earlier summaries carried forward."""
    found: list[str] = []
    for message in history:
        if message.role != "user" or message.tool_results:
            continue
        first = next((b.text for b in message.content if isinstance(b, TextBlock)), "")
        if first.startswith(SUMMARY_HEADER):
            found += [m.replace("</user-message >", "</user-message>") for m in _USER_MESSAGE.findall(first)]
        elif first.strip() and first != INTERRUPTED_REQUEST:
            found.append(first)
    return found


def _shortened(message: str, limit: int) -> str:
    if len(message) <= limit:
        return message
    return message[:limit] + f"\n[... {len(message) - limit:,} more characters left out for length]"


def budgeted(messages: list[str], budget_chars: int) -> tuple[list[str], int]:
    """The messages within budget: the first one (cut to half the budget if longer) and the latest
    ones that fit in the rest; and how many were left out."""
    if sum(len(m) for m in messages) <= budget_chars or not messages:
        return messages, 0
    first = _shortened(messages[0], budget_chars // 2)
    kept_tail: list[str] = []
    room = budget_chars - len(first)
    for message in reversed(messages[1:]):
        if len(message) > room:
            break
        kept_tail.insert(0, message)
        room -= len(message)
    return [first, *kept_tail], len(messages) - 1 - len(kept_tail)


def transcript(history: Sequence[Message]) -> str:
    """The part to summarise as plain text (a request with tool blocks would need the tools defined)."""
    names = _tool_names(history)
    lines: list[str] = []
    for message in history:
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                who = "USER" if message.role == "user" else "ASSISTANT"
                lines.append(f"{who}: {block.text[:_TRANSCRIPT_TEXT_CHARS]}")
            elif isinstance(block, ToolUseBlock):
                lines.append(f"ASSISTANT called {block.name}({json.dumps(block.input)[:500]})")
            elif isinstance(block, ToolResultBlock):
                text = _result_text(block)[:_TRANSCRIPT_RESULT_CHARS]
                failed = " (an error)" if block.is_error else ""
                lines.append(f"RESULT of {names.get(block.tool_use_id, 'a tool')}{failed}: {text}")
    return "\n\n".join(lines)


def skills_in_use(old: Sequence[Message], kept: Sequence[Message]) -> list[str]:
    """The instructions of the skills loaded in the summarised part (the latest load of each), unless
    the kept part has them: the most recent few, each within a size bound."""

    def loaded(messages: Sequence[Message]) -> dict[str, str]:
        found: dict[str, str] = {}
        for message in messages:
            for block in message.content:
                if isinstance(block, TextBlock) and (name := skill_name(block.text)) is not None:
                    found.pop(name, None)
                    found[name] = block.text
        return found

    still = loaded(kept)
    texts = [text for name, text in loaded(old).items() if name not in still][-_MAX_SKILLS_KEPT:]
    return [t if len(t) <= _SKILL_CHARS else t[:_SKILL_CHARS] + "\n[... cut for length]" for t in texts]


def summary_message(
    summary: str, messages: list[str], left_out: int, notes: Sequence[str] = (), skills: Sequence[str] = ()
) -> Message:
    parts = [
        f"{SUMMARY_HEADER} What follows summarises the earlier part; the messages after it continue as they "
        "were.]",
        f"<summary>\n{summary.strip()}\n</summary>",
    ]
    if messages:
        quoted = "\n".join(
            f"<user-message>\n{m.replace('</user-message>', '</user-message >')}\n</user-message>"
            for m in messages
        )
        note = f" ({left_out} earlier messages are left out for length)" if left_out else ""
        parts.append(f"Every message the user wrote in the summarised part, verbatim{note}:\n{quoted}")
    parts += [note for note in notes if note.strip()]  # what tools keep across compactions (the task list)
    if skills:
        parts.append("Skills loaded earlier are still in effect; their instructions follow.")
    # each skill in its own block, as when it was loaded, so a later compaction finds it again
    return Message(
        role="user", content=[TextBlock(text="\n\n".join(parts)), *(TextBlock(text=t) for t in skills)]
    )


# -- running it ------------------------------------------------------------------------------------
