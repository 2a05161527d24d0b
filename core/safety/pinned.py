"""File access the kernel pins: a path is opened without following any symbolic link, and a file
is replaced through a directory descriptor, so a concurrent command that swaps a folder for a
symlink cannot redirect a check made on one path to a different file.

The caller passes the path it checked against the policy: a real path, which holds no symlink.
Opening it with every symlink refused (`openat2` RESOLVE_NO_SYMLINKS on Linux 5.6+, otherwise one
`O_NOFOLLOW` component at a time from `/`) either reaches exactly that file or fails with
`PathChanged`; nothing in between can be swapped. Writes go to a temporary file created beside the
target through the parent's descriptor (unnamed until it is complete, where the filesystem allows),
are flushed, and renamed over it with `renameat`: the file is always either the old one or the new
one, and a hard link at the name is replaced, not written through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

_LINUX = sys.platform.startswith("linux")
_NR_OPENAT2 = 437  # the same number on every architecture (added after the syscall table merge)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_O_PATH = getattr(os, "O_PATH", 0)
_DIR_FLAGS = (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC
_TEMP_PREFIX = ".piton-"


class PathChanged(OSError):
    """A component of the path is (now) a symbolic link: the path is not what was checked."""


def _fail(path: Path, e: OSError) -> OSError:
    if e.errno in (errno.ELOOP, errno.EXDEV) or (e.errno == errno.ENOTDIR and not _LINUX):
        return PathChanged(e.errno, f"{path} changed while it was opened (a symbolic link appeared in it)")
    return e


@cache
def _openat2() -> object | None:
    """The raw `syscall` function when the kernel has openat2, else None (checked once)."""
    if not _LINUX:
        return None
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    how = (ctypes.c_uint64 * 3)(os.O_RDONLY | os.O_DIRECTORY, 0, _RESOLVE_NO_SYMLINKS)
    fd = syscall(_NR_OPENAT2, -100, b"/", ctypes.byref(how), ctypes.c_size_t(24))
    if fd < 0:
        return None  # ENOSYS (old kernel) or a seccomp policy that forbids it
    os.close(fd)
    return syscall


def _open_no_symlinks(path: Path, flags: int, mode: int) -> int:
    syscall = _openat2()
    if syscall is not None:
        import ctypes

        how = (ctypes.c_uint64 * 3)(
            flags, mode if flags & os.O_CREAT else 0, _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
        )
        fd = syscall(_NR_OPENAT2, -100, os.fsencode(path), ctypes.byref(how), ctypes.c_size_t(24))  # type: ignore[operator]
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(path))
        return int(fd)
    return _walk_open(path, flags, mode)


def _walk_open(path: Path, flags: int, mode: int) -> int:
    """The same guarantee without openat2: each directory opened beneath the last with O_NOFOLLOW."""
    parts = path.parts[1:]
    fd = os.open("/", _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
        if not parts:
            return os.dup(fd) if flags & os.O_DIRECTORY else os.open("/", flags)
        return os.open(parts[-1], flags | os.O_NOFOLLOW, mode, dir_fd=fd)
    finally:
        os.close(fd)


def open_path(path: Path, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
    """A descriptor for the real path `path`, opened with no symbolic link followed anywhere in it.
    Raises PathChanged when one is met, or the OSError of the open (FileNotFoundError...)."""
    if not path.is_absolute():
        raise ValueError(f"not an absolute path: {path}")
    try:
        extra = (
            os.O_CLOEXEC if flags & _O_PATH else os.O_CLOEXEC | os.O_NOCTTY
        )  # openat2 refuses O_PATH|O_NOCTTY
        fd = _open_no_symlinks(path, flags | extra, mode)
    except OSError as e:
        raise _fail(path, e) from None
    if _LINUX:
        _verify(fd, path)
    return fd


def open_dir(path: Path) -> int:
    return open_path(path, _DIR_FLAGS)


def _verify(fd: int, path: Path) -> None:
    """What the descriptor really is, by the kernel's account, must be the path that was checked
    (a bind-mounted alias or a renamed folder would show here)."""
    with contextlib.suppress(OSError):
        actual = os.readlink(f"/proc/self/fd/{fd}")
        if actual != str(path) and not actual.endswith(" (deleted)"):
            os.close(fd)
            raise PathChanged(errno.EXDEV, f"{path} is really {actual}")


@contextlib.contextmanager
def opened(path: Path, flags: int = os.O_RDONLY) -> Iterator[int]:
    fd = open_path(path, flags)
    try:
        yield fd
    finally:
        os.close(fd)


def make_dirs(path: Path) -> int:
    """A descriptor for the directory `path`, creating missing folders one at a time beneath the
    last existing one, none of them through a symbolic link."""
    missing: list[str] = []
    current = path
    while True:
        try:
            fd = open_dir(current)
            break
        except FileNotFoundError:
            if current.parent == current:
                raise
            missing.append(current.name)
            current = current.parent
    try:
        for name in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            nxt = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError as e:
        os.close(fd)
        raise _fail(path, e) from None
    return fd


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def replace(path: Path, data: bytes, *, create_parents: bool = False) -> os.stat_result:
    """Put `data` at the real path `path` atomically: a temporary file beside it, flushed to disk,
    renamed over it. The file keeps its permission bits (and owner, where allowed); a new file gets
    the usual ones (0666 less the umask). Returns the new file's status."""
    parent_fd = make_dirs(path.parent) if create_parents else open_dir(path.parent)
    try:
        return _replace_in(parent_fd, path, data)
    finally:
        os.close(parent_fd)


def _unnamed(parent_fd: int) -> int | None:
    """A file with no name yet in the folder (`O_TMPFILE`), or None where the filesystem has none:
    a process killed while writing it leaves nothing behind."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return None
    try:
        return os.open(".", flag | os.O_WRONLY | os.O_CLOEXEC, 0o666, dir_fd=parent_fd)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None
        raise


def _write_all(fd: int, data: bytes, old: os.stat_result | None) -> os.stat_result:
    if old is not None:
        os.fchmod(fd, stat.S_IMODE(old.st_mode))
        if old.st_uid != os.geteuid() or old.st_gid != os.getegid():
            with contextlib.suppress(OSError):
                os.fchown(fd, old.st_uid, old.st_gid)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)
    return os.fstat(fd)


def _replace_in(parent_fd: int, path: Path, data: bytes) -> os.stat_result:
    name = path.name
    try:
        old: os.stat_result | None = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        old = None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise PathChanged(errno.EEXIST, f"{path} is no longer a regular file")
    temp = f"{_TEMP_PREFIX}{secrets.token_hex(6)}-{name}"[:255]
    named = False
    try:
        fd = _unnamed(parent_fd)
        if fd is not None:
            try:
                result = _write_all(fd, data, old)
                # the complete file gets its temporary name only now, for the instant before the rename
                os.link(f"/proc/self/fd/{fd}", temp, dst_dir_fd=parent_fd, follow_symlinks=True)
                named = True
            except OSError as e:
                if e.errno not in (errno.ENOENT, errno.EXDEV, errno.EPERM) or named:
                    raise
            finally:
                os.close(fd)
        if not named:  # no unnamed files here (or no /proc to name one through): a named one
            fd = os.open(
                temp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o666,
                dir_fd=parent_fd,
            )
            named = True
            try:
                result = _write_all(fd, data, old)
            finally:
                os.close(fd)
        os.rename(temp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except BaseException:
        if named:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent_fd)
        raise
    with contextlib.suppress(OSError):  # so that the rename itself survives a power cut
        dir_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent_fd)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return result
