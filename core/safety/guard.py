"""Keeping what would run code outside the sandbox, or widen it, as it was around each command.

Inside a writable project, git's hooks and config and the settings files must not change: a hook
runs at the user's next commit, a config can name a program for any git command, and settings grant
permissions. The sandbox binds the existing ones read-only and pins the folders that hold them (a
mount point cannot be renamed). What it cannot pin — files that do not exist yet, symlinks — is
snapshotted before each command and put back after it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from piton.core.safety.policy import SETTINGS_DIRS, SETTINGS_FILES, SandboxPolicy, real

_GIT_PROTECTED = ("hooks", "config", "commondir", "modules", "worktrees", "config.worktree")
GUARDED_DIRS = (".git", *SETTINGS_DIRS)
_LEFT_TO_GIT = ("modules", "worktrees")  # folders git itself creates: pinned when present, never removed


def _gitfile_target(gitfile: Path) -> Path | None:
    """The directory a `.git` file (worktrees, submodules, --separate-git-dir) points to."""
    try:
        first = gitfile.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(first.removeprefix("gitdir:").strip())
    return real(target if target.is_absolute() else gitfile.parent / target)


def git_dirs(root: Path) -> list[Path]:
    """The git directories a repository at `root` uses: `.git` (a folder, a symlink or a gitfile's
    target) and the common directory it names."""
    dot_git = root / ".git"
    if dot_git.is_file():
        first = _gitfile_target(dot_git)
    elif dot_git.is_dir():
        first = real(dot_git)
    else:
        return []
    if first is None:
        return []
    dirs = [first]
    common = first / "commondir"
    with contextlib.suppress(OSError):
        if common.is_file():
            named = Path(common.read_text(encoding="utf-8", errors="replace").strip())
            dirs.append(real(named if named.is_absolute() else first / named))
    return dirs


def protected_paths(policy: SandboxPolicy) -> list[Path]:
    """What the sandbox binds read-only (where it exists) in each project root."""
    if policy.mode == "danger-full-access":
        return []
    paths: list[Path] = []
    for root in policy.roots:
        if (root / ".git").is_file():
            paths.append(root / ".git")  # the gitfile itself: which directory git uses
        for git_dir in git_dirs(root) or [root / ".git"]:
            paths += [git_dir / name for name in _GIT_PROTECTED]
        paths += [root / d / f for d in SETTINGS_DIRS for f in SETTINGS_FILES]
    return paths


def prepare(policy: SandboxPolicy) -> None:
    """Give each repository a hooks folder, so the sandbox can bind it read-only (a hooks folder a
    command created would be writable)."""
    if policy.mode != "workspace-write":
        return
    for root in policy.roots:
        for git_dir in git_dirs(root):
            hooks = git_dir / "hooks"
            if not os.path.lexists(hooks) and policy.in_roots(git_dir):
                with contextlib.suppress(OSError):
                    hooks.mkdir()


@dataclass(frozen=True, slots=True)
class _State:
    kind: str  # missing | symlink | file | dir
    link: str = ""


def _state(path: Path) -> _State:
    try:
        path.lstat()
    except OSError:
        return _State("missing")
    if os.path.islink(path):
        return _State("symlink", os.readlink(path))
    return _State("dir" if path.is_dir() else "file")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _parents_unchanged(path: Path) -> bool:
    """Whether every folder above `path` is still a real folder (project roots are real paths), so
    that removing `path` cannot follow a symlink out of the project."""
    return real(path.parent) == path.parent


@dataclass(slots=True)
class Snapshot:
    states: dict[Path, _State] = field(default_factory=dict)  # shallow paths first


def snapshot(policy: SandboxPolicy) -> Snapshot:
    """The state of every guarded path (shallow ones first), taken before a command."""
    snap = Snapshot()
    if policy.mode != "workspace-write":
        return snap
    for root in policy.roots:
        paths = [root / d for d in GUARDED_DIRS]
        if not os.path.lexists(root / ".git"):
            paths.remove(root / ".git")  # a repository the command creates is its own
        for git_dir in git_dirs(root):
            paths += [git_dir / name for name in _GIT_PROTECTED if name not in _LEFT_TO_GIT]
        paths += [root / d / f for d in SETTINGS_DIRS for f in SETTINGS_FILES]
        for path in paths:
            snap.states[path] = _state(path)
    return snap


def restore(before: Snapshot) -> list[str]:
    """Put back each guarded path a command changed; say what was done."""
    notes = []
    for path, was in before.states.items():
        now = _state(path)
        if now == was:
            continue
        if not _parents_unchanged(path):
            continue  # a folder above it changed: that folder's own entry puts it back
        if was.kind == "missing" and now.kind == "dir" and path.name in SETTINGS_DIRS:
            continue  # a new .piton or .claude folder may hold skills; the settings files are watched
        if was.kind == "missing":
            _remove(path)
            notes.append(f"(Removed {path}: the command created it, and it is protected from changes.)")
        elif was.kind == "symlink":
            _remove(path)
            with contextlib.suppress(OSError):
                path.symlink_to(was.link)
            notes.append(f"(Restored {path} -> {was.link}: it is protected from changes.)")
    return notes
