"""Large tool results: kept whole on disk, previewed in the conversation.

No tool result over `INLINE_CAP` characters enters the history. The full text goes to a
`ToolResultStore` under the session's directory as a handle; the model gets the head and the tail
and the stored file's path, which it can page through with Read (offset/limit) or search with Grep.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import asdict, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from piton.core.conversation.messages import TextBlock
from piton.core.records import record
from piton.core.tools import ToolResult

INLINE_CAP = 25_000  # characters; a typical source file fits, a build log or a minified bundle does not
BRIEF_CAP = 8_000  # when the window is nearly full even after compaction
PREVIEW_HEAD = 12_000
PREVIEW_TAIL = 4_000
SCHEMA_VERSION = 1


@record(frozen=True)
class ResultHandle:
    id: str
    tool: str
    created_at: str
    size_bytes: int
    size_chars: int
    path: str
    schema_version: int = SCHEMA_VERSION
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ToolResultStore(Protocol):
    def put(self, tool: str, text: str, metadata: dict[str, Any]) -> ResultHandle: ...

    def read(self, handle_id: str) -> str: ...


class FileResultStore:
    """One file per stored result, in `root` (the session's `tool-results` directory)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, tool: str, text: str, metadata: dict[str, Any]) -> ResultHandle:
        self.root.mkdir(parents=True, exist_ok=True)
        handle_id = f"tr_{secrets.token_hex(6)}"
        data = text.encode("utf-8")
        path = self.root / f"{handle_id}.txt"
        path.write_bytes(data)
        return ResultHandle(
            id=handle_id,
            tool=tool,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
            size_bytes=len(data),
            size_chars=len(text),
            path=str(path),
            metadata=metadata,
        )

    def read(self, handle_id: str) -> str:
        if not handle_id.startswith("tr_") or not handle_id[3:].isalnum():
            raise KeyError(handle_id)
        return (self.root / f"{handle_id}.txt").read_text(encoding="utf-8")


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def preview(text: str, handle: ResultHandle, head: int = PREVIEW_HEAD, tail: int = PREVIEW_TAIL) -> str:
    """The head and tail of `text` around a note that says what was left out and how to read it."""
    cut_head = text.rfind("\n", 0, head) + 1
    if cut_head < head * 0.8:  # end on a line boundary only when one is near
        cut_head = head
    cut_tail = text.find("\n", len(text) - tail) + 1
    if not cut_tail or cut_tail > len(text) - tail * 0.8:
        cut_tail = len(text) - tail
    first_hidden, last_hidden = _line_of(text, cut_head), _line_of(text, cut_tail) - 1
    hidden = cut_tail - cut_head
    note = (
        f"\n[... {hidden:,} characters (lines {first_hidden}-{last_hidden}) left out of "
        f"{handle.size_chars:,}. "
        f"The whole result is saved as {handle.id} at {handle.path}: read it with "
        f"Read(file_path={handle.path!r}, offset={first_hidden}, limit=500) or search it with Grep. ...]\n"
    )
    return text[:cut_head] + note + text[cut_tail:]


def _unsaved_preview(text: str, head: int, tail: int, error: OSError) -> str:
    hidden = len(text) - head - tail
    note = (
        f"\n[... {hidden:,} characters left out of {len(text):,}; the whole result could not be saved "
        f"({error.strerror or error}), so they cannot be read back. Run the tool again with a narrower "
        "request if you need them. ...]\n"
    )
    return text[:head] + note + text[len(text) - tail :]


@record
class ResultCapper:
    """Applies the cap to each tool result; `on_store` hears of each handle (the session log lists them)."""

    store: ToolResultStore
    cap: int = INLINE_CAP
    on_store: Callable[[ResultHandle], None] | None = None

    def apply(self, tool: str, tool_use_id: str, result: ToolResult) -> ToolResult:
        content = result.content
        text = (
            content
            if isinstance(content, str)
            else "".join(b.text for b in content if isinstance(b, TextBlock))
        )
        if len(text) <= self.cap:
            return result
        # the preview keeps the default's proportions when the cap shrinks
        head = PREVIEW_HEAD * self.cap // INLINE_CAP
        tail = PREVIEW_TAIL * self.cap // INLINE_CAP
        try:
            handle = self.store.put(tool, text, {"tool_use_id": tool_use_id, "is_error": result.is_error})
        except OSError as e:  # a full disk: the model still gets the preview, and is told the rest is gone
            shown = _unsaved_preview(text, head, tail, e)
        else:
            if self.on_store is not None:
                self.on_store(handle)
            shown = preview(text, handle, head, tail)
        if isinstance(content, str):
            return replace(result, content=shown)
        images = [b for b in content if not isinstance(b, TextBlock)]
        return replace(result, content=[TextBlock(text=shown), *images])
