"""Ending a process and everything it started, including what left its process group.

Killing a command's process group is not enough. bubblewrap's first child (the init of the
command's PID namespace) starts a session of its own, and it dies with bubblewrap only once it has
asked the kernel to (`--die-with-parent`). Kill bubblewrap in the moment between the two and the
namespace runs on with no parent. A command outside a sandbox can leave its group too (`setsid`).

So the group is stopped first: a stopped bubblewrap cannot start another child. Then every
descendant still linked to it by parent id is found in /proc and stopped too. Only then is
everything killed. A stopped process cannot exit, so its id cannot pass to another process before
the kill. Killing a namespace's init ends the whole namespace.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from typing import Protocol

_ROUNDS = 8  # stop-and-look rounds; a tree that keeps forking past this is killed as found


def _parents() -> dict[int, int]:
    """Each process's parent, read from /proc (empty where there is none, as on macOS)."""
    found: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # it ended while we looked
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")"
        fields = stat.rpartition(b")")[2].split()
        if len(fields) > 1:
            found[int(name)] = int(fields[1])
    return found


def descendants(pid: int) -> set[int]:
    """Every process whose chain of parents reaches `pid` now."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    seen: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def _signal_each(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def end_tree(pid: int) -> None:
    """SIGKILL the process group `pid` leads and every descendant of `pid`, wherever its group.

    For a process started with `start_new_session=True` that has not been waited for yet (its id
    is still its own, and its children are still linked to it)."""
    _signal_group(pid, signal.SIGSTOP)
    stopped: set[int] = set()
    for _ in range(_ROUNDS):
        fresh = descendants(pid) - stopped
        if not fresh:
            break
        _signal_each(fresh, signal.SIGSTOP)
        stopped |= fresh
    _signal_each(stopped, signal.SIGKILL)
    _signal_group(pid, signal.SIGKILL)


class _Started(Protocol):
    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...


def kill_started(process: _Started) -> None:
    """Kill what a process started in its own session left: while it runs (or has not been waited
    for), its whole tree; once it has been waited for, its id may be another's, so only what is
    left in its group (a group's id is not given out again while the group has members)."""
    if process.returncode is None:
        end_tree(process.pid)
    else:
        _signal_group(process.pid, signal.SIGKILL)
