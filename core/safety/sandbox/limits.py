"""Resource limits for sandboxed commands, so a fork bomb, a runaway allocation or `yes > f` cannot
take the machine down.

Four limits, each configurable in the user's own `~/.piton/settings.json` (a project's files cannot
change them) as `"sandbox": {"limits": {"processes": 8192, "memory": "8G", "fileSize": "4G",
"tmpSize": "2G"}}`; a number is a count or bytes, a string may end in K, M, G or T (powers of 1024),
and "unlimited" lifts one. How each is enforced:

- processes: in a per-command cgroup's `pids.max` where Piton can make one (cgroup v2, or v1's
  pids controller: in practice as root), and always by RLIMIT_NPROC, set inside the sandbox's user
  namespace so it counts the command's own processes. The kernel exempts real uid 0 from
  RLIMIT_NPROC, so as root without a writable cgroup there is no process limit.
- memory: the cgroup's `memory.max` (cgroup v2) for all the command's processes together; without
  one, RLIMIT_DATA for each process on its own (many processes can still add up).
- file size: RLIMIT_FSIZE, for every user (a write past it fails, and the writer gets SIGXFSZ).
- tmpfs: the private /tmp and /dev/shm get `--size` when the bubblewrap in use supports it.

Threads count as processes for both the cgroup and the rlimit, hence a default well above what a
parallel build or test run starts (cargo, `pytest -n`, jest, `go test ./...` on many cores).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import re
import resource
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import field, replace
from functools import cache
from pathlib import Path
from typing import Any

from piton.core.records import record

GiB = 1 << 30
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def _half_of_ram() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError):
        return 8 * GiB


@record(frozen=True)
class Limits:
    """Per command; None is no limit."""

    processes: int | None = 8192
    memory: int | None = field(default_factory=_half_of_ram)  # bytes
    file_size: int | None = 4 * GiB  # bytes, per file
    tmp_size: int | None = 2 * GiB  # bytes, for /tmp and for /dev/shm

    def describe(self) -> str:
        def size(n: int | None) -> str:
            return "unlimited" if n is None else f"{n / GiB:g} GiB" if n >= GiB else f"{n >> 20} MiB"

        processes = "unlimited" if self.processes is None else str(self.processes)
        return (
            f"{processes} processes, {size(self.memory)} memory, {size(self.file_size)} per file, "
            f"{size(self.tmp_size)} /tmp"
        )


_KEYS = {"processes": "processes", "memory": "memory", "fileSize": "file_size", "tmpSize": "tmp_size"}
_MINIMUM = {"processes": 16, "memory": 32 << 20, "file_size": 1 << 20, "tmp_size": 1 << 20}


def _value(raw: Any) -> int | None:
    """A count or a size: None for "unlimited"; ValueError for anything else."""
    if isinstance(raw, str) and raw.strip().lower() == "unlimited":
        return None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and (match := _SIZE.match(raw)):
        return int(float(match[1]) * _UNITS[match[2].upper()])
    raise ValueError


def parse(raw: Mapping[str, Any]) -> tuple[Limits, list[str]]:
    """Limits from the settings' `"sandbox": {"limits": {...}}`, and a warning per value not used."""
    limits, warnings = Limits(), []
    for key, value in raw.items():
        name = _KEYS.get(key)
        if name is None:
            warnings.append(f"ignored sandbox.limits.{key}: one of {', '.join(_KEYS)}")
            continue
        try:
            number = _value(value)
        except ValueError:
            number = -1
        if number is not None and number < _MINIMUM[name]:
            warnings.append(
                f"ignored sandbox.limits.{key}={value!r}: use a number (at least {_MINIMUM[name]}), "
                'a size such as "4G", or "unlimited"'
            )
            continue
        limits = replace(limits, **{name: number})
    return limits, warnings


def ulimit_prefix(
    limits: Limits,
    *,
    processes: bool = True,
    memory: bool = True,
    current: Callable[[int], tuple[int, int]] = resource.getrlimit,
) -> str:
    """Shell lines that set the rlimits, run first inside the sandbox: RLIMIT_NPROC counts
    processes per user namespace there, so set inside it counts the command's own. Never above a
    limit Piton already runs under; bash counts sizes in KiB. A command cannot raise them again (that
    needs CAP_SYS_RESOURCE, which the sandbox drops). `current` reads the limits Piton runs under."""
    wanted = [
        ("-u", resource.RLIMIT_NPROC, limits.processes if processes else None, 1),
        ("-d", resource.RLIMIT_DATA, limits.memory if memory else None, 1024),
        ("-f", resource.RLIMIT_FSIZE, limits.file_size, 1024),
    ]
    lines = []
    for flag, which, value, unit in wanted:
        if value is None:
            continue
        soft = current(which)[0]
        if soft != resource.RLIM_INFINITY:
            value = min(value, soft)
        lines.append(f"ulimit {flag} {max(1, value // unit)}")
    return "".join(f"{line}\n" for line in lines)


# ---- cgroups: a limit on all of a command's processes together --------------------------------


@record(frozen=True)
class _Hierarchy:
    parent: Path  # where per-command groups are made
    files: tuple[str, ...]  # the limit files a group there has: pids.max, memory.max
    # the file a process enters a group through: v1's `tasks` moves the writing thread alone, which
    # the kernel does without the lock (and its wait for an RCU grace period, ~10 ms) that moving a
    # whole process takes; v2 moves only whole processes, through `cgroup.procs`
    entry: str = "cgroup.procs"


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, filesystem type, super options) of each cgroup mount."""
    out = []
    with contextlib.suppress(OSError), open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if " - " not in line:
                continue
            after = line.split(" - ", 1)[1].split()
            if len(after) >= 3 and after[0] in ("cgroup", "cgroup2"):
                out.append((fields[4].replace("\\040", " "), after[0], after[2]))
    return out


def _own_paths() -> dict[str, str]:
    """This process's cgroup per hierarchy: "" for v2, a controller list for each v1 one."""
    out = {}
    with contextlib.suppress(OSError), open("/proc/self/cgroup", encoding="utf-8") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            out[controllers] = path
    return out


def _usable(parent: Path, files: tuple[str, ...]) -> bool:
    """Whether a group made under `parent` gets these limit files (a trial group, removed again)."""
    if not os.access(parent, os.W_OK):
        return False
    trial = parent / f"piton-{os.getpid()}-trial"
    try:
        trial.mkdir()
    except OSError:
        return False
    try:
        return all((trial / name).exists() for name in files)
    finally:
        with contextlib.suppress(OSError):
            trial.rmdir()


def _remove_stale(parent: Path) -> None:
    """Groups an earlier Piton left behind (it was killed before it could remove them)."""
    with contextlib.suppress(OSError):
        for group in parent.glob("piton-*-*"):
            pid = group.name.split("-")[1]
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                _remove(group)
            except OSError:
                pass


@cache
def hierarchies() -> tuple[_Hierarchy, ...]:
    """Where per-command groups can be made, probed once. cgroup v2 at the root of its mount (a
    group holding processes, such as Piton's own, cannot hand controllers to groups below it), for
    pids and memory; else v1's pids controller below Piton's own group in it. v1's memory
    controller is left alone: it is deprecated and often another runtime's to manage."""
    mounts, own = _mounts(), _own_paths()
    for point, kind, _ in mounts:
        if kind == "cgroup2":
            wanted = ("pids.max", "memory.max")
            try:
                enabled = (Path(point) / "cgroup.subtree_control").read_text().split()
            except OSError:
                continue
            if {"pids", "memory"} <= set(enabled) and _usable(Path(point), wanted):
                _remove_stale(Path(point))
                return (_Hierarchy(Path(point), wanted),)
    for point, kind, options in mounts:
        if kind == "cgroup" and "pids" in options.split(","):
            path = next((p for c, p in own.items() if "pids" in c.split(",")), None)
            if path is None:
                continue
            parent = Path(point) / path.lstrip("/")
            if _usable(parent, ("pids.max",)):
                _remove_stale(parent)
                return (_Hierarchy(parent, ("pids.max",), "tasks"),)
    return ()


_REMOVE_WAIT_S = 0.5
_counter = itertools.count()
_leftover: set[Path] = set()  # groups that were still busy when their command ended


def _kill(group: Path) -> None:
    """Whatever the command left running in its group dies (it may have escaped its session)."""
    with contextlib.suppress(OSError):
        (group / "cgroup.kill").write_text("1")  # cgroup v2, Linux 5.14
        return
    with contextlib.suppress(OSError):
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)


def _remove(group: Path, wait_s: float = 0.0) -> bool:
    """Kill what is left in `group` and remove it; False if it is still busy after `wait_s`."""
    deadline = time.monotonic() + wait_s
    _kill(group)
    while True:
        try:
            group.rmdir()
        except FileNotFoundError:
            return True
        except OSError:  # busy: the killed processes are still on their way out
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
            continue
        return True


def _sweep(wait_s: float = 0.0) -> None:
    deadline = time.monotonic() + wait_s
    while _leftover:
        for group in list(_leftover):
            if _remove(group):
                _leftover.discard(group)
        if not _leftover or time.monotonic() >= deadline:
            return
        time.sleep(0.01)


atexit.register(_sweep, 2.0)


# Moves the shell (one thread) into each group through the entry file named before `--`, then runs
# what follows in its place: the launcher spawns this instead of running Python code between fork
# and exec (a `preexec_fn`), which would force a full fork of Piton's process where a vfork does. A
# group that cannot be entered stops the command: it never runs without its limits.
_ENTER = (
    'while [ "$1" != -- ]; do echo 0 >"$1" || { echo "piton: cannot enter the cgroup $1" >&2; exit 125; }; '
    'shift; done; shift; exec "$@"'
)
_SH = "/bin/sh"  # a fixed place no command can write (never a PATH lookup)


@record
class CommandGroup:
    """One command's cgroup (one per hierarchy in use): made before it starts, entered by the
    process that runs bwrap before it does, removed after it ends."""

    groups: list[Path]
    limits_memory: bool
    entries: tuple[str, ...] = ()  # the file each group is entered through (`_Hierarchy.entry`)

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` run by a process that first moves itself (and so all it starts) into the groups."""
        names = self.entries or ("cgroup.procs",) * len(self.groups)
        files = [str(group / name) for group, name in zip(self.groups, names, strict=True)]
        return [_SH, "-c", _ENTER, "piton-cgroup", *files, "--", *argv]

    def remove(self) -> None:
        """After the command: usually empty at once; a survivor (bubblewrap's sandbox init can miss
        its parent's death while it starts) is killed and waited for, briefly."""
        for group in self.groups:
            if not _remove(group, _REMOVE_WAIT_S):
                _leftover.add(group)


def command_group(limits: Limits) -> CommandGroup | None:
    """A fresh cgroup with the process and memory limits, or None where none can be made."""
    if limits.processes is None and limits.memory is None:
        return None
    _sweep()
    groups: list[Path] = []
    entries: list[str] = []
    memory = False
    try:
        for hierarchy in hierarchies():
            group = hierarchy.parent / f"piton-{os.getpid()}-{next(_counter)}"
            group.mkdir()
            groups.append(group)
            entries.append(hierarchy.entry)
            if "pids.max" in hierarchy.files and limits.processes is not None:
                (group / "pids.max").write_text(str(limits.processes))
            if "memory.max" in hierarchy.files and limits.memory is not None:
                (group / "memory.max").write_text(str(limits.memory))
                with contextlib.suppress(OSError):  # out of memory: the whole command goes, not a part
                    (group / "memory.oom.group").write_text("1")
                memory = True
    except OSError:
        CommandGroup(groups, memory).remove()
        return None
    return CommandGroup(groups, memory, tuple(entries)) if groups else None
