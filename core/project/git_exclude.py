"""Keeping a file of the user's own (`.piton/settings.local.json`) out of the project's commits: its
path is added to the repository's `.git/info/exclude`, which git reads and never commits, so the
project's `.gitignore` is left alone. Done with file operations only, never by running git in the
project (its configuration could start programs)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

_LINE_LIMIT = 1 << 20  # an exclude file larger than this is left alone


def repository_root(folder: Path) -> Path | None:
    """The folder holding the `.git` directory above or at `folder` (a worktree's `.git` file aside)."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").is_dir() and not (candidate / ".git").is_symlink():
            return candidate
    return None


def exclude_from_git(path: Path) -> bool:
    """Add `path` (inside a repository) to its `info/exclude`, unless that or the root's
    `.gitignore` names it already. Whether a line was added."""
    root = repository_root(path.parent)
    if root is None:
        return False
    pattern = "/" + path.relative_to(root).as_posix()
    for listed in (root / ".gitignore", root / ".git" / "info" / "exclude"):
        try:
            if listed.stat().st_size < _LINE_LIMIT and pattern.lstrip("/") in listed.read_text(
                "utf-8", "replace"
            ):
                return False
        except OSError:
            continue
    fd = _open_exclude(root)
    if fd is None:
        return False
    try:
        size = os.fstat(fd).st_size
        ends_in_newline = size == 0 or os.pread(fd, 1, size - 1) == b"\n"
        os.write(fd, ("" if ends_in_newline else "\n").encode() + f"{pattern}\n".encode())
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def _open_exclude(root: Path) -> int | None:
    """`.git/info/exclude` opened to append, each step through the descriptor of the folder before it
    and never through a link: the project's files (the model's writes) could make `.git/info` a
    link to a folder elsewhere, where this would then write as the user."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        git = os.open(root / ".git", flags)
    except OSError:
        return None
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir("info", 0o755, dir_fd=git)
        info = os.open("info", flags, dir_fd=git)
    except OSError:
        return None
    finally:
        os.close(git)
    try:
        return os.open("exclude", os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644, dir_fd=info)
    except OSError:
        return None
    finally:
        os.close(info)
