"""Changing guarded places on disk: every removal, restore and placeholder goes through a descriptor
of the real parent folder, never a path a running command could turn into a symlink meanwhile; and
the sweep that removes settings files planted below the project roots.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from piton.core.safety import pinned
from piton.core.safety.policy import SETTINGS_FILES, real


def make(path: Path, folder: bool) -> None:
    """Make `path` empty (a folder or a file), and the folders above it that are missing, each
    through its parent's descriptor."""
    missing: list[Path] = []
    current = path
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    for place in reversed(missing):
        with contextlib.suppress(FileExistsError), parent_fd(place) as fd:
            if place != path or folder:
                os.mkdir(place.name, 0o755, dir_fd=fd)
            else:
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
                os.close(os.open(place.name, flags, 0o644, dir_fd=fd))


@contextlib.contextmanager
def parent_fd(path: Path) -> Iterator[int]:
    """A descriptor of the folder holding the real path `path`, opened with no symlink followed."""
    fd = pinned.open_dir(path.parent)
    try:
        yield fd
    finally:
        os.close(fd)


def remove(path: Path, *, unlock: bool = False) -> bool:
    """Remove the real path `path` (a folder with what it holds) through its parent's descriptor;
    with `unlock`, a parent folder made read-only (by the command that planted it) is made
    writable again first."""
    try:
        with parent_fd(path) as fd:
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


def empty(path: Path) -> bool:
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


def parents_unchanged(path: Path) -> bool:
    """Whether every folder above `path` is still a real folder (project roots are real paths), so
    that removing `path` cannot follow a symlink out of the project."""
    return real(path.parent) == path.parent


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
    found: set[Path], known: set[Path], since_ns: int, *, replaced: Mapping[Path, int] | None = None
) -> tuple[set[Path], list[str]]:
    """Of the settings files `found` below the roots (`settings_index.settings_below`) and the hook
    frameworks' files at the roots (`lasting.framework_files`), remove those
    not in `known` that were made or changed since `since_ns`, and with `replaced` (the known files'
    inodes), known ones since replaced: a command left running cannot change one in place, so that
    is a new file under the old name, the folder above renamed away. Return the files now known (a
    new one that could not be removed is not: it is tried again next time) and what was done."""
    found = set(found)
    notes = []
    for path in sorted(found):
        if path in known and (replaced is None or not _replaced(path, replaced, since_ns)):
            continue
        if path not in known and not _changed_since(path, since_ns):
            continue  # there before: the user's
        if parents_unchanged(path) and remove(path, unlock=True):
            why = "settings files are" if path.name in SETTINGS_FILES else "what a git hook runs is"
            notes.append(f"(Removed {path}: the command created it, and {why} protected.)")
        else:
            notes.append(f"(Could not remove {path}, which a command created: check it before you trust it.)")
        found.discard(path)
    return found, notes
