"""Where a project begins: the git root above the working directory, and the folders in between."""

from __future__ import annotations

from pathlib import Path


def git_root(cwd: Path) -> Path | None:
    """The nearest folder at or above `cwd` that holds `.git` (a folder, or a file for worktrees)."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def project_dirs(cwd: Path) -> list[Path]:
    """`cwd` and each folder above it up to the git root, nearest first; just `cwd` outside git."""
    cwd = cwd.resolve()
    root = git_root(cwd)
    if root is None:
        return [cwd]
    out = [cwd]
    for folder in cwd.parents:
        if not folder.is_relative_to(root):
            break
        out.append(folder)
    return out
