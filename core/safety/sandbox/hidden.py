"""Which credential locations exist (and which are folders), for the mounts that hide them in each
command's sandbox: hundreds of places (every home's `.ssh`, `.aws`, …), looked at per command.

They sit in a few dozen folders, so each folder is looked at instead, and its locations only when it
changed: a location cannot appear, go or change kind without an entry of its folder being made,
removed or renamed, which moves the folder's ctime (no process can set it back). As with the
settings index, a folder whose ctime was too recent to trust when it was looked at is looked at in
full again next time.
"""

from __future__ import annotations

import os
import stat
import time

from piton.core.records import record
from piton.core.safety.policy import unprivileged_reaches
from piton.core.safety.settings_index import SETTLED_NS


@record(frozen=True)
class _Folder:
    status: tuple[int, int, int]  # st_dev, st_ino, st_ctime_ns
    read_ns: int
    folders: frozenset[str]  # its locations that are folders (followed, as the mounts follow them)
    files: frozenset[str]  # and those that are anything else


def _kind(path: str) -> bool | None:
    """True for a folder, False for anything else, None when absent or out of Piton's reach (a
    folder it cannot even look into, another user's, needs no hiding)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return None


class Present:
    """The locations of `targets` (real paths) that exist now, in their order, each with whether it
    is a folder."""

    def __init__(self, targets: list[str]) -> None:
        self.targets = list(dict.fromkeys(targets))
        self.by_folder: dict[str, list[str]] = {}
        for target in self.targets:
            self.by_folder.setdefault(os.path.dirname(target), []).append(target)
        self.seen: dict[str, _Folder] = {}

    def __call__(self) -> list[tuple[str, bool]]:
        folders: set[str] = set()
        files: set[str] = set()
        for folder, targets in self.by_folder.items():
            known = self._look(folder, targets)
            if known is not None:
                folders |= known.folders
                files |= known.files
        return [(t, t in folders) for t in self.targets if t in folders or t in files]

    def _look(self, folder: str, targets: list[str]) -> _Folder | None:
        read_ns = time.time_ns()
        try:
            st = os.stat(folder)
        except OSError:
            self.seen.pop(folder, None)
            return None  # none of its locations can exist (or be reached)
        if not unprivileged_reaches(folder):
            # root sees into another account's closed home; the sandbox cannot, so nothing there
            # needs hiding, and bubblewrap could not make the mount point for it anyway
            self.seen.pop(folder, None)
            return None
        status = (st.st_dev, st.st_ino, st.st_ctime_ns)
        known = self.seen.get(folder)
        if known is not None and known.status == status and status[2] < known.read_ns - SETTLED_NS:
            return known
        kinds = {t: _kind(t) for t in targets}
        known = _Folder(
            status,
            read_ns,
            frozenset(t for t, k in kinds.items() if k),
            frozenset(t for t, k in kinds.items() if k is False),
        )
        self.seen[folder] = known
        return known
