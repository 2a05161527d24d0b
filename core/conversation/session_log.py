"""Writing a session transcript (JSONL, one entry a line).

One process writes a session at a time: the writer holds an OS lock on the transcript for as long as
its `SessionLog` is open, and the system drops it when the process ends, however it ends. Entries go
to the file as whole lines or not at all (a failed write is cut back off), so the file holds only
whole lines, and a line left half-written by a killed process is moved aside the next time the
session is opened for writing. Every message is written once: a compaction names the messages it
keeps by the uuids of their lines and writes only its new ones in full. A log that cannot be
written (a full disk) says so once, keeps the conversation going, and catches up when it can.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from piton.core.conversation.messages import Message
from piton.core.conversation.usage import Usage
from piton.core.version import __version__

SCHEMA_VERSION = 1
_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
_TAIL_BLOCK = 1 << 16


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def encode_line(entry: dict[str, Any]) -> bytes:
    """One JSONL line. Never fails on text: a lone surrogate (which UTF-8 cannot hold) is written as
    its JSON escape, which any reader takes back."""
    text = json.dumps({"schema_version": SCHEMA_VERSION, **entry}, ensure_ascii=False)
    return (text + "\n").encode("utf-8", "backslashreplace")


def corrupt_path(path: Path) -> Path:
    """Where torn lines cut from a transcript are kept, next to it."""
    return path.with_name(path.name + ".corrupt")


def _whole_entry(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data.decode("utf-8", "replace")), dict)
    except (ValueError, RecursionError):
        return False


def _tail_start(f: IO[bytes], size: int) -> int:
    """The offset just after the file's last newline (0 if there is none), reading from the end."""
    end = size
    while end > 0:
        begin = max(0, end - _TAIL_BLOCK)
        f.seek(begin)
        cut = f.read(end - begin).rfind(b"\n")
        if cut >= 0:
            return begin + cut + 1
        end = begin
    return 0


class SessionLog:
    """Appends a session's entries to its transcript; the writer of that session while it is open."""

    def __init__(self, path: Path, session_id: str) -> None:
        self.path = path
        self.session_id = session_id
        self.mended: str | None = None  # what opening it did to a torn last line, to be said once
        self._file: IO[bytes] | None = None
        self._size = 0  # the file's length: whole lines only, since this process is its one writer
        # the conversation as the log holds it, and the uuid of each message's line: a compaction
        # refers to kept messages by uuid. Keyed by id(), not equality: the history keeps the very
        # objects it logged, and `_history` keeps them alive, so an id cannot be reused meanwhile.
        self._history: list[Message] = []
        self._uuids: dict[int, str] = {}
        self._unsaved: list[dict[str, Any]] = []  # entries (not messages) a failed write left out
        self._failure: str | None = None  # why the file is behind the conversation
        # another process was writing the session when this log first wrote: it never writes there
        # (catching up later would put its history over the other's)
        self._shut_out = False
        self._report: Callable[[str], None] | None = None
        self._reports: list[str] = []

    # -- the lock ----------------------------------------------------------------------------------
    def acquire(self) -> bool:
        """Open the transcript for writing and become its one writer; False when another process
        is. A torn last line is cut off now (see `mended`). Raises OSError if it cannot be opened."""
        if self._file is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, _OPEN_FLAGS, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError:
            pass  # a filesystem without locks: write unguarded rather than not at all
        self._file = open(fd, "ab", buffering=0)  # noqa: SIM115 - held until close()
        self._size = os.fstat(fd).st_size
        self.mended = self._mend()
        return True

    def _mend(self) -> str | None:
        """Cut a torn last line (a process killed mid-write) off the file, keeping its bytes in the
        `.corrupt` file beside it, so that it is reported once rather than on every load."""
        assert self._file is not None
        if self._size == 0:
            return None
        with self.path.open("rb") as f:
            start = _tail_start(f, self._size)
            if start == self._size:
                return None
            f.seek(start)
            tail = f.read(self._size - start)
        if _whole_entry(tail) and self._put(b"\n") is None:  # only the newline was missing
            return None
        aside = corrupt_path(self.path)
        try:
            with aside.open("ab") as f:
                f.write(tail + b"\n")
            where = f"moved it to {aside.name}"
        except OSError:
            where = "removed it"
        try:
            os.ftruncate(self._file.fileno(), start)
            self._size = start
        except OSError:  # it stays; a newline at least keeps the next line apart from it
            self._put(b"\n")
            where = "skipped it"
        return f"{self.path.name}: last line is corrupt (an interrupted write?); {where}"

    # -- what the agent logs -----------------------------------------------------------------------
    def start(self, *, cwd: Path, model: str | None, **extra: object) -> None:
        self.record(
            "session",
            session_id=self.session_id,
            cwd=str(cwd),
            model=model,
            version=__version__,
            pid=os.getpid(),
            **extra,
        )

    def adopt(self, messages: Sequence[Message], uuids: Sequence[str | None]) -> None:
        """Take the history loaded from this file (with the uuids of the lines it came from, None
        for messages no line holds), so the next compaction can refer to them."""
        self._history = list(messages)
        self._uuids = {id(m): u for m, u in zip(self._history, uuids, strict=True) if u is not None}

    def append_message(
        self,
        message: Message,
        *,
        usage: Usage | None = None,
        model: str | None = None,
        line_id: str | None = None,
    ) -> None:
        self._history.append(message)
        if self._failure is not None:
            self._catch_up()
            return
        line_id = line_id or str(uuid.uuid4())
        entry: dict[str, Any] = {
            "type": "message",
            "uuid": line_id,
            "timestamp": now(),
            "message": message.model_dump(mode="json", exclude_none=True),
        }
        if usage is not None:
            entry["usage"] = usage.to_dict()
        if model:
            entry["model"] = model
        if self._write(encode_line(entry)):
            self._uuids[id(message)] = line_id

    def record(self, kind: str, **data: object) -> None:
        entry = {"type": kind, "timestamp": now(), **data}
        if self._failure is not None:
            self._unsaved.append(entry)
            self._catch_up()
        elif not self._write(encode_line(entry)):
            self._unsaved.append(entry)

    def compacted(
        self, messages: Sequence[Message], *, stubs: dict[str, str] | None = None, **info: object
    ) -> None:
        """The history became `messages`. Written as the messages not logged yet, each on its own
        line, then one boundary line listing the new history by uuid: a crash before the boundary
        leaves the history as it was. `stubs` need no line of their own: the stubbed messages are
        new messages."""
        del stubs
        keep = {id(m): self._uuids[id(m)] for m in messages if id(m) in self._uuids}
        self._history = list(messages)
        self._uuids = keep
        if self._failure is not None:
            self._catch_up()
        else:
            self._boundary(info)

    def _boundary(self, info: dict[str, object]) -> bool:
        """Write the history as it is now: unsaved entries and unlogged messages, then a boundary."""
        fresh: dict[int, str] = {}
        lines = [encode_line(entry) for entry in self._unsaved]
        refs = []
        for message in self._history:
            key = id(message)
            line_id = self._uuids.get(key) or fresh.get(key)
            if line_id is None:
                line_id = fresh[key] = str(uuid.uuid4())
                dumped = message.model_dump(mode="json", exclude_none=True)
                lines.append(encode_line({"type": "compact_message", "uuid": line_id, "message": dumped}))
            refs.append(line_id)
        lines.append(encode_line({"type": "compact_boundary", "timestamp": now(), "history": refs, **info}))
        if not self._write(b"".join(lines)):
            return False
        self._uuids.update(fresh)
        self._unsaved.clear()
        return True

    # -- writing -----------------------------------------------------------------------------------
    def _write(self, data: bytes) -> bool:
        """Append whole lines; on failure none of them stays in the file, and the failure is said
        once."""
        reason = self._put(data)
        if reason is None:
            return True
        if self._failure is None:
            self._failure = reason
            if self._shut_out:
                then = "this conversation is not saved there"
            elif self._size == 0:
                then = "the conversation goes on, and is saved once the log can be written"
            else:
                then = (
                    "the session up to here is intact, and the rest is saved once the log can be "
                    "written again"
                )
            self._say(f"cannot write the session log {self.where}: {reason}; {then}")
        return False

    @property
    def where(self) -> str:
        """Where the log is written, for people."""
        return str(self.path)

    def _put(self, data: bytes) -> str | None:
        """Append `data`; None, or why it could not be (nothing of it is left in the file then)."""
        busy = "it is in use by another piton"
        try:
            if self._shut_out:
                return busy
            if self._file is None and not self.acquire():
                self._shut_out = True
                return busy
            assert self._file is not None
            if self.mended is not None:
                self._say(self.mended)
                self.mended = None
            start = self._size
            view = memoryview(data)
            try:
                while view:
                    written = self._file.write(view)
                    if not written:
                        raise OSError(f"wrote nothing to {self.path}")
                    view = view[written:]
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._file.fileno(), start)
                raise
        except OSError as e:
            return e.strerror or str(e)
        self._size += len(data)
        return None

    def _catch_up(self) -> None:
        """After a failed write: try to write everything the file lacks, as one compaction."""
        if self._boundary({"trigger": "resync"}):
            self._failure = None
            self._say(f"the session log {self.where} is written again; nothing was lost")

    # -- reporting ---------------------------------------------------------------------------------
    def report_to(self, report: Callable[[str], None]) -> None:
        """Where to say what went wrong with the log (said so far is said now)."""
        self._report = report
        reports, self._reports = self._reports, []
        for text in reports:
            report(text)

    def warn(self, text: str) -> None:
        """Say `text` where the log's own problems are said (to the user, once it knows where)."""
        self._say(text)

    def _say(self, text: str) -> None:
        if self._report is None:
            self._reports.append(text)
        else:
            self._report(text)

    def take_reports(self) -> list[str]:
        """What was to be said and had nowhere to go yet."""
        reports, self._reports = self._reports, []
        return reports

    def sync(self) -> None:
        """Make what was written durable: a process that leaves at once (`-p`) skips no write, but
        the operating system may still hold the lines in its cache."""
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Stop writing and let go of the session (another process may write it now)."""
        if self._failure is not None and not self._shut_out:
            self._catch_up()
        if self._failure is not None and not self._shut_out:
            self._say(
                f"this session could not be saved in {self.where}: {self._failure}"
                if self._size == 0
                else f"the end of this session could not be saved in {self.where}: {self._failure}; "
                "--resume continues it from before that"
            )
        if self._file is not None:
            self._file.close()
            self._file = None
