"""Guarding what commands left running could change: the places they may not touch made ready
before one starts (`hold`), and, while any that can write runs, the settings files they plant below
the project roots swept away (`LastingGuard`).

A command left running in the background runs beside the others, so nothing can be snapshotted
around it (`guard`): for it the guarded folders, and every folder holding settings files deeper in
the tree, are read-only as a whole (`guarded.lasting_read_only`). Those missing are made empty
first so that they can be, and stay: removing a folder that is a mount point in another sandbox
(another session's) would silently unmount it there. New settings files deeper in the tree are swept
instead, every few seconds and when each command ends.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

from piton.core.safety import gitconfig
from piton.core.safety.guard_fs import inodes, make, sweep
from piton.core.safety.guarded import GUARDED_DIRS, held_places
from piton.core.safety.policy import SETTINGS_DIRS, SETTINGS_FILES, SandboxPolicy
from piton.core.safety.settings_index import settings_below


class GuardError(Exception):
    """A command cannot be left running: a guarded place is not one the sandbox can hold still."""


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
                    make(root / name, folder=True)
        for path, folder in gitconfig.code_places(policy.roots, policy.home):
            if policy.in_roots(path) and not os.path.lexists(path):
                make(path, folder)
    except OSError as e:
        raise GuardError(f"cannot prepare the protected folders for a command left running: {e}") from e


def framework_files(roots: tuple[Path, ...]) -> set[Path]:
    """The git-hook frameworks' configuration files at the roots that exist. A command left running
    cannot change one that existed when it started (it is held read-only), but it can create one."""
    return {
        p for root in roots for name in gitconfig.HOOK_FRAMEWORK_FILES if os.path.lexists(p := root / name)
    }


def _watched(roots: tuple[Path, ...]) -> set[Path]:
    """What the sweep removes when a command left running made it: settings files below the roots
    and hook frameworks' files at them."""
    return settings_below(roots) | framework_files(roots)


class LastingGuard:
    """The session's watch over the settings files below the roots while commands left running can
    write there: known as they were before such a command started, swept (removed when new or
    replaced) whenever asked, one sweep at a time and off the loop. One per session."""

    def __init__(self) -> None:
        self._roots: tuple[Path, ...] = ()  # where commands that could write were started
        self._known: set[Path] = set()  # settings files below the roots, and since when
        self._since_ns = 0
        self._inodes: dict[Path, int] = {}  # which file each known one was, to tell a replacement
        self._sweeping = asyncio.Lock()

    @property
    def watching(self) -> bool:
        """Whether commands that could write were started (and their roots are watched)."""
        return bool(self._roots)

    async def start(self, policy: SandboxPolicy, idle: Callable[[], bool]) -> frozenset[Path]:
        """Before a command left running starts under `policy`: make what it may not change ready
        (`hold`, which raises `GuardError`), know the settings files below its roots as they are now
        (afresh when `idle` says no command that can write runs: what changed since is the user's),
        and return the places its sandbox holds still."""
        hold(policy)
        if policy.mode == "workspace-write":
            await self._watch(policy.roots, idle)
        return frozenset(held_places(policy))

    async def _watch(self, roots: tuple[Path, ...], idle: Callable[[], bool]) -> None:
        async with self._sweeping:
            if idle():
                self._roots, self._known, self._since_ns, self._inodes = (), set(), time.time_ns(), {}
            added = tuple(r for r in roots if r not in self._roots)
            if added:
                found = await asyncio.to_thread(_watched, added)
                self._known |= found
                self._inodes |= inodes(found)
                self._roots += added

    async def sweep(self) -> list[str]:
        """Remove the settings files below the roots that appeared while commands ran (they would
        grant a session started there what the project may not), and the hook frameworks' files
        (a commit would run what they name); say what was done."""
        async with self._sweeping:
            if not self._roots:
                return []
            self._known, notes = await asyncio.to_thread(self._sweep)
            return notes

    def _sweep(self) -> tuple[set[Path], list[str]]:
        found = _watched(self._roots)
        return sweep(found, self._known, self._since_ns, replaced=self._inodes)

    def sweep_now(self) -> None:
        """The last sweep, without a loop to wait in (at exit)."""
        if self._roots:
            self._known, _ = self._sweep()

    @staticmethod
    async def appeared(policy: SandboxPolicy, held: frozenset[Path]) -> set[Path]:
        """The places a command left running under `policy` would now have to hold still but does
        not (`held`): a repository, hooks folder or included config made since it started."""
        return set(await asyncio.to_thread(held_places, policy)) - held
