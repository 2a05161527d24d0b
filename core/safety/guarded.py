"""Which places the guard protects in each project root: what the sandbox binds read-only, pins in
place, or holds still for a command left running (settings files deeper in the tree are found by
`settings_index`).

Inside a writable project, git's hooks and config and the settings files must not change: a hook
runs at the user's next commit, a config can name a program for any git command, and settings grant
permissions. The same goes for a hooks folder `core.hooksPath` names and every config file an
`include` pulls in. The sandbox binds the existing ones read-only and pins the folders that hold
them, every folder between them and the project root, and the git directory itself, in place (a
mount point cannot be renamed, but a folder above one can, and a new one made under the old name).
What it cannot pin is kept around each command by `guard`; what a command left running could change
is held still by `lasting`. Only queries here: nothing is changed on disk.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from piton.core.safety import gitconfig
from piton.core.safety.gitconfig import git_dirs
from piton.core.safety.policy import SETTINGS_DIRS, SETTINGS_FILES, SandboxPolicy, real
from piton.core.safety.settings_index import settings_below

# What of a git directory the sandbox binds read-only (and the guard keeps) where it exists
GIT_PROTECTED = ("hooks", "config", "commondir", "modules", "worktrees", "config.worktree")
GUARDED_DIRS = (".git", *SETTINGS_DIRS)


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
            paths += [git_dir / name for name in GIT_PROTECTED]
        paths += [root / d / f for d in SETTINGS_DIRS for f in SETTINGS_FILES]
    return paths + code_paths(policy)


def _between(path: Path, roots: tuple[Path, ...]) -> list[Path]:
    """The folders strictly between the root that holds `path` and `path`, outermost first."""
    for root in roots:
        if path != root and path.is_relative_to(root):
            parts = path.relative_to(root).parts[:-1]
            return [root.joinpath(*parts[: i + 1]) for i in range(len(parts))]
    return []


def _plain_folder(path: Path) -> bool:
    """A folder, not a symlink to one (one lstat)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def pinned_dirs(
    policy: SandboxPolicy, protected: list[Path] | None = None, also: Sequence[Path] = ()
) -> list[Path]:
    """Folders the sandbox binds onto themselves in a writable root, outermost first, so that no
    command can rename or replace them: `.git`, `.piton` and `.claude` at each root (or the folder a
    symlink there leads to), each git directory (which a `.git` symlink or gitfile may place
    elsewhere in the project), and every folder between a root and what is protected below it (a
    renamed `.husky` would let a new `.husky/_` take the hooks folder's place)."""
    if policy.mode != "workspace-write":
        return []
    folders: list[Path] = []

    def add(folder: Path) -> None:
        if folder not in folders and _plain_folder(folder) and policy.in_roots(folder):
            folders.append(folder)

    for root in policy.roots:
        for name in GUARDED_DIRS:
            add(real(root / name))
        for git_dir in git_dirs(root):
            add(git_dir)
    below = protected if protected is not None else protected_paths(policy)
    for path in [*folders, *(real(p) for p in below), *also]:
        for folder in _between(path, policy.roots):
            add(folder)
    return sorted(folders, key=lambda f: len(f.parts))


def held_places(policy: SandboxPolicy) -> list[Path]:
    """What a command left running may not change at all, near the roots: each root's `.git`,
    `.claude` and `.piton` folders whole, each git directory in the roots, the hooks folders and
    included config files there, and where a root's settings files really are when they are
    symlinks into the project. Those missing are made by `hold` first."""
    if policy.mode != "workspace-write":
        return []
    places: list[Path] = []
    for root in policy.roots:
        folders = [root / name for name in GUARDED_DIRS]
        places += [f for f in folders if f.is_dir() and not f.is_symlink()]
        places += [d for d in git_dirs(root) if d.is_dir() and policy.in_roots(d)]
        for name in SETTINGS_DIRS:
            for file in SETTINGS_FILES:
                target = real(root / name / file)
                if target != root / name / file and policy.in_roots(target) and target.exists():
                    places.append(target)
    places += [p for p in code_paths(policy) if os.path.lexists(p)]
    return list(dict.fromkeys(places))


def lasting_read_only(policy: SandboxPolicy) -> list[Path]:
    """`held_places`, and every folder below the roots that holds settings files (or that a
    settings folder's symlink leads to): the files there keep their content while it runs."""
    if policy.mode != "workspace-write":
        return []
    places = held_places(policy)
    for path in sorted(settings_below(policy.roots)):
        folder = real(path) if path.is_symlink() else path.parent
        if folder.is_dir() and policy.in_roots(folder) and folder not in places:
            places.append(folder)
    return places
