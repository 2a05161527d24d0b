"""Linux's inotify, as the settings index uses it: one instance for the whole process, one watch per
folder, made through a descriptor of that folder (so the watch is on exactly the folder that was
read, whatever its path leads to a moment later), and the events since the last read, per watch.

Watches are a per-user allowance that the user's editors and file watchers share
(`fs.inotify.max_user_watches`): Piton takes at most a quarter of it, and a folder it cannot watch is
checked by its change time instead. Nothing here on other systems: `watcher()` is None there.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
from functools import cache

IN_ATTRIB = 0x4
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ISDIR = 0x40000000
_IN_ONLYDIR = 0x01000000
# every change to the entries of a folder or to the folder itself (its mode: whether it can be read)
_MASK = IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)
_DEFAULT_ALLOWANCE = 8192  # the kernel's default before 5.11, when the limit cannot be read


class Inotify:
    """The process's inotify instance. Not thread-safe: the caller holds a lock around it."""

    def __init__(self, fd: int, add: object, rm: object, most: int) -> None:
        self.fd = fd
        self._add = add
        self._rm = rm
        self.most = most  # watches this process may hold
        self.watches: set[int] = set()

    def watch(self, folder_fd: int) -> int | None:
        """A watch on the folder open at `folder_fd`, or None (the allowance is spent, or the kernel
        refused): that folder is then checked by its change time."""
        if len(self.watches) >= self.most:
            return None
        path = f"/proc/self/fd/{folder_fd}".encode()  # the folder itself, not what its path leads to now
        wd = int(self._add(self.fd, path, _MASK | _IN_ONLYDIR))  # type: ignore[operator]
        if wd < 0:
            return None
        self.watches.add(wd)
        return wd

    def unwatch(self, wd: int) -> None:
        if wd in self.watches:
            self.watches.discard(wd)
            self._rm(self.fd, wd)  # type: ignore[operator]

    def read(self) -> tuple[list[tuple[int, int, str]], bool]:
        """What happened since the last read, in order: (watch, mask, name of the entry or "" for
        the folder itself); and whether some were lost (the kernel's queue overflowed)."""
        events: list[tuple[int, int, str]] = []
        overflowed = False
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return events, overflowed
            offset = 0
            while offset < len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
                offset += _EVENT.size + length
                overflowed |= bool(mask & IN_Q_OVERFLOW)
                if mask & IN_IGNORED:  # the kernel dropped the watch: the folder is gone
                    self.watches.discard(wd)
                events.append((wd, mask, os.fsdecode(name)))


def _allowance() -> int:
    with contextlib.suppress(OSError, ValueError), open("/proc/sys/fs/inotify/max_user_watches") as f:
        return int(f.read())
    return _DEFAULT_ALLOWANCE


@cache
def watcher() -> Inotify | None:
    """The process's instance, made at first use; None where there is no inotify (or no instance
    can be made: the user's allowance of instances is spent)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    add, rm = libc.inotify_add_watch, libc.inotify_rm_watch
    add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    rm.argtypes = [ctypes.c_int, ctypes.c_int]
    fd = int(libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))
    if fd < 0:
        return None
    return Inotify(fd, add, rm, _allowance() // 4)
