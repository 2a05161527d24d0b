"""Session transcripts: one JSONL file per session, per project, under the user's state directory.

Every line carries `schema_version`. Lines are written as messages complete and flushed at once, so
a killed process loses at most the line it was writing; loading skips such a line with a warning
and repairs tool_use/tool_result pairing so the history is valid for the API again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from piton import __version__
from piton.core.context.usage import Usage
from piton.core.conversation.history import repair
from piton.core.conversation.messages import Message, ToolResultBlock

SCHEMA_VERSION = 1
PRUNE_AGE_DAYS = 30
PRUNE_MAX_BYTES = 2 * 1024**3
_OWN_KINDS = frozenset({"session", "message", "compact_boundary", "result", "tool_result_handle"})
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def state_dir() -> Path:
    """Where sessions live: the platform's user state directory (XDG_STATE_HOME on Linux)."""
    from platformdirs import user_state_path

    return user_state_path("piton", appauthor=False)


def project_key(cwd: Path) -> str:
    """A directory name for a project: its path made readable, plus a hash so names cannot collide."""
    resolved = str(cwd.resolve())
    readable = re.sub(r"[^A-Za-z0-9]+", "-", resolved).strip("-")[-80:] or "root"
    return f"{readable}-{hashlib.sha256(resolved.encode()).hexdigest()[:8]}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class SessionError(Exception):
    """A session that cannot be found or opened; the message is one line meant for people."""


class SessionLog:
    """Appends a session's lines to its file, flushing each one."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self._file: IO[str] | None = None

    def _open(self) -> IO[str]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            needs_newline = (
                self.path.exists() and self.path.stat().st_size > 0 and not _ends_with_newline(self.path)
            )
            self._file = self.path.open("a", encoding="utf-8")
            if needs_newline:  # keep a line cut short by a crash apart from the next one
                self._file.write("\n")
        return self._file

    def _write(self, entry: dict[str, Any]) -> None:
        line = json.dumps({"schema_version": SCHEMA_VERSION, **entry}, ensure_ascii=False)
        f = self._open()
        f.write(line + "\n")
        f.flush()

    def start(self, *, cwd: Path, model: str) -> None:
        self._write(
            {
                "type": "session",
                "session_id": self.session_id,
                "cwd": str(cwd),
                "model": model,
                "version": __version__,
                "timestamp": _now(),
            }
        )

    def append_message(
        self, message: Message, *, usage: Usage | None = None, model: str | None = None
    ) -> None:
        entry: dict[str, Any] = {
            "type": "message",
            "uuid": str(uuid.uuid4()),
            "timestamp": _now(),
            "message": message.model_dump(mode="json", exclude_none=True),
        }
        if usage is not None:
            entry["usage"] = usage.to_dict()
        if model:
            entry["model"] = model
        self._write(entry)

    def record(self, kind: str, **data: object) -> None:
        self._write({"type": kind, "timestamp": _now(), **data})

    def compacted(
        self, messages: Sequence[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        """One line (so a crash cannot leave half of it): only the stubs when that is all that
        changed, else the whole new history."""
        if stubs is not None:
            self.record("compact_boundary", stubs=stubs, **info)
        else:
            dumped = [m.model_dump(mode="json", exclude_none=True) for m in messages]
            self.record("compact_boundary", messages=dumped, **info)

    def sync(self) -> None:
        """Make what was written durable: a process that leaves at once (`-p`) skips no write, but
        the operating system may still hold the lines in its cache."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


@dataclass(slots=True)
class LoadedSession:
    session_id: str
    path: Path
    messages: list[Message]
    model: str | None = None
    warnings: list[str] = field(default_factory=list)
    # the latest line of each kind the tools recorded (the task list): tools restore their state from it
    records: dict[str, dict[str, Any]] = field(default_factory=dict)


def load_session(path: Path, session_id: str) -> LoadedSession:
    loaded = LoadedSession(session_id, path, [])
    raw: list[Message] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = "last line" if number - 1 == last else f"line {number}"
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict):
                raise ValueError("not an object")
        except ValueError:
            loaded.warnings.append(f"{path.name}: {where} is corrupt (an interrupted write?); skipped it")
            continue
        version = entry.get("schema_version")
        if version != SCHEMA_VERSION:
            loaded.warnings.append(f"{path.name}: {where} has schema_version {version!r}; skipped it")
            continue
        kind = entry.get("type")
        if kind == "session":
            loaded.model = entry.get("model") or loaded.model
        elif kind == "compact_boundary":
            raw = _compacted(raw, entry, loaded, f"{path.name}: {where}")
        elif kind == "message":
            try:
                raw.append(Message.model_validate(entry.get("message")))
            except ValidationError:
                loaded.warnings.append(f"{path.name}: {where} holds an unreadable message; skipped it")
            if entry.get("model"):
                loaded.model = entry["model"]
        elif isinstance(kind, str) and kind not in _OWN_KINDS:
            loaded.records[kind] = entry
    loaded.messages = repair(raw)
    fixed = sum(len(m.tool_results) for m in loaded.messages) - sum(len(m.tool_results) for m in raw)
    if fixed > 0:
        loaded.warnings.append(f"{fixed} tool call(s) had no result in the log; marked them interrupted")
    return loaded


def _compacted(raw: list[Message], entry: dict[str, Any], loaded: LoadedSession, where: str) -> list[Message]:
    """The history after a compaction the log recorded; unchanged (all of it kept) if the record is
    unreadable, since a longer history is better than a lost one."""
    stubs, messages = entry.get("stubs"), entry.get("messages")
    if isinstance(stubs, dict):
        return [_with_stubs(m, stubs) for m in raw]
    if isinstance(messages, list):
        try:
            return [Message.model_validate(m) for m in messages]
        except ValidationError:
            pass
    loaded.warnings.append(f"{where} is an unreadable compaction; kept the history before it")
    return raw


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


@dataclass(frozen=True, slots=True)
class SessionSummary:
    session_id: str
    modified: float
    first_prompt: str
    messages: int


def _summary(path: Path) -> SessionSummary:
    first, count = "", 0
    with contextlib.suppress(OSError), path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if '"type": "message"' not in line:
                continue
            count += 1
            if not first and '"role": "user"' in line:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    message = Message.model_validate(json.loads(line)["message"])
                    first = " ".join(message.text.split())
    return SessionSummary(path.stem, path.stat().st_mtime, first, count)


class SessionStore:
    """Finds, creates and opens sessions under one root (the state directory by default)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else state_dir() / "projects"

    def project_dir(self, cwd: Path) -> Path:
        return self.root / project_key(cwd)

    def create(self, cwd: Path, model: str) -> SessionLog:
        self.prune()
        session_id = str(uuid.uuid4())
        log = SessionLog(self.project_dir(cwd) / f"{session_id}.jsonl", session_id)
        log.start(cwd=cwd, model=model)
        return log

    @staticmethod
    def session_dir(log: SessionLog) -> Path:
        """Where a session keeps its files (stored tool results), next to its transcript."""
        return log.path.with_suffix("")

    def prune(self, *, max_age_days: float = PRUNE_AGE_DAYS, max_bytes: int = PRUNE_MAX_BYTES) -> int:
        """Delete sessions (transcript and files) older than `max_age_days`, then the oldest ones until
        all together take at most `max_bytes`. Runs at most once a day. Returns how many went."""
        marker = self.root / ".last-prune"
        now = time.time()
        with contextlib.suppress(OSError):
            if now - marker.stat().st_mtime < 86_400:
                return 0
        sessions = []
        for transcript in self.root.glob("*/*.jsonl"):
            with contextlib.suppress(OSError):
                folder = transcript.with_suffix("")
                size = transcript.stat().st_size + sum(
                    f.stat().st_size for f in folder.rglob("*") if f.is_file()
                )
                sessions.append((transcript.stat().st_mtime, size, transcript))
        sessions.sort()
        total = sum(size for _, size, _ in sessions)
        removed = 0
        for mtime, size, transcript in sessions:
            if now - mtime < max_age_days * 86_400 and total <= max_bytes:
                break
            transcript.unlink(missing_ok=True)
            shutil.rmtree(transcript.with_suffix(""), ignore_errors=True)
            total -= size
            removed += 1
        self.root.mkdir(parents=True, exist_ok=True)
        marker.touch()
        return removed

    def recent(self, cwd: Path, limit: int = 20) -> list[SessionSummary]:
        """This project's sessions, newest first, each with its first prompt (for a picker)."""
        directory = self.project_dir(cwd)
        if not directory.is_dir():
            return []
        files = sorted(directory.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        return [_summary(path) for path in files[:limit]]

    def latest(self, cwd: Path) -> str | None:
        """The most recently written session of this project, if any."""
        directory = self.project_dir(cwd)
        if not directory.is_dir():
            return None
        files = sorted(directory.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        return files[0].stem if files else None

    def find(self, session_id: str, cwd: Path) -> Path:
        if not _SESSION_ID.match(session_id):
            raise SessionError(f"'{session_id}' is not a session id")
        here = self.project_dir(cwd) / f"{session_id}.jsonl"
        if here.is_file():
            return here
        elsewhere = sorted(self.root.glob(f"*/{session_id}.jsonl")) if self.root.is_dir() else []
        if elsewhere:
            return elsewhere[0]
        raise SessionError(f"no session {session_id} (sessions live in {self.root})")

    def open(self, session_id: str, cwd: Path) -> tuple[LoadedSession, SessionLog]:
        path = self.find(session_id, cwd)
        try:
            loaded = load_session(path, session_id)
        except OSError as e:
            raise SessionError(f"cannot read session {session_id}: {e.strerror or e}") from e
        return loaded, SessionLog(path, session_id)
