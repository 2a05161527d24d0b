"""Checkpoints: every user turn's place in the conversation, and the files the tools changed in it.

Before a tool first changes a file in a turn, the file's content (or that it did not exist) is kept;
after each change, a hash of what the tool left. Restoring turn N puts every file changed in turn N
or later back as it was before its first change from N on: files created since are removed, deleted
ones come back, and a file whose content is no longer what Piton left (changed outside Piton) is
reported as a conflict rather than overwritten unless the caller says so. What shell commands did is
not tracked.

Kept in the session's state folder, outside every sandbox: an append-only `index.jsonl` and the
contents by hash in `blobs/`, so a resumed session keeps its checkpoints. Files are opened without
following links (`safety.pinned`), and a path outside the writable roots is never restored.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from piton.core.records import record
from piton.core.safety import pinned

_INDEX = "index.jsonl"


@record
class Checkpoint:
    id: str
    position: int  # messages in the history before the turn's prompt
    prompt: str
    time: float
    files: dict[str, str | None] = field(default_factory=dict)  # path -> blob hash before (None: absent)
    conversation: bool = True  # False once a compaction rewrote the history it points into


@record(frozen=True)
class FileChange:
    path: Path
    action: str  # "restore" | "delete"
    conflict: bool  # changed since Piton last wrote it


@record
class RestorePlan:
    checkpoint: Checkpoint
    changes: list[FileChange]
    skipped: list[str]  # a line for each file that cannot be restored, and why

    @property
    def conflicts(self) -> list[Path]:
        return [c.path for c in self.changes if c.conflict]


def _hash(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def read_file(path: Path) -> bytes | None:
    """The bytes of the regular file at the real path `path`, or None when there is none."""
    try:
        fd = pinned.open_path(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
        os.set_blocking(fd, True)
        return pinned.read_all(fd)
    finally:
        os.close(fd)


def _delete(path: Path) -> None:
    parent = pinned.open_dir(path.parent)
    try:
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(os.stat(path.name, dir_fd=parent, follow_symlinks=False).st_mode):
                raise OSError(errno.EINVAL, f"{path} is no longer a regular file")
            os.unlink(path.name, dir_fd=parent)
    finally:
        os.close(parent)


class Checkpoints:
    """A session's checkpoints. `folder` None keeps them in memory only."""

    def __init__(self, folder: Path | None, *, writable: Callable[[Path], bool] | None = None) -> None:
        self.folder = folder
        self.turns: list[Checkpoint] = []
        self.problem: str | None = None  # why checkpoints could not be written, said once
        self._after: dict[str, str | None] = {}  # path -> hash of what Piton last left there
        self._lost: set[str] = set()
        self._memory: dict[str, bytes] = {}  # contents by hash, when there is no folder
        self._torn = False  # the index ends in a partial line
        self._writable = writable or (lambda _: True)
        if folder is not None and (folder / _INDEX).exists():
            self._load(folder / _INDEX)

    # -- recording ---------------------------------------------------------------------------------
    def begin(self, checkpoint_id: str, position: int, prompt: str) -> None:
        turn = Checkpoint(checkpoint_id, position, " ".join(prompt.split())[:200], time.time())
        self.turns.append(turn)
        self._log(
            {"type": "turn", "id": turn.id, "position": position, "prompt": turn.prompt, "time": turn.time}
        )

    def before_change(self, path: Path, current: bytes | None) -> None:
        """A tool is about to change `path`, whose content is `current` (None: it does not exist)."""
        if not self.turns or str(path) in self.turns[-1].files:
            return
        turn = self.turns[-1]
        blob = _hash(current)
        if current is not None and not self._keep(blob, current):
            self._lost.add(str(path))
        turn.files[str(path)] = blob
        self._log({"type": "file", "turn": turn.id, "path": str(path), "blob": blob})

    def after_change(self, path: Path, data: bytes | None) -> None:
        """A tool left `data` at `path` (None: it removed the file)."""
        if not self.turns:
            return
        self._after[str(path)] = _hash(data)
        self._log({"type": "after", "path": str(path), "hash": self._after[str(path)]})

    def compacted(self) -> None:
        """The history was rewritten: earlier checkpoints can restore files, not the conversation."""
        for turn in self.turns:
            turn.conversation = False
        if self.turns:
            self._log({"type": "compacted"})

    def forget_from(self, checkpoint_id: str) -> None:
        """The conversation went back to before `checkpoint_id`: it and later turns are gone."""
        index = self._index(checkpoint_id)
        del self.turns[index:]
        self._log({"type": "forget", "from": checkpoint_id})

    # -- restoring ---------------------------------------------------------------------------------
    def find(self, checkpoint_id: str) -> Checkpoint:
        return self.turns[self._index(checkpoint_id)]

    def plan(self, checkpoint_id: str) -> RestorePlan:
        """What restoring the files to before `checkpoint_id` would do."""
        changes: list[FileChange] = []
        skipped: list[str] = []
        for name, blob in sorted(self._earliest(checkpoint_id).items()):
            path = Path(name)
            if name in self._lost:
                skipped.append(f"{path}: its earlier content was not kept; left as it is")
                continue
            try:
                current = read_file(path)
            except OSError as e:
                skipped.append(f"{path}: cannot be read ({e.strerror or e}); left as it is")
                continue
            now = _hash(current)
            if now == blob:
                continue  # already as it was
            # a file removed since is put back without asking: nothing of anyone's is lost
            conflict = current is not None and name in self._after and now != self._after[name]
            changes.append(FileChange(path, "delete" if blob is None else "restore", conflict))
        return RestorePlan(self.find(checkpoint_id), changes, skipped)

    def restore(self, plan: RestorePlan, *, overwrite: bool = False) -> tuple[list[Path], list[str]]:
        """Carry out `plan`: the files changed, and a line for each that was not (a conflict left
        alone unless `overwrite`, a path outside the writable roots, a failure)."""
        done: list[Path] = []
        problems = list(plan.skipped)
        earliest = self._earliest(plan.checkpoint.id)
        for change in plan.changes:
            if change.conflict and not overwrite:
                problems.append(f"{change.path}: changed outside Piton since; left as it is")
                continue
            if not self._writable(change.path):
                problems.append(f"{change.path}: outside the writable folders; left as it is")
                continue
            try:
                if change.action == "delete":
                    _delete(change.path)
                    self.after_change(change.path, None)
                else:
                    data = self._blob(earliest[str(change.path)])
                    pinned.replace(change.path, data, create_parents=True)
                    self.after_change(change.path, data)
            except OSError as e:
                problems.append(f"{change.path}: {e.strerror or e}")
                continue
            done.append(change.path)
        return done, problems

    # -- storage -----------------------------------------------------------------------------------
    def _earliest(self, checkpoint_id: str) -> dict[str, str | None]:
        """Each file changed from `checkpoint_id` on, and its content before the first change."""
        earliest: dict[str, str | None] = {}
        for turn in self.turns[self._index(checkpoint_id) :]:
            for path, blob in turn.files.items():
                earliest.setdefault(path, blob)
        return earliest

    def _index(self, checkpoint_id: str) -> int:
        for i, turn in enumerate(self.turns):
            if turn.id == checkpoint_id:
                return i
        raise KeyError(checkpoint_id)

    def _blob(self, blob: str | None) -> bytes:
        if blob is None or (self.folder is None and blob not in self._memory):
            raise OSError(errno.ENOENT, "no earlier content kept")
        data = self._memory[blob] if self.folder is None else (self.folder / "blobs" / blob).read_bytes()
        if _hash(data) != blob:
            raise OSError(errno.EIO, "the kept content is damaged")
        return data

    def _keep(self, blob: str | None, data: bytes) -> bool:
        if blob is None:
            return True
        if self.folder is None:
            self._memory[blob] = data
            return True
        path = self.folder / "blobs" / blob
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return True
        except OSError as e:
            self._fail(e)
            return False
        try:
            with open(fd, "wb") as f:
                f.write(data)
        except OSError as e:
            self._fail(e)
            with contextlib.suppress(OSError):
                path.unlink()
            return False
        return True

    def _log(self, entry: dict[str, Any]) -> None:
        if self.folder is None:
            return
        try:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(self.folder / _INDEX, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            with open(fd, "ab") as f:
                # ASCII JSON: a file name that is not UTF-8 (a lone surrogate here) is escaped, not an error
                f.write((b"\n" if self._torn else b"") + json.dumps(entry).encode() + b"\n")
            self._torn = False
        except OSError as e:
            self._fail(e)

    def _fail(self, e: OSError) -> None:
        if self.problem is None:
            self.problem = f"checkpoints cannot be written in {self.folder}: {e.strerror or e}"

    def _load(self, index: Path) -> None:
        """The checkpoints a resumed session recorded; an unreadable line is skipped."""
        with contextlib.suppress(OSError), index.open("rb") as f:
            for raw in f:
                self._torn = not raw.endswith(b"\n")  # a killed writer's last line: start anew after it
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    self._replay(json.loads(raw))

    def _replay(self, entry: dict[str, Any]) -> None:
        kind = entry["type"]
        if kind == "turn":
            self.turns.append(
                Checkpoint(
                    str(entry["id"]), int(entry["position"]), str(entry["prompt"]), float(entry["time"])
                )
            )
        elif kind == "file" and self.turns:
            turn = next((t for t in self.turns if t.id == entry["turn"]), None)
            if turn is None:  # its turn's line was lost: nothing can be restored to it
                return
            blob = entry["blob"]
            turn.files.setdefault(str(entry["path"]), str(blob) if blob is not None else None)
            if blob is not None and self.folder is not None and not (self.folder / "blobs" / blob).exists():
                self._lost.add(str(entry["path"]))
        elif kind == "after":
            self._after[str(entry["path"])] = entry["hash"]
        elif kind == "compacted":
            for turn in self.turns:
                turn.conversation = False
        elif kind == "forget":
            with contextlib.suppress(KeyError):
                del self.turns[self._index(str(entry["from"])) :]
