"""Reading a session transcript back into a history valid for the API.

The file is read a line at a time and only what the current history needs is kept: a compaction
boundary replaces the history, so a log of any length costs about as much memory as the history it
ends with. No line can make loading fail: an unreadable one (torn, garbage, nested too deeply) is
skipped with a warning naming it, invalid UTF-8 and lone surrogates become U+FFFD, and the pairing of
tool calls and results is repaired, saying what was dropped and what was added.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from dataclasses import field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from piton.core.conversation.history import repair_reporting
from piton.core.conversation.messages import Message, ToolResultBlock
from piton.core.conversation.session_log import SCHEMA_VERSION
from piton.core.records import record

_OWN_KINDS = frozenset(
    {"session", "resumed", "message", "compact_message", "compact_boundary", "result", "tool_result_handle"}
)
# a JSON escape of a UTF-16 surrogate; after decoding, a lone one is not text UTF-8 can hold
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


@record
class LoadedSession:
    session_id: str
    path: Path
    messages: list[Message]
    model: str | None = None
    warnings: list[str] = field(default_factory=list)
    # the latest line of each kind the tools recorded (the task list): tools restore their state from it
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per message, the uuid of the line it was read from (None: made by repair, or an old-style line)
    uuids: list[str | None] = field(default_factory=list)
    writer_pid: int | None = None  # the process that last opened the session for writing
    newer_lines: int = 0  # lines of a later schema version, skipped (a newer Piton wrote them)
    label: str = ""  # how warnings name it (a storage backend's rows are no file): else the file's name

    @property
    def shown(self) -> str:
        return self.label or self.path.name


def _valid_text(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_valid_text(v) for v in value]
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    return value


class _Reader:
    """The state of one load: the history so far and the lines a compaction may refer to."""

    def __init__(self, loaded: LoadedSession) -> None:
        self.loaded = loaded
        self.history: list[Message] = []
        self.uuids: list[str | None] = []
        self.staged: dict[str, Message] = {}  # compact_message lines, until their boundary

    def warn(self, where: str, text: str) -> None:
        self.loaded.warnings.append(f"{self.loaded.shown}: {where} {text}")

    def line(self, data: bytes, where: str) -> None:
        try:
            entry = json.loads(data.decode("utf-8", "replace"))
        except RecursionError:
            self.warn(where, "is nested too deeply to read; skipped it")
            return
        except ValueError:
            self.warn(where, "is corrupt (an interrupted write?); skipped it")
            return
        if not isinstance(entry, dict):
            self.warn(where, "is corrupt (an interrupted write?); skipped it")
            return
        if _SURROGATE_ESCAPE.search(data):
            entry = _valid_text(entry)
        version = entry.get("schema_version")
        if version != SCHEMA_VERSION:
            if isinstance(version, int) and version > SCHEMA_VERSION:
                self.loaded.newer_lines += 1
            self.warn(where, f"has schema_version {version!r}; skipped it")
            return
        self.entry(entry, where)

    def entry(self, entry: dict[str, Any], where: str) -> None:
        kind = entry.get("type")
        line_id = entry.get("uuid") if isinstance(entry.get("uuid"), str) else None
        if kind in ("session", "resumed"):
            if kind == "session" and isinstance(entry.get("model"), str):
                self.loaded.model = entry["model"]
            pid = entry.get("pid")
            self.loaded.writer_pid = pid if isinstance(pid, int) else None
        elif kind == "message":
            message = _message(entry.get("message"))
            if message is None:
                self.warn(where, "holds an unreadable message; skipped it")
            else:
                self.history.append(message)
                self.uuids.append(line_id)
            if isinstance(entry.get("model"), str) and entry["model"]:
                self.loaded.model = entry["model"]
        elif kind == "compact_message":
            message = _message(entry.get("message"))
            if message is not None and line_id is not None:
                self.staged[line_id] = message  # an unreadable one makes its boundary unreadable
        elif kind == "compact_boundary":
            if entry.get("trigger") == "repair":
                # written by a load that reported what was wrong before it; that was said once
                self.loaded.warnings.clear()
            if not self.boundary(entry):
                self.warn(where, "is an unreadable compaction; kept the history before it")
            self.staged.clear()
        elif isinstance(kind, str) and kind not in _OWN_KINDS:
            self.loaded.records[kind] = entry

    def boundary(self, entry: dict[str, Any]) -> bool:
        refs, stubs, messages = entry.get("history"), entry.get("stubs"), entry.get("messages")
        if isinstance(refs, list):
            known = {u: m for u, m in zip(self.uuids, self.history, strict=True) if u is not None}
            known.update(self.staged)
            found = [known.get(r) if isinstance(r, str) else None for r in refs]
            if any(m is None for m in found):
                return False
            self.history = [m for m in found if m is not None]
            self.uuids = list(refs)
            return True
        if isinstance(stubs, dict):  # an older log: the same history, some results shortened
            stubbed = [_with_stubs(m, stubs) for m in self.history]
            pairs = zip(self.uuids, stubbed, self.history, strict=True)
            self.uuids = [u if new is old else None for u, new, old in pairs]
            self.history = stubbed
            return True
        if isinstance(messages, list):  # an older log: the whole new history in the line
            parsed = [_message(m) for m in messages]
            if any(m is None for m in parsed):
                return False
            self.history = [m for m in parsed if m is not None]
            self.uuids = [None] * len(self.history)
            return True
        return False


def _message(data: Any) -> Message | None:
    try:
        return Message.model_validate(data)
    except (ValidationError, RecursionError):
        return None


def _with_stubs(message: Message, stubs: dict[str, Any]) -> Message:
    if message.role != "user" or not any(r.tool_use_id in stubs for r in message.tool_results):
        return message
    content = [
        ToolResultBlock(tool_use_id=b.tool_use_id, content=str(stubs[b.tool_use_id]), is_error=b.is_error)
        if isinstance(b, ToolResultBlock) and b.tool_use_id in stubs
        else b
        for b in message.content
    ]
    return Message(role="user", content=content)


def load_session(
    path: Path,
    session_id: str,
    *,
    in_use: bool = False,
    lines: Iterable[bytes] | None = None,
    label: str = "",
) -> LoadedSession:
    """The session in `path`, line by line (or in `lines`, read from a storage backend; `path` then
    names the session, and `label` is what warnings call it). `in_use`: another process is writing
    it, so a last line without its newline is one being written, not a torn one, and is left out
    without a word."""
    loaded = LoadedSession(session_id, path, [], label=label)
    reader = _Reader(loaded)
    held: tuple[bytes, int] | None = None  # one line behind, to know which is the last
    with contextlib.ExitStack() as stack:
        source = lines if lines is not None else stack.enter_context(path.open("rb"))
        for number, data in enumerate(source, start=1):
            if not data.strip():
                continue
            if held is not None:
                reader.line(held[0], f"line {held[1]}")
            held = (data, number)
    if held is not None and not (in_use and not held[0].endswith(b"\n")):
        reader.line(held[0], "last line")
    messages, report = repair_reporting(reader.history)
    by_id = {id(m): u for m, u in zip(reader.history, reader.uuids, strict=True) if u is not None}
    loaded.messages = messages
    loaded.uuids = [by_id.get(id(m)) for m in messages]
    if report:
        loaded.warnings.append(f"{loaded.shown}: {report.describe()}")
    return loaded
