"""The settings files anywhere below the project roots (`sub/.piton/settings.json`), which a session
started in that folder would read: found by one walk over each root, then kept current by reading
again only the folders that changed, so that a check costs what changed rather than what exists.

Which folders changed, the kernel says: each folder read gets an inotify watch (`inotify`), made
through a descriptor of the folder before its entries are listed, so every change after the listing
is an event. A folder that cannot be watched (no inotify, the watch allowance spent, a folder that
cannot be read) is checked by its change time instead, one `lstat` per check: a folder's ctime moves
whenever an entry is made, removed or renamed in it, and no process can set it back (the
modification time can be: `touch -d`). File systems stamp times from a coarse clock (a tick; a
second or two on some), so such a folder whose ctime was recent when read is read again next time.
When events were lost (the kernel's queue overflowed) or a folder was renamed (every path below it
changed), every folder is checked by its identity and, unwatched, its change time.

A settings folder that is a symlink is a finding when a settings file lies where it leads; where it
leads can change without its own folder changing, so those few links are looked through at every
check. `.git` folders and symlinked folders are not entered.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import field
from pathlib import Path

from piton.core.records import record
from piton.core.safety import inotify
from piton.core.safety.policy import SETTINGS_FILES, is_settings_dir

SETTLED_NS = 2_000_000_000  # above the coarsest timestamp granularity of a file system (FAT: 2 s)
_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# paths below a folder moved, or events lost on the way: every folder is checked
_RENAMED = inotify.IN_MOVE_SELF | inotify.IN_UNMOUNT


@record(frozen=True)
class _Folder:
    ident: tuple[int, int]  # st_dev, st_ino: the same folder, not a new one under its name
    ctime_ns: int
    read_ns: int  # the clock just before the folder was looked at
    files: tuple[str, ...]  # in a settings folder: the settings files there
    links: tuple[str, ...]  # entries that are symlinks named like a settings folder
    wd: int | None  # its inotify watch; None: checked by its change time

    def settled(self, st: os.stat_result) -> bool:
        """Whether an unwatched folder holds what it held when read: same ctime, and old enough then
        that a change since would have moved it."""
        return st.st_ctime_ns == self.ctime_ns and self.ctime_ns < self.read_ns - SETTLED_NS


# One lock for every index and the process's inotify instance (the guard checks from the event loop,
# the guard of commands left running from worker threads).
_lock = threading.Lock()
# which folders of which indexes each watch is on (one folder may be in two indexes, of nested roots)
_owners: dict[int, set[tuple[SettingsIndex, str]]] = {}


@record(eq=False)
class SettingsIndex:
    """The folders below one root as last read, and what of the settings they hold. `refresh`
    brings it up to date; `found` says what it holds. `watch=False` checks every folder by its
    change time. Callers hold `_lock` (`settings_below` does)."""

    root: Path
    watch: bool = True
    folders: dict[str, _Folder] = field(default_factory=dict)
    marked: set[str] = field(default_factory=set)  # folders with settings files or links in them
    unwatched: set[str] = field(default_factory=set)
    pending: dict[str, int] = field(default_factory=dict)  # folders with events, and which
    lost: bool = False  # events were lost: every folder is checked by its change time

    def refresh(self) -> None:
        """Forget the folders gone, read again those that changed, walk those that are new."""
        pending, lost, self.pending, self.lost = self.pending, self.lost, {}, False
        everything = lost or any(_renamed(mask) for mask in pending.values())
        paths = list(self.folders) if everything else [*self.unwatched, *pending]
        changed = [path for path in dict.fromkeys(paths) if self._changed(path, path in pending, lost)]
        if str(self.root) not in self.folders:
            for path in list(self.folders):  # the root itself was replaced: start over
                self._forget(path)
            self._walk(str(self.root))
            return
        for path in changed:
            if path in self.folders:
                for child in self._read(path):
                    if child not in self.folders:
                        self._walk(child)

    def found(self, roots: tuple[Path, ...]) -> set[Path]:
        """The settings files below `roots` (not those of a root's own `.piton` or `.claude`), as of
        the last refresh, and each symlinked settings folder that now leads to one."""
        skip = {str(r) for r in roots}
        out: set[Path] = set()
        for path in self.marked:
            folder = self.folders[path]
            if folder.files and os.path.dirname(path) not in skip:
                out.update(Path(path, name) for name in folder.files)
            if folder.links and path not in skip:
                for link in folder.links:
                    if any(os.path.exists(os.path.join(path, link, f)) for f in SETTINGS_FILES):
                        out.add(Path(path, link))
        return out

    def _changed(self, path: str, evented: bool, lost: bool) -> bool:
        """Whether the folder at `path` must be read again (it had events; or, unwatched or with
        events lost, its ctime moved); one that is gone, or is another thing now, is forgotten (a new
        folder under its name is found through its parent, which changed)."""
        folder = self.folders.get(path)
        if folder is None:
            return False
        try:
            st = os.lstat(path)
        except OSError:
            self._forget(path)
            return False
        if not stat.S_ISDIR(st.st_mode) or (st.st_dev, st.st_ino) != folder.ident:
            self._forget(path)
            return False
        return evented or ((folder.wd is None or lost) and not folder.settled(st))

    def _forget(self, path: str) -> None:
        folder = self.folders.pop(path, None)
        self.marked.discard(path)
        self.unwatched.discard(path)
        self.pending.pop(path, None)
        if folder is not None:
            self._release(path, folder.wd)

    def _release(self, path: str, wd: int | None) -> None:
        """The folder at `path` no longer needs the watch `wd` (removed when no folder does)."""
        owners = _owners.get(wd) if wd is not None else None
        if wd is None or owners is None or (self, path) not in owners:
            return
        owners.discard((self, path))
        if not owners:
            del _owners[wd]
            if (watcher := inotify.watcher()) is not None:
                watcher.unwatch(wd)

    def _walk(self, top: str) -> None:
        stack = [top]
        while stack:
            stack.extend(self._read(stack.pop()))

    def _read(self, path: str) -> list[str]:
        """Record the folder at `path` and return the folders below it to enter. Its watch is made
        (or its status taken) before its entries are listed, so a change in between shows next time."""
        read_ns = time.time_ns()
        try:
            fd = os.open(path, _OPEN)
        except OSError:
            return self._unreadable(path, read_ns)
        try:
            st = os.fstat(fd)
            wd = self._watch(path, fd)
            children, links = _entries(path, fd)
            files: tuple[str, ...] = ()
            if is_settings_dir(os.path.basename(path)) and path != str(self.root):
                files = tuple(f for f in SETTINGS_FILES if _lexists(f, fd))
        finally:
            os.close(fd)
        self._record(path, _Folder((st.st_dev, st.st_ino), st.st_ctime_ns, read_ns, files, links, wd))
        return children

    def _unreadable(self, path: str, read_ns: int) -> list[str]:
        """A folder that cannot be opened (its mode) is kept by its change time; anything else
        (gone, a symlink, a file) is forgotten."""
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is None or not stat.S_ISDIR(st.st_mode):
            self._forget(path)
            return []
        if (old := self.folders.get(path)) is not None:
            self._release(path, old.wd)
        self._record(path, _Folder((st.st_dev, st.st_ino), st.st_ctime_ns, read_ns, (), (), None))
        return []

    def _watch(self, path: str, fd: int) -> int | None:
        watcher = inotify.watcher() if self.watch else None
        wd = watcher.watch(fd) if watcher is not None else None
        old = self.folders.get(path)
        if old is not None and old.wd != wd:
            self._release(path, old.wd)  # the folder there before was another one
        if wd is not None:
            _owners.setdefault(wd, set()).add((self, path))
        return wd

    def _record(self, path: str, folder: _Folder) -> None:
        self.folders[path] = folder
        for group, member in (
            (self.marked, bool(folder.files or folder.links)),
            (self.unwatched, folder.wd is None),
        ):
            if member:
                group.add(path)
            else:
                group.discard(path)


def _renamed(mask: int) -> bool:
    moved = inotify.IN_MOVED_FROM | inotify.IN_MOVED_TO
    return bool(mask & _RENAMED or (mask & inotify.IN_ISDIR and mask & moved))


def _entries(path: str, fd: int) -> tuple[list[str], tuple[str, ...]]:
    """The folders below (`.git` and symlinks not entered) and the symlinks named like a settings
    folder in the folder open at `fd`."""
    children: list[str] = []
    links: list[str] = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                if entry.is_symlink():
                    links += [entry.name] if is_settings_dir(entry.name) else []
                elif entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                    children.append(os.path.join(path, entry.name))
    except OSError:
        pass  # read again when it changes
    return children, tuple(links)


def _lexists(name: str, fd: int) -> bool:
    try:
        os.lstat(name, dir_fd=fd)
    except OSError:
        return False
    return True


def _take_events() -> None:
    """Hand the events since the last check to the folders they are about."""
    watcher = inotify.watcher()
    if watcher is None:
        return
    events, overflowed = watcher.read()
    if overflowed:
        for index in _indexes.values():
            index.lost = True
    for wd, mask, name in events:
        if not _relevant(mask, name):
            continue
        for index, path in _owners.get(wd, ()):
            index.pending[path] = index.pending.get(path, 0) | mask
        if mask & inotify.IN_IGNORED:  # the watch is gone: each folder that had it is read again
            _owners.pop(wd, None)


def _relevant(mask: int, name: str) -> bool:
    """Whether an event can change what a folder's record holds: anything about the folder itself
    (its mode: whether it can be read), a folder below made, removed or renamed, or an entry named
    like a settings folder (a symlink) or a settings file. Not files written, made or touched
    elsewhere (a build's churn), nor a subfolder's mode (its own watch, or its ctime, says that)."""
    if not name:
        return True
    if mask & inotify.IN_ISDIR:
        return not mask & inotify.IN_ATTRIB
    if mask & inotify.IN_ATTRIB:
        return False
    return is_settings_dir(name) or name.casefold() in SETTINGS_FILES


_indexes: dict[Path, SettingsIndex] = {}


def settings_below(roots: tuple[Path, ...]) -> set[Path]:
    """The settings files anywhere below `roots` (a symlinked settings folder counts as itself when
    a settings file lies where it leads), from each root's index: walked whole the first time,
    read again where it changed after that. Safe to call from several threads."""
    found: set[Path] = set()
    with _lock:
        _take_events()
        for root in roots:
            index = _indexes.setdefault(root, SettingsIndex(root))
            index.refresh()
            found |= index.found(roots)
    return found
