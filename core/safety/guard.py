"""Keeping what would run code outside the sandbox, or widen it, as it was around each command.

Inside a writable project, git's hooks and config and the settings files must not change: a hook
runs at the user's next commit, a config can name a program for any git command, and settings grant
permissions. The same goes for a hooks folder `core.hooksPath` names and every config file an
`include` pulls in. The sandbox binds the existing ones read-only and pins the folders that hold
them, and the git directory itself, in place (a mount point cannot be renamed). What it cannot pin —
files that do not exist yet, symlinks — is snapshotted, content and all, before each command and
put back after it. Commands that can write run one at a time (the session's command lock), so one
command's snapshot never sees another's half-done work.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from piton.core.safety import gitconfig, pinned
from piton.core.safety.gitconfig import git_dirs
from piton.core.safety.policy import SETTINGS_DIRS, SETTINGS_FILES, SandboxPolicy, real

_GIT_PROTECTED = ("hooks", "config", "commondir", "modules", "worktrees", "config.worktree")
GUARDED_DIRS = (".git", *SETTINGS_DIRS)
_LEFT_TO_GIT = ("modules", "worktrees")  # folders git itself creates: pinned when present, never removed
_MAX_KEPT_BYTES = 1 << 20  # guarded files are small; a bigger one is compared by its status only


def code_paths(policy: SandboxPolicy) -> list[Path]:
    """Hooks folders and included git config files that lie in a project root."""
    if policy.mode != "workspace-write":
        return []
    return [p for p in gitconfig.code_paths(policy.roots, policy.home) if policy.in_roots(p)]


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
    return paths + code_paths(policy)


def pinned_dirs(policy: SandboxPolicy) -> list[Path]:
    """Folders the sandbox binds onto themselves in a writable root, so that no command can rename
    or replace them: `.git`, `.piton` and `.claude` at each root, and each git directory (which a
    `.git` symlink or gitfile may place elsewhere in the project)."""
    if policy.mode != "workspace-write":
        return []
    folders: list[Path] = []
    for root in policy.roots:
        folders += [
            root / name for name in GUARDED_DIRS if (root / name).is_dir() and not (root / name).is_symlink()
        ]
        folders += [d for d in git_dirs(root) if d.is_dir() and policy.in_roots(d) and d not in folders]
    return folders


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
    content: bytes | None = None  # a file's bytes (None for a big one, compared by `status`)
    status: str = ""


def _state(path: Path) -> _State:
    try:
        st = path.lstat()
    except OSError:
        return _State("missing")
    if stat.S_ISLNK(st.st_mode):
        return _State("symlink", os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return _State("dir")
    status = f"{st.st_mode}:{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
    if st.st_size > _MAX_KEPT_BYTES or not stat.S_ISREG(st.st_mode):
        return _State("file", status=status)
    try:
        with pinned.opened(real(path.parent) / path.name) as fd:
            return _State("file", content=pinned.read_all(fd))
    except OSError:
        return _State("file", status=status)


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
    deep_settings: set[Path] = field(default_factory=set)  # settings files below the roots
    roots: tuple[Path, ...] = ()  # where deep_settings was looked for (none: not looked)
    taken_ns: int = 0


# The settings files below each set of roots as the last command left them: one walk per command
# (after it) instead of two. Only commands can add one (the file tools refuse to write them), and
# a file someone else adds meanwhile is told apart by its change time.
_known_deep: dict[tuple[Path, ...], set[Path]] = {}


def deep_settings(roots: tuple[Path, ...]) -> set[Path]:
    """The settings files anywhere below the project roots (`sub/.piton/settings.json`): a session
    started in that folder would read them. One pass over the tree's folders, `.git` skipped."""
    found: set[Path] = set()
    stack = list(roots)
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                if not entry.is_dir(follow_symlinks=False) or entry.name == ".git":
                    continue
                if entry.name in SETTINGS_DIRS and folder not in roots:
                    found.update(p for f in SETTINGS_FILES if os.path.lexists(p := Path(entry.path) / f))
                stack.append(Path(entry.path))
    return found


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
    for path in code_paths(policy):
        snap.states.setdefault(path, _state(path))
    snap.roots = policy.roots
    snap.taken_ns = time.time_ns()
    if policy.roots not in _known_deep:
        _known_deep[policy.roots] = deep_settings(policy.roots)
    snap.deep_settings = set(_known_deep[policy.roots])
    for path in sorted(snap.deep_settings):
        snap.states.setdefault(path, _state(path))
    return snap


def _changed_since(path: Path, ns: int) -> bool:
    try:
        return path.lstat().st_ctime_ns >= ns - 10_000_000  # file systems keep coarse times
    except OSError:
        return False


def restore(before: Snapshot) -> list[str]:
    """Put back each guarded path a command changed; say what was done."""
    notes = []
    if before.roots:
        found = deep_settings(before.roots)
        for path in sorted(found - before.deep_settings):
            if _changed_since(path, before.taken_ns) and _parents_unchanged(path):
                _remove(path)
                found.discard(path)
                notes.append(f"(Removed {path}: the command created it, and settings files are protected.)")
        _known_deep[before.roots] = found
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
        elif was.kind == "file" and was.content is not None and now.kind != "dir":
            if now.kind == "symlink":
                _remove(path)
            with contextlib.suppress(OSError):
                pinned.replace(path, was.content)
                notes.append(f"(Restored {path}: the command changed it, and it is protected from changes.)")
    return notes
