"""Session storage other than the JSONL files: the small protocol a backend implements (SQLite is
built in; a team would write one for Postgres or Redis), and the session store and log over it.

A backend keeps, per project and session, an append-only sequence of entries: the same JSON lines
the files hold, so loading, repair and compaction work the same on every backend. The session's
folder (stored tool results, checkpoints) stays on disk, where the sandbox can read it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from piton.core.conversation.session import (
    PRUNE_AGE_DAYS,
    PRUNE_MAX_BYTES,
    SessionError,
    SessionStore,
    SessionSummary,
    summarize,
    valid_session_id,
)
from piton.core.conversation.session_load import LoadedSession, load_session
from piton.core.conversation.session_log import SessionLog
from piton.core.records import record


@record(frozen=True)
class StoredSession:
    project: str  # `project_key` of the folder the session ran in
    session_id: str
    modified: float  # seconds since the epoch, of the last append


@runtime_checkable
class SessionStorage(Protocol):
    """Where sessions' entries live. Every method may raise `OSError` when the backend fails."""

    def append(self, project: str, session_id: str, lines: bytes) -> None:
        """Add whole JSON lines (each ending in a newline) after the session's last, all or none."""
        ...

    def read(self, project: str, session_id: str) -> bytes | None:
        """The session's lines in the order appended; None when there is no such session."""
        ...

    def sessions(self, project: str | None = None) -> list[StoredSession]:
        """The sessions of one project (all projects: None), most recently modified first."""
        ...

    def claim(self, project: str, session_id: str, owner: str) -> bool:
        """Become the session's one writer; False while another live owner holds it."""
        ...

    def release(self, project: str, session_id: str, owner: str) -> None: ...

    def delete(self, project: str, session_id: str) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    project TEXT NOT NULL, session_id TEXT NOT NULL, seq INTEGER NOT NULL, line BLOB NOT NULL,
    PRIMARY KEY (project, session_id, seq));
CREATE TABLE IF NOT EXISTS sessions (
    project TEXT NOT NULL, session_id TEXT NOT NULL, modified REAL NOT NULL, owner TEXT,
    PRIMARY KEY (project, session_id));
"""


class SqliteSessionStorage:
    """Sessions in one SQLite database file: one row per entry, written in a transaction, so a
    crash leaves no torn entry. Several processes may share the file (SQLite locks it); a session
    is claimed by the process writing it, and a claim whose process has gone is taken over."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._local = threading.local()

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                db.executescript(_SCHEMA)
            except sqlite3.Error as e:
                raise OSError(f"{self.path}: {e}") from e
            self._local.db = db
        return db

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        except sqlite3.Error as e:
            raise OSError(f"{self.path}: {e}") from e

    def append(self, project: str, session_id: str, lines: bytes) -> None:
        rows = [line + b"\n" for line in lines.split(b"\n") if line.strip()]
        with self._transaction() as db:
            (last,) = db.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM entries WHERE project = ? AND session_id = ?",
                (project, session_id),
            ).fetchone()
            db.executemany(
                "INSERT INTO entries VALUES (?, ?, ?, ?)",
                [(project, session_id, last + n, row) for n, row in enumerate(rows, start=1)],
            )
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, NULL) ON CONFLICT(project, session_id) "
                "DO UPDATE SET modified = excluded.modified",
                (project, session_id, time.time()),
            )

    def read(self, project: str, session_id: str) -> bytes | None:
        try:
            db = self._db()
            known = db.execute(
                "SELECT 1 FROM sessions WHERE project = ? AND session_id = ?", (project, session_id)
            ).fetchone()
            rows = db.execute(
                "SELECT line FROM entries WHERE project = ? AND session_id = ? ORDER BY seq",
                (project, session_id),
            ).fetchall()
        except sqlite3.Error as e:
            raise OSError(f"{self.path}: {e}") from e
        return None if known is None else b"".join(bytes(row[0]) for row in rows)

    def sessions(self, project: str | None = None) -> list[StoredSession]:
        query = "SELECT project, session_id, modified FROM sessions"
        args: tuple[str, ...] = ()
        if project is not None:
            query, args = query + " WHERE project = ?", (project,)
        try:
            rows = self._db().execute(query + " ORDER BY modified DESC", args).fetchall()
        except sqlite3.Error as e:
            raise OSError(f"{self.path}: {e}") from e
        return [StoredSession(p, s, m) for p, s, m in rows]

    def claim(self, project: str, session_id: str, owner: str) -> bool:
        with self._transaction() as db:
            row = db.execute(
                "SELECT owner FROM sessions WHERE project = ? AND session_id = ?", (project, session_id)
            ).fetchone()
            if row is not None and row[0] not in (None, owner) and _alive(row[0]):
                return False
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, ?) ON CONFLICT(project, session_id) "
                "DO UPDATE SET owner = excluded.owner",
                (project, session_id, time.time(), owner),
            )
        return True

    def release(self, project: str, session_id: str, owner: str) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE sessions SET owner = NULL WHERE project = ? AND session_id = ? AND owner = ?",
                (project, session_id, owner),
            )

    def close(self) -> None:
        """Close this thread's connection (each thread opens its own)."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None:
            self._local.db = None
            db.close()

    def delete(self, project: str, session_id: str) -> None:
        with self._transaction() as db:
            for table in ("entries", "sessions"):
                db.execute(f"DELETE FROM {table} WHERE project = ? AND session_id = ?", (project, session_id))


def _alive(owner: str) -> bool:
    """Whether the process an owner names (`host:pid:token`) still runs; owners on another host
    are taken at their word."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != os.uname().nodename or not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_name() -> str:
    """This process as a session's writer: host, pid, and a token for this very log."""
    return f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def shown(storage: SessionStorage, session_id: str) -> str:
    """A stored session, for people: its id and the backend's file, if it has one (the protocol
    asks for none); never the `.jsonl` path that only names it."""
    where = getattr(storage, "path", None)
    return f"session {session_id}" + (f" in {where}" if where is not None else "")


class StoredLog(SessionLog):
    """A session log that appends to a `SessionStorage` rather than a file. `path` names the
    session's folder (`path` without its suffix), as for the files."""

    def __init__(self, storage: SessionStorage, project: str, path: Path, session_id: str) -> None:
        super().__init__(path, session_id)
        self.storage = storage
        self.project = project
        self._owner = owner_name()
        self._claimed = False

    @property
    def where(self) -> str:
        return shown(self.storage, self.session_id)

    def acquire(self) -> bool:
        if not self._claimed:
            self._claimed = self.storage.claim(self.project, self.session_id, self._owner)
        return self._claimed

    def _put(self, data: bytes) -> str | None:
        try:
            if self._shut_out:
                return "it is in use by another piton"
            if not self.acquire():
                self._shut_out = True
                return "it is in use by another piton"
            self.storage.append(self.project, self.session_id, data)
        except OSError as e:
            return e.strerror or str(e)
        self._size += len(data)
        return None

    def sync(self) -> None:
        """Each append is durable when it returns."""

    def close(self) -> None:
        super().close()
        if self._claimed:
            with contextlib.suppress(OSError):
                self.storage.release(self.project, self.session_id, self._owner)
            self._claimed = False


class StorageStore(SessionStore):
    """The session store over a `SessionStorage` backend: sessions are found, listed, opened and
    pruned there; each session's folder stays under `root` on disk."""

    def __init__(self, storage: SessionStorage, root: Path | None = None) -> None:
        super().__init__(root)
        self.storage = storage

    def _log_at(self, path: Path, session_id: str) -> SessionLog:
        return StoredLog(self.storage, path.parent.name, path, session_id)

    def _load_at(self, path: Path, session_id: str, *, in_use: bool = False) -> LoadedSession:
        try:
            data = self.storage.read(path.parent.name, session_id)
        except OSError as e:
            raise SessionError(f"cannot read session {session_id}: {e}") from e
        if data is None:
            raise SessionError(f"no session {session_id}")
        lines = data.splitlines(keepends=True)
        return load_session(
            path, session_id, in_use=in_use, lines=lines, label=shown(self.storage, session_id)
        )

    def _listed(self, project: str | None) -> list[StoredSession]:
        try:
            return self.storage.sessions(project)
        except OSError as e:
            raise SessionError(f"cannot list the sessions: {e}") from e

    def find(self, session_id: str, cwd: Path) -> Path:
        if not valid_session_id(session_id):
            raise SessionError(f"'{session_id}' is not a session id")
        here = self.project_dir(cwd)
        for project in (here.name, None):
            for stored in self._listed(project):
                if stored.session_id == session_id:
                    return self.root / stored.project / f"{session_id}.jsonl"
        raise SessionError(f"no session {session_id} (sessions live in {self.storage})")

    def recent(self, cwd: Path, limit: int = 20) -> list[SessionSummary]:
        project = self.project_dir(cwd).name
        summaries = []
        for stored in self._listed(project)[:limit]:
            data = self.storage.read(project, stored.session_id) or b""
            lines = data.decode("utf-8", "replace").splitlines()
            summaries.append(summarize(stored.session_id, stored.modified, lines))
        return summaries

    def latest(self, cwd: Path) -> str | None:
        listed = self._listed(self.project_dir(cwd).name)
        return listed[0].session_id if listed else None

    def prune(self, *, max_age_days: float = PRUNE_AGE_DAYS, max_bytes: int = PRUNE_MAX_BYTES) -> int:
        """Nothing: a backend several users or machines may share keeps its own retention (one
        user's `cleanupPeriodDays` must not delete the others' sessions)."""
        del max_age_days, max_bytes
        return 0
