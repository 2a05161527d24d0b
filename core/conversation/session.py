"""Session transcripts: one JSONL file per session, per project, under the user's state directory.

Every line carries `schema_version`. `session_log` writes them (one writer per session, whole lines,
compactions by reference), `session_load` reads them back (a line at a time, any line survivable);
this module finds, creates, opens and prunes sessions, and decides what opening a session that
another process is writing does.
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
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from piton.core.conversation.messages import Message, TextBlock
from piton.core.conversation.session_load import LoadedSession as LoadedSession
from piton.core.conversation.session_load import load_session as load_session
from piton.core.conversation.session_log import SCHEMA_VERSION as SCHEMA_VERSION
from piton.core.conversation.session_log import SessionLog as SessionLog
from piton.core.conversation.session_log import corrupt_path
from piton.core.conversation.state_dir import private_state_dir as private_state_dir
from piton.core.conversation.state_dir import state_dir as state_dir
from piton.core.modes import is_reminder
from piton.core.records import record
from piton.core.version import __version__

PRUNE_AGE_DAYS = 30
PRUNE_MAX_BYTES = 2 * 1024**3
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def project_key(cwd: Path) -> str:
    """A directory name for a project: its path made readable, plus a hash so names cannot collide."""
    resolved = str(cwd.resolve())
    readable = re.sub(r"[^A-Za-z0-9]+", "-", resolved).strip("-")[-80:] or "root"
    return f"{readable}-{hashlib.sha256(resolved.encode()).hexdigest()[:8]}"


def valid_session_id(session_id: str) -> bool:
    """Ids are names of files and folders: nothing that could lead out of the project's folder."""
    return _SESSION_ID.match(session_id) is not None


class SessionError(Exception):
    """A session that cannot be found or opened; the message is one line meant for people."""


class SessionBusy(SessionError):
    """The session is being written by another process."""


@record(frozen=True)
class SessionSummary:
    session_id: str
    modified: float
    first_prompt: str
    messages: int


def summarize(session_id: str, modified: float, lines: Iterable[str]) -> SessionSummary:
    """A session for a picker: its first prompt and how many messages it logged."""
    first, count = "", 0
    for line in lines:
        if '"type": "message"' not in line:
            continue
        count += 1
        if not first and '"role": "user"' in line:
            with contextlib.suppress(ValueError, KeyError, TypeError, RecursionError):
                message = Message.model_validate(json.loads(line)["message"])
                typed = [
                    b.text for b in message.content if isinstance(b, TextBlock) and not is_reminder(b.text)
                ]
                first = " ".join(" ".join(typed).split())
    return SessionSummary(session_id, modified, first, count)


def _summary(path: Path) -> SessionSummary:
    lines: list[str] = []
    with contextlib.suppress(OSError), path.open(encoding="utf-8", errors="replace") as f:
        lines = list(f)
    return summarize(path.stem, path.stat().st_mtime, lines)


class SessionStore:
    """Finds, creates and opens sessions under one root (the state directory by default)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else private_state_dir() / "projects"
        self.max_age_days: float = PRUNE_AGE_DAYS  # the settings' cleanupPeriodDays

    def project_dir(self, cwd: Path) -> Path:
        return self.root / project_key(cwd)

    def create(self, cwd: Path, model: str | None, **extra: object) -> SessionLog:
        self.prune(max_age_days=self.max_age_days)
        log = self.new_log(cwd, str(uuid.uuid4()))
        log.start(cwd=cwd, model=model, **extra)
        return log

    def new_log(self, cwd: Path, session_id: str) -> SessionLog:
        """The log of a session this store does not hold yet (nothing is written before `start`)."""
        return self._log_at(self.project_dir(cwd) / f"{session_id}.jsonl", session_id)

    def load(self, session_id: str, cwd: Path) -> LoadedSession:
        """A session's history, read without becoming its writer (to fork it)."""
        return self._load_at(self.find(session_id, cwd), session_id)

    def _log_at(self, path: Path, session_id: str) -> SessionLog:
        return SessionLog(path, session_id)

    def _load_at(self, path: Path, session_id: str, *, in_use: bool = False) -> LoadedSession:
        return load_session(path, session_id, in_use=in_use)

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
            corrupt_path(transcript).unlink(missing_ok=True)
            shutil.rmtree(transcript.with_suffix(""), ignore_errors=True)
            total -= size
            removed += 1
        with contextlib.suppress(OSError):  # a state directory that cannot be written: no pruning then
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
        if not valid_session_id(session_id):
            raise SessionError(f"'{session_id}' is not a session id")
        here = self.project_dir(cwd) / f"{session_id}.jsonl"
        if here.is_file():
            return here
        elsewhere = sorted(self.root.glob(f"*/{session_id}.jsonl")) if self.root.is_dir() else []
        if elsewhere:
            return elsewhere[0]
        raise SessionError(f"no session {session_id} (sessions live in {self.root})")

    def open(
        self, session_id: str, cwd: Path, *, if_busy: Literal["refuse", "fork"] = "refuse"
    ) -> tuple[LoadedSession, SessionLog]:
        """The session's history and its log, this process now its one writer. When another process
        is writing it, `if_busy` says what to do: raise `SessionBusy`, or go on in a new session that
        starts with the same history (the log returned is then the new session's, and the loaded
        session's warnings say so)."""
        path = self.find(session_id, cwd)
        log = self._log_at(path, session_id)
        try:
            if not log.acquire():
                return self._busy(path, session_id, cwd, if_busy)
            loaded = self._load_at(path, session_id)
        except OSError as e:
            log.close()
            raise SessionError(f"cannot open session {session_id}: {e.strerror or e}") from e
        problems = bool(loaded.warnings)
        if log.mended is not None:
            loaded.warnings.insert(0, log.mended)
            log.mended = None
        log.adopt(loaded.messages, loaded.uuids)
        log.record("resumed", pid=os.getpid(), version=__version__)
        if problems and not loaded.newer_lines:
            # the repaired history, written down, so that what was wrong is said this once; not over
            # lines of a newer Piton, whose history this one cannot see
            log.compacted(loaded.messages, trigger="repair")
        loaded.warnings += log.take_reports()
        return loaded, log

    def _busy(
        self, path: Path, session_id: str, cwd: Path, if_busy: Literal["refuse", "fork"]
    ) -> tuple[LoadedSession, SessionLog]:
        loaded = self._load_at(path, session_id, in_use=True)
        pid = loaded.writer_pid
        holder = f"another piton (pid {pid})" if pid is not None and pid != os.getpid() else "another piton"
        if if_busy == "refuse":
            raise SessionBusy(f"session {session_id} is in use by {holder}")
        log = self.create(cwd, loaded.model, forked_from=session_id)
        for message in loaded.messages:
            log.append_message(message)
        for kind, entry in loaded.records.items():
            log.record(
                kind, **{k: v for k, v in entry.items() if k not in ("schema_version", "type", "timestamp")}
            )
        loaded.warnings.append(
            f"session {session_id} is in use by {holder}; continuing in a new session {log.session_id}"
        )
        loaded.warnings += log.take_reports()
        return loaded, log
