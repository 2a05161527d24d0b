"""Keeping what would run code outside the sandbox, or widen it, as it was around each command.

Inside a writable project, git's hooks and config and the settings files must not change: a hook
runs at the user's next commit, a config can name a program for any git command, and settings grant
permissions. The same goes for a hooks folder `core.hooksPath` names and every config file an
`include` pulls in. The sandbox binds the existing ones read-only and pins the folders that hold
them, every folder between them and the project root, and the git directory itself, in place (a
mount point cannot be renamed, but a folder above one can, and a new one made under the old name).
What it cannot pin — files that do not exist yet, symlinks — is snapshotted, content and all, before
each command and put back after it. Commands that can write run one at a time (the session's command
lock), so one command's snapshot never sees another's half-done work.

A command left running in the background (`lasting`) runs beside the others, so nothing can be
snapshotted around it: for it the guarded folders, and every folder holding settings files deeper
in the tree, are read-only as a whole. Those missing are made empty first (`hold`) so that they can
be, and stay: removing a folder that is a mount point in another sandbox (another session's) would
silently unmount it there. New settings files deeper in the tree are swept instead (`sweep`). Every
removal and restore goes through a descriptor of the real parent folder, never a path a running
command could turn into a symlink meanwhile.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from piton.core.safety import gitconfig, pinned
from piton.core.safety.gitconfig import git_dirs
from piton.core.safety.policy import SETTINGS_DIRS, SETTINGS_FILES, SandboxPolicy, is_settings_dir, real

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


def _between(path: Path, roots: tuple[Path, ...]) -> list[Path]:
    """The folders strictly between the root that holds `path` and `path`, outermost first."""
    for root in roots:
        if path != root and path.is_relative_to(root):
            parts = path.relative_to(root).parts[:-1]
            return [root.joinpath(*parts[: i + 1]) for i in range(len(parts))]
    return []


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
        if folder not in folders and folder.is_dir() and not folder.is_symlink() and policy.in_roots(folder):
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


class GuardError(Exception):
    """A command cannot be left running: a guarded place is not one the sandbox can hold still."""


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
    for path in sorted(deep_settings(policy.roots)):
        folder = real(path) if path.is_symlink() else path.parent
        if folder.is_dir() and policy.in_roots(folder) and folder not in places:
            places.append(folder)
    return places


def _make(path: Path, folder: bool) -> None:
    """Make `path` empty (a folder or a file), and the folders above it that are missing, each
    through its parent's descriptor."""
    missing: list[Path] = []
    current = path
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    for place in reversed(missing):
        with contextlib.suppress(FileExistsError), _parent_fd(place) as fd:
            if place != path or folder:
                os.mkdir(place.name, 0o755, dir_fd=fd)
            else:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                os.close(os.open(place.name, flags, 0o644, dir_fd=fd))


def hold(policy: SandboxPolicy) -> None:
    """Make the guarded places a lasting command's sandbox binds read-only but that do not exist
    yet: `.claude` and `.piton` at each root, and the hooks folders and included configs the git
    config names inside the roots. They stay (empty, they change nothing). Refuses (`GuardError`)
    where a root's guarded name, or a root's settings file, is a symlink that leads nowhere or not
    a folder: the command could replace it or create what it leads to, and no mount can stop that."""
    if policy.mode != "workspace-write":
        return
    for root in policy.roots:
        for name in GUARDED_DIRS:
            path = root / name
            if path.is_symlink() or (os.path.lexists(path) and not path.is_dir() and name != ".git"):
                what = "a symbolic link" if path.is_symlink() else "not a folder"
                raise GuardError(
                    f"{path} is {what}, which a command left running could replace; run the command "
                    "in the foreground instead"
                )
            for file in SETTINGS_FILES if name in SETTINGS_DIRS else ():
                if (path / file).is_symlink() and not (path / file).exists():
                    raise GuardError(
                        f"{path / file} is a symbolic link to a file that does not exist, which a "
                        "command left running could create; run the command in the foreground instead"
                    )
    try:
        for root in policy.roots:
            for name in SETTINGS_DIRS:
                if not os.path.lexists(root / name):
                    _make(root / name, folder=True)
        for path, folder in gitconfig.code_places(policy.roots, policy.home):
            if policy.in_roots(path) and not os.path.lexists(path):
                _make(path, folder)
    except OSError as e:
        raise GuardError(f"cannot prepare the protected folders for a command left running: {e}") from e


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
    try:  # the path is real: anything found on the way is a swap, and its content is not kept
        with pinned.opened(path) as fd:
            return _State("file", content=pinned.read_all(fd))
    except OSError:
        return _State("file", status=status)


@contextlib.contextmanager
def _parent_fd(path: Path) -> Iterator[int]:
    """A descriptor of the folder holding the real path `path`, opened with no symlink followed."""
    fd = pinned.open_dir(path.parent)
    try:
        yield fd
    finally:
        os.close(fd)


def _remove(path: Path, *, unlock: bool = False) -> bool:
    """Remove the real path `path` (a folder with what it holds) through its parent's descriptor;
    with `unlock`, a parent folder made read-only (by the command that planted it) is made
    writable again first."""
    try:
        with _parent_fd(path) as fd:
            if stat.S_ISDIR(os.stat(path.name, dir_fd=fd, follow_symlinks=False).st_mode):
                shutil.rmtree(path.name, dir_fd=fd)
            else:
                try:
                    os.unlink(path.name, dir_fd=fd)
                except PermissionError:
                    if not unlock:
                        raise
                    with pinned.opened(path.parent, os.O_RDONLY | os.O_DIRECTORY) as folder:
                        os.fchmod(folder, os.fstat(folder).st_mode | stat.S_IRWXU)
                    os.unlink(path.name, dir_fd=fd)
    except FileNotFoundError:
        return True  # gone already
    except OSError:
        return False
    return True


def _empty(path: Path) -> bool:
    """Remove what the real folder `path` holds, keeping the folder (another sandbox may be holding
    it as a mount point: removing it would unmount it there)."""
    try:
        with pinned.opened(path, os.O_RDONLY | os.O_DIRECTORY) as fd:
            for name in os.listdir(fd):
                if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    shutil.rmtree(name, dir_fd=fd)
                else:
                    os.unlink(name, dir_fd=fd)
    except OSError:
        return False
    return True


def _parents_unchanged(path: Path) -> bool:
    """Whether every folder above `path` is still a real folder (project roots are real paths), so
    that removing `path` cannot follow a symlink out of the project."""
    return real(path.parent) == path.parent


@dataclass(slots=True)
class Snapshot:
    states: dict[Path, _State] = field(default_factory=dict)  # shallow paths first
    deep_settings: set[Path] = field(default_factory=set)  # settings files below the roots
    roots: tuple[Path, ...] = ()  # where deep_settings was looked for (none: not looked)
    placeable: set[Path] = field(default_factory=set)  # hooks folders and configs a placeholder may fill
    taken_ns: int = 0


# The settings files below each set of roots as the last command left them: one walk per command
# (after it) instead of two. Only commands can add one (the file tools refuse to write them), and
# a file someone else adds meanwhile is told apart by its change time.
_known_deep: dict[tuple[Path, ...], set[Path]] = {}


def deep_settings(roots: tuple[Path, ...]) -> set[Path]:
    """The settings files anywhere below the project roots (`sub/.piton/settings.json`): a session
    started in that folder would read them. A settings folder that is a symlink counts as the
    symlink itself when a settings file lies where it leads. One pass over the tree's folders,
    `.git` skipped."""
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
                settings = folder not in roots and is_settings_dir(entry.name)
                if settings and entry.is_symlink():
                    if any(os.path.exists(Path(entry.path) / f) for f in SETTINGS_FILES):
                        found.add(Path(entry.path))
                    continue
                if not entry.is_dir(follow_symlinks=False) or entry.name == ".git":
                    continue
                if settings:
                    found.update(p for f in SETTINGS_FILES if os.path.lexists(p := Path(entry.path) / f))
                stack.append(Path(entry.path))
    return found


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
            paths += [git_dir / name for name in _GIT_PROTECTED if name not in _LEFT_TO_GIT]
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


def inodes(paths: set[Path]) -> dict[Path, int]:
    """Which file each path is, to tell it from a new one put under its name later."""
    found = {}
    for path in paths:
        with contextlib.suppress(OSError):
            found[path] = path.lstat().st_ino
    return found


def _replaced(path: Path, was: Mapping[Path, int], since_ns: int) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    return st.st_ino != was.get(path, st.st_ino) or st.st_ctime_ns > since_ns


def sweep(
    roots: tuple[Path, ...], known: set[Path], since_ns: int, *, replaced: Mapping[Path, int] | None = None
) -> tuple[set[Path], list[str]]:
    """Remove the settings files below `roots` that are not in `known` and were made or changed
    since `since_ns`, and with `replaced` (the known files' inodes), known ones since replaced: a
    command left running cannot change one in place, so that is a new file under the old name, the
    folder above renamed away. Return the files now known (a new one that could not be removed is
    not: it is tried again next time) and what was done."""
    found = deep_settings(roots)
    notes = []
    for path in sorted(found):
        if path in known and (replaced is None or not _replaced(path, replaced, since_ns)):
            continue
        if path not in known and not _changed_since(path, since_ns):
            continue  # there before: the user's
        if _parents_unchanged(path) and _remove(path, unlock=True):
            notes.append(f"(Removed {path}: the command created it, and settings files are protected.)")
        else:
            notes.append(f"(Could not remove {path}, which a command created: check it before you trust it.)")
        found.discard(path)
    return found, notes


def _clear_placeable(path: Path, now: _State) -> str | None:
    """A hooks folder or included config that was missing and now exists: what it holds goes, an
    empty one stays (it may be a placeholder another sandbox holds as a mount point). What was
    done, if anything."""
    if now.kind == "dir":
        try:
            holds = bool(os.listdir(path))
        except OSError:
            return None
        if holds and _empty(path):
            return f"(Emptied {path}: the command wrote there, and it is protected from changes.)"
        return None
    if now.kind == "file" and now.content == b"":
        return None
    if _remove(path):
        return f"(Removed {path}: the command created it, and it is protected from changes.)"
    return None


def restore(before: Snapshot) -> list[str]:
    """Put back each guarded path a command changed; say what was done."""
    notes: list[str] = []
    if before.roots:
        found, notes = sweep(before.roots, before.deep_settings, before.taken_ns)
        _known_deep[before.roots] = found
    for path, was in before.states.items():
        now = _state(path)
        if now == was:
            continue
        if not _parents_unchanged(path):
            continue  # a folder above it changed: that folder's own entry puts it back
        if was.kind == "missing" and now.kind == "dir" and path.name in SETTINGS_DIRS:
            continue  # a new .piton or .claude folder may hold skills; the settings files are watched
        if was.kind == "missing" and path in before.placeable:
            notes += [note] if (note := _clear_placeable(path, now)) else []
        elif was.kind == "missing":
            if _remove(path):
                notes.append(f"(Removed {path}: the command created it, and it is protected from changes.)")
        elif was.kind == "symlink":
            _remove(path)
            with contextlib.suppress(OSError), _parent_fd(path) as fd:
                os.symlink(was.link, path.name, dir_fd=fd)
                notes.append(f"(Restored {path} -> {was.link}: it is protected from changes.)")
        elif was.kind == "file" and was.content is not None and now.kind != "dir":
            if now.kind == "symlink":
                _remove(path)
            with contextlib.suppress(OSError):
                pinned.replace(path, was.content)
                notes.append(f"(Restored {path}: the command changed it, and it is protected from changes.)")
    return notes
