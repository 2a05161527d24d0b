"""Keeping what would run code outside the sandbox, or widen it, as it was around each command.

The sandbox binds the guarded places that exist read-only and pins the folders above them
(`guarded`). What it cannot pin — files that do not exist yet, symlinks — is snapshotted, content
and all, before each command and put back after it (`snapshot`, `restore`), through descriptors of
the real parent folders (`guard_fs`). Commands that can write run one at a time (the session's
command lock), so one command's snapshot never sees another's half-done work. A command left running
in the background cannot be snapshotted around: `lasting` guards it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from dataclasses import field
from pathlib import Path

from piton.core.records import record
from piton.core.safety import pinned
from piton.core.safety.gitconfig import git_dirs
from piton.core.safety.guard_fs import empty, parent_fd, parents_unchanged, remove, sweep
from piton.core.safety.guarded import GIT_PROTECTED, GUARDED_DIRS, code_paths
from piton.core.safety.policy import SETTINGS_DIRS, SETTINGS_FILES, SandboxPolicy, real
from piton.core.safety.settings_index import settings_below

_LEFT_TO_GIT = ("modules", "worktrees")  # folders git itself creates: pinned when present, never removed
_MAX_KEPT_BYTES = 1 << 20  # guarded files are small; a bigger one is compared by its status only


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


@record(frozen=True)
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
    try:  # the path is real: anything found on the way is a swap, and its content is not kept
        with pinned.opened(path) as fd:
            return _State("file", content=pinned.read_all(fd))
    except OSError:
        return _State("file", status=status)


@record
class Snapshot:
    states: dict[Path, _State] = field(default_factory=dict)  # shallow paths first
    deep_settings: set[Path] = field(default_factory=set)  # settings files below the roots
    roots: tuple[Path, ...] = ()  # where deep_settings was looked for (none: not looked)
    placeable: set[Path] = field(default_factory=set)  # hooks folders and configs a placeholder may fill
    taken_ns: int = 0


# The settings files below each set of roots as the last command left them: looked for once per
# command (after it), where the tree changed (`settings_index`). Only commands can add one (the file
# tools refuse to write them), and a file someone else adds meanwhile is told apart by its change time.
_known_deep: dict[tuple[Path, ...], set[Path]] = {}


def _settings_folder(root: Path, name: str, policy: SandboxPolicy) -> Path | None:
    """Where a root's `.claude` or `.piton` really is, if inside the roots (a symlink there may lead
    to a folder of the project: its settings files are the root's)."""
    folder = real(root / name)
    return folder if policy.in_roots(folder) else None


def snapshot(policy: SandboxPolicy) -> Snapshot:
    """The state of every guarded path (shallow ones first), taken before a command. Paths are
    taken as they really are (a symlinked `.claude` by its folder), so restoring never goes through
    a link."""
    snap = Snapshot()
    if policy.mode != "workspace-write":
        return snap
    for root in policy.roots:
        paths = [root / d for d in GUARDED_DIRS]
        if not os.path.lexists(root / ".git"):
            paths.remove(root / ".git")  # a repository the command creates is its own
        for git_dir in git_dirs(root):
            paths += [git_dir / name for name in GIT_PROTECTED if name not in _LEFT_TO_GIT]
        for name in SETTINGS_DIRS:
            folder = _settings_folder(root, name, policy)
            for file in [folder / f for f in SETTINGS_FILES] if folder is not None else []:
                paths.append(file)
                target = real(file)  # a settings file that is a symlink: where it leads, too
                if target != file and policy.in_roots(target):
                    paths.append(target)
        for path in paths:
            snap.states[path] = _state(path)
    for path in code_paths(policy):
        snap.states.setdefault(path, _state(path))
        snap.placeable.add(path)
    snap.roots = policy.roots
    snap.taken_ns = time.time_ns()
    if policy.roots not in _known_deep:
        _known_deep[policy.roots] = settings_below(policy.roots)
    snap.deep_settings = set(_known_deep[policy.roots])
    for path in sorted(snap.deep_settings):
        snap.states.setdefault(path, _state(path))
    return snap


def _clear_placeable(path: Path, now: _State) -> str | None:
    """A hooks folder or included config that was missing and now exists: what it holds goes, an
    empty one stays (it may be a placeholder another sandbox holds as a mount point). What was
    done, if anything."""
    if now.kind == "dir":
        try:
            holds = bool(os.listdir(path))
        except OSError:
            return None
        if holds and empty(path):
            return f"(Emptied {path}: the command wrote there, and it is protected from changes.)"
        return None
    if now.kind == "file" and now.content == b"":
        return None
    if remove(path):
        return f"(Removed {path}: the command created it, and it is protected from changes.)"
    return None


def restore(before: Snapshot) -> list[str]:
    """Put back each guarded path a command changed; say what was done."""
    notes: list[str] = []
    if before.roots:
        found, notes = sweep(settings_below(before.roots), before.deep_settings, before.taken_ns)
        _known_deep[before.roots] = found
    for path, was in before.states.items():
        now = _state(path)
        if now == was:
            continue
        if not parents_unchanged(path):
            continue  # a folder above it changed: that folder's own entry puts it back
        if was.kind == "missing" and now.kind == "dir" and path.name in SETTINGS_DIRS:
            continue  # a new .piton or .claude folder may hold skills; the settings files are watched
        if was.kind == "missing" and path in before.placeable:
            notes += [note] if (note := _clear_placeable(path, now)) else []
        elif was.kind == "missing":
            if remove(path):
                notes.append(f"(Removed {path}: the command created it, and it is protected from changes.)")
        elif was.kind == "symlink":
            remove(path)
            with contextlib.suppress(OSError), parent_fd(path) as fd:
                os.symlink(was.link, path.name, dir_fd=fd)
                notes.append(f"(Restored {path} -> {was.link}: it is protected from changes.)")
        elif was.kind == "file" and was.content is not None and now.kind != "dir":
            if now.kind == "symlink":
                remove(path)
            with contextlib.suppress(OSError):
                pinned.replace(path, was.content)
                notes.append(f"(Restored {path}: the command changed it, and it is protected from changes.)")
    return notes
