"""memory: a folder of notes the model keeps across sessions and compactions, with the commands and
input of Anthropic's memory tool (`view`, `create`, `str_replace`, `insert`, `delete`, `rename` on
paths under `/memories`), so a model trained on it uses it as it knows how.

The folder is Piton's, one per project, in the user's state directory (or the project's
`.piton/memories` when the settings say `"memoryInProject": true`). Every path is checked to stay
inside it, and every file is opened with no symbolic link followed anywhere in its path, so neither a
`../` nor a link planted in the folder can reach another file. Files and the folder are bounded."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import Field

from piton.core.safety import pinned
from piton.core.tools import Tool, ToolContext, ToolInput, ToolResult

PREFIX = "/memories"
MAX_FILE_BYTES = 100_000
MAX_TOTAL_BYTES = 10 * 1024 * 1024
MAX_FILES = 500
MAX_DEPTH = 6


class MemoryError_(Exception):
    """A command that cannot be done; the message says why."""


class MemoryInput(ToolInput):
    command: Literal["view", "create", "str_replace", "insert", "delete", "rename"]
    path: str | None = Field(
        None, description="A path under /memories (view, create, str_replace, insert, delete)."
    )
    file_text: str | None = Field(None, description="create: the whole content of the file.")
    old_str: str | None = Field(None, description="str_replace: the text to replace; it must occur once.")
    new_str: str | None = Field(None, description="str_replace: the text to put in its place.")
    insert_line: int | None = Field(
        None, ge=0, description="insert: the line after which to insert (0: at the top)."
    )
    insert_text: str | None = Field(None, description="insert: the text to insert.")
    view_range: list[int] | None = Field(
        None, description="view: [first line, last line] of a file (-1: the end)."
    )
    old_path: str | None = Field(None, description="rename: the path to move.")
    new_path: str | None = Field(None, description="rename: where to move it.")


def _decoded(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


class Memory(Tool[MemoryInput]):
    name = "memory"
    description = (
        "Your memory: a folder of files under /memories that lasts across conversations and survives "
        "the compaction of this one. Your context may be compacted at any time, dropping earlier "
        "details: whenever you learn something you will need later (the state of a task, decisions, "
        "what the user prefers, what failed), write it here first. At the start of a task, view "
        "/memories to see what earlier sessions saved. Keep it tidy: update and delete files that are "
        "out of date. Commands: view (a folder's files, or a file's numbered lines), create, "
        "str_replace, insert, delete, rename. Do not store secrets."
    )
    input_model = MemoryInput
    read_only = True  # it writes only Piton's own memory folder, never the user's files
    deferred = True  # notes are kept now and then, not every turn

    def __init__(self, root: Path) -> None:
        self.root = root

    def is_concurrency_safe(self, args: MemoryInput, ctx: ToolContext) -> bool:
        return args.command == "view"

    async def run(self, args: MemoryInput, ctx: ToolContext) -> ToolResult:
        try:
            return self._run(args)
        except MemoryError_ as e:
            return ToolResult.error(str(e))
        except pinned.PathChanged:
            return ToolResult.error("A symbolic link in the memory folder is not followed.")
        except OSError as e:
            return ToolResult.error(f"The memory folder cannot be used: {e.strerror or e}")

    # -- paths -------------------------------------------------------------------------------------
    def _real_root(self) -> Path:
        """The folder, made if missing. It is taken as given (its owner resolved it): a link in its
        place or anywhere in its path is refused, never followed."""
        fd = pinned.make_dirs(self.root)
        os.close(fd)
        return self.root

    def _path(self, given: str | None) -> tuple[Path, str]:
        """The real path of `given` inside the folder, and how to name it to the model."""
        if not given:
            raise MemoryError_("Give a path under /memories.")
        posix = PurePosixPath(given.strip())
        parts = posix.parts
        if parts[:2] != ("/", "memories"):
            raise MemoryError_(f"{given}: memory paths start with /memories.")
        rest = parts[2:]
        if any(p in ("..", ".") or "\x00" in p or len(p) > 255 for p in rest) or len(rest) > MAX_DEPTH:
            raise MemoryError_(f"{given}: not a path inside /memories.")
        return self._real_root().joinpath(*rest), "/".join((PREFIX, *rest))

    def _read(self, path: Path, shown: str) -> str:
        try:
            with pinned.opened(path) as fd:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise MemoryError_(f"{shown} is a folder, not a file.")
                return _decoded(pinned.read_all(fd))
        except FileNotFoundError as e:
            raise MemoryError_(f"{shown} does not exist.") from e

    def _write(self, path: Path, shown: str, text: str) -> None:
        data = text.encode("utf-8")
        if len(data) > MAX_FILE_BYTES:
            raise MemoryError_(
                f"{shown} would be {len(data):,} bytes; a memory file holds at most {MAX_FILE_BYTES:,}."
            )
        files, total = self._usage(exclude=path)
        if total + len(data) > MAX_TOTAL_BYTES:
            raise MemoryError_("The memory folder is full (10 MB); delete what is out of date first.")
        if files >= MAX_FILES and not path.exists():
            raise MemoryError_(
                f"The memory folder holds {MAX_FILES} files already; merge or delete some first."
            )
        pinned.replace(path, data, create_parents=True)

    def _usage(self, exclude: Path | None = None) -> tuple[int, int]:
        files = total = 0
        for folder, _dirs, names in os.walk(self._real_root()):
            for name in names:
                path = Path(folder, name)
                with contextlib.suppress(OSError):
                    st = path.lstat()
                    if stat.S_ISREG(st.st_mode) and path != exclude:
                        files, total = files + 1, total + st.st_size
        return files, total

    # -- commands ----------------------------------------------------------------------------------
    def _run(self, args: MemoryInput) -> ToolResult:
        if args.command == "rename":
            return self._rename(args)
        path, shown = self._path(args.path)
        if args.command == "view":
            return self._view(path, shown, args.view_range)
        if args.command == "create":
            if args.file_text is None:
                raise MemoryError_("create needs file_text.")
            existed = path.exists()
            self._write(path, shown, args.file_text)
            return ToolResult(f"{'Overwrote' if existed else 'Created'} {shown}.", summary=f"wrote {shown}")
        if args.command == "str_replace":
            if args.old_str is None or args.new_str is None:
                raise MemoryError_("str_replace needs old_str and new_str.")
            text = self._read(path, shown)
            count = text.count(args.old_str)
            if count != 1:
                raise MemoryError_(
                    f"old_str occurs {count} times in {shown}; it must occur exactly once."
                    if count
                    else f"old_str does not occur in {shown}."
                )
            self._write(path, shown, text.replace(args.old_str, args.new_str))
            return ToolResult(f"Edited {shown}.", summary=f"edited {shown}")
        if args.command == "insert":
            if args.insert_line is None or args.insert_text is None:
                raise MemoryError_("insert needs insert_line and insert_text.")
            lines = self._read(path, shown).split("\n")
            if args.insert_line > len(lines):
                raise MemoryError_(
                    f"{shown} has {len(lines)} lines; insert_line {args.insert_line} is past the end."
                )
            lines[args.insert_line : args.insert_line] = args.insert_text.rstrip("\n").split("\n")
            self._write(path, shown, "\n".join(lines))
            return ToolResult(
                f"Inserted into {shown} after line {args.insert_line}.", summary=f"edited {shown}"
            )
        return self._delete(path, shown)

    def _view(self, path: Path, shown: str, view_range: list[int] | None) -> ToolResult:
        try:
            fd = pinned.open_path(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            raise MemoryError_(f"{shown} does not exist.") from None
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISDIR(mode):
                return self._listing(fd, shown)
            if not stat.S_ISREG(mode):
                raise MemoryError_(f"{shown} is not a file.")
            text = _decoded(pinned.read_all(fd))
        finally:
            os.close(fd)
        lines = text.split("\n")
        first, last = 1, len(lines)
        if view_range:
            if len(view_range) != 2:
                raise MemoryError_("view_range is [first line, last line].")
            first, last = view_range[0], len(lines) if view_range[1] == -1 else view_range[1]
            if not 1 <= first <= last <= len(lines):
                raise MemoryError_(
                    f"{shown} has {len(lines)} lines; view_range {view_range} is outside them."
                )
        shown_lines = "\n".join(f"{n:6}\t{lines[n - 1]}" for n in range(first, last + 1))
        return ToolResult(shown_lines, summary=f"{last - first + 1} lines of {shown}")

    @staticmethod
    def _listing(fd: int, shown: str) -> ToolResult:
        """The files of the folder open at `fd` and of its subfolders, read through descriptors:
        links are listed as nothing and never entered."""
        entries = []
        for folder, dirs, names, folder_fd in os.fwalk(".", dir_fd=fd, follow_symlinks=False):
            dirs.sort()
            depth = len(Path(folder).parts) - 1
            for name in sorted(names):
                st = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and depth <= 1:
                    relative = Path(folder, name).as_posix().removeprefix("./")
                    entries.append(f"{st.st_size:>8,}  {shown}/{relative}")
        if not entries:
            return ToolResult(f"{shown} is empty.", summary="empty")
        return ToolResult(f"Files in {shown}:\n" + "\n".join(entries), summary=f"{len(entries)} files")

    def _delete(self, path: Path, shown: str) -> ToolResult:
        if shown == PREFIX:
            raise MemoryError_("/memories itself cannot be deleted; delete the files in it.")
        parent = pinned.open_dir(path.parent)
        try:
            st = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(path.name, dir_fd=parent)
            else:
                os.unlink(path.name, dir_fd=parent)
        except FileNotFoundError as e:
            raise MemoryError_(f"{shown} does not exist.") from e
        finally:
            os.close(parent)
        return ToolResult(f"Deleted {shown}.", summary=f"deleted {shown}")

    def _rename(self, args: MemoryInput) -> ToolResult:
        old, old_shown = self._path(args.old_path)
        new, new_shown = self._path(args.new_path)
        if PREFIX in (old_shown, new_shown):
            raise MemoryError_("/memories itself cannot be renamed.")
        if new.exists() or new.is_symlink():
            raise MemoryError_(f"{new_shown} exists already.")
        source = pinned.open_dir(old.parent)
        try:
            target = pinned.make_dirs(new.parent)
            try:
                os.rename(old.name, new.name, src_dir_fd=source, dst_dir_fd=target)
            except FileNotFoundError as e:
                raise MemoryError_(f"{old_shown} does not exist.") from e
            finally:
                os.close(target)
        finally:
            os.close(source)
        return ToolResult(f"Renamed {old_shown} to {new_shown}.", summary=f"renamed {old_shown}")
