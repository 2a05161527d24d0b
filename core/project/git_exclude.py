"""Keeping a file of the user's own (`.piton/settings.local.json`) out of the project's commits: its
path is added to the repository's `.git/info/exclude`, which git reads and never commits, so the
project's `.gitignore` is left alone. Done with file operations only, never by running git in the
project (its configuration could start programs)."""

from __future__ import annotations

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
    info = root / ".git" / "info"
    try:
        info.mkdir(exist_ok=True)
        fd = os.open(info / "exclude", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        return False
    try:
        ends_in_newline = os.fstat(fd).st_size == 0 or (info / "exclude").read_bytes().endswith(b"\n")
        os.write(fd, ("" if ends_in_newline else "\n").encode() + f"{pattern}\n".encode())
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
