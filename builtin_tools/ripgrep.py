"""Finding and running ripgrep for Glob and Grep.

ripgrep runs inside the read-only sandbox when one can start: it then sees only what a sandboxed
command could (credential folders are empty there, other processes' files are not there), whatever
a concurrent command does to the folders it walks. The binary is chosen once, never from a folder
the model's commands can write.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import os
import re
import shlex
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

from piton.core.records import record
from piton.core.safety.policy import SandboxPolicy, real
from piton.core.safety.sandbox import Launch, Sandbox, make_sandbox

RG_TIMEOUT_S = 60.0
_BASE_ARGS = ("--no-config", "--color=never", "--hidden", "--null")
# after any glob of the caller's: of rg's globs the last that matches wins, and a caller's `*` or
# `**/*` matches the `.git` folder itself, which would bring it back
_EXCLUDED = ("--glob=!.git",)


class RipgrepMissing(Exception):
    pass


def _mtime_ns(path: str) -> int:
    try:
        return os.lstat(path).st_mtime_ns
    except OSError:  # gone since it was listed: the oldest
        return 0


def newest_first(paths: list[str], limit: int | None = None) -> list[str]:
    """`paths` most recently modified first (ties in the order given), the first `limit` of them.
    One lstat a path: what ripgrep listed is no symbolic link, and one put there since is not
    followed."""
    try:
        times = [os.lstat(p).st_mtime_ns for p in paths]
    except OSError:
        times = [_mtime_ns(p) for p in paths]
    if limit is None:
        order = sorted(range(len(paths)), key=times.__getitem__, reverse=True)
    else:  # the same as sorting and cutting (ties stay in order), without sorting them all
        order = heapq.nlargest(limit, range(len(paths)), key=times.__getitem__)
    return [paths[i] for i in order]


_SYSTEM_DIRS = ("/usr/bin", "/usr/local/bin", "/bin", "/opt/homebrew/bin")


def _under(path: Path, root: Path) -> bool:
    return path == root or str(path).startswith(str(root).rstrip("/") + "/")


def _usable(candidate: Path, unsafe: tuple[Path, ...]) -> bool:
    if not (candidate.is_file() and os.access(candidate, os.X_OK)):
        return False
    target = real(candidate)
    return not any(_under(target, root) for root in unsafe)


@cache
def rg_path(unsafe: tuple[Path, ...] = ()) -> str:
    """The `rg` to run: the one the ripgrep wheel put beside this Python, else the system's, else
    the first on PATH, skipping any that lies under `unsafe` (the folders the model's commands can
    write, where a planted `rg` would run with Piton's rights)."""
    # beside this Python: a user's install starts it without `site`, where sysconfig names the base's
    scripts = list(dict.fromkeys([Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))]))
    path_dirs = [Path(d) for d in os.environ.get("PATH", "").split(os.pathsep) if d.startswith("/")]
    for folder in (*scripts, *map(Path, _SYSTEM_DIRS), *path_dirs):
        if _usable(folder / "rg", unsafe):
            return str(real(folder / "rg"))
    raise RipgrepMissing(
        "ripgrep (rg) is not installed outside the project: pip install ripgrep, or install it from your OS"
    )


@record(frozen=True)
class RgOutput:
    code: int  # 0 matches, 1 none, 2 an error
    text: str
    error: str

    def paths(self, prefix: str = "") -> list[str]:
        """For --files and -l: rg's --null ends each path with a NUL and nothing else. Each with
        `prefix` put before it (joined as one string: no work per path here)."""
        if not self.text.strip("\0"):
            return []
        return (prefix + self.text.removesuffix("\0").replace("\0", "\0" + prefix)).split("\0")


def _output_file() -> int:
    """A file for ripgrep's output, read once it is done: from a pipe, each file's lines would wake
    the event loop once (ripgrep writes a searched file's results as they come), which costs more
    than the search itself when every file matches. In memory where the system can."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("rg-output", os.MFD_CLOEXEC)
    import tempfile

    with tempfile.TemporaryFile() as spool:  # its name is gone already; the copy of its fd keeps it
        return os.dup(spool.fileno())


def _read_back(fd: int) -> bytes:
    with open(fd, "rb", closefd=False) as f:
        f.seek(0)
        return f.read()


async def run_rg(
    args: list[str], cwd: Path, *, rg: str, sandbox: Sandbox | None, include: Sequence[str] = ()
) -> RgOutput:
    """The ripgrep at `rg` with `args` in `cwd`: inside `sandbox` (a read-only one) when given, and
    only over files that match one of the globs `include` (ripgrep's syntax). Exit code 0 is
    matches, 1 none, 2 an error; anything else (127: the sandbox could not run it) is reported as 2."""
    # rg anchors globs at its working directory; from / that keeps it out of /proc and /sys
    system = ["--glob=!/proc", "--glob=!/sys"] if str(cwd) == "/" else []
    argv = [rg, *_BASE_ARGS, *(f"--glob={glob}" for glob in include), *_EXCLUDED, *system, *args]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}  # no secrets to find
    launch = sandbox.launch("exec " + shlex.join(argv), cwd) if sandbox is not None else Launch(argv, env)
    output = _output_file()
    try:
        process = await asyncio.create_subprocess_exec(
            *launch.argv,
            cwd=cwd,
            env=launch.env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=launch.pass_fds,
            preexec_fn=launch.preexec,
        )
        launch.started()
        try:
            _, err = await asyncio.wait_for(process.communicate(), RG_TIMEOUT_S)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
            raise
        out = _read_back(output)
    finally:
        os.close(output)
        launch.close()
    code = process.returncode or 0
    error = err.decode("utf-8", "replace").strip()
    if code not in (0, 1, 2):
        code, error = 2, error or f"ripgrep exited with status {process.returncode}"
    elif code == 1 and error.startswith("bwrap:"):  # bubblewrap's own failure, never "no matches"
        code, error = 2, f"the sandbox could not start ({error})"
    return RgOutput(code, shown_bytes(out), error)


_STRAY = re.compile("[\udc80-\udcff]")  # bytes surrogateescape could not decode


def shown_bytes(data: bytes) -> str:
    """ripgrep's output as text: a byte that is not UTF-8 (a file name that is not, above all) as
    `\\xNN`, which the file tools take back (`files.resolve`); a U+FFFD would name no file."""
    text = data.decode("utf-8", "surrogateescape")
    if not _STRAY.search(text):
        return text
    return _STRAY.sub(lambda m: f"\\x{ord(m[0]) - 0xDC00:02x}", text)


def list_files(cwd: Path, limit: int) -> list[str]:
    """The project's files as ripgrep lists them (gitignore-aware, hidden ones too, never `.git`),
    relative to `cwd` and sorted; empty when ripgrep cannot say within a few seconds."""
    import subprocess

    try:
        done = subprocess.run(
            [rg_path((real(cwd),)), "--files", "--hidden", "--glob=!.git"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, RipgrepMissing):
        return []
    return sorted(done.stdout.splitlines()[:limit])


def search_sandbox(policy: SandboxPolicy, base: Path, rg: str) -> Sandbox | None:
    """The read-only sandbox a search under `base` with the ripgrep at `rg` runs in (`base` and
    `rg`'s folder shown there even where the sandbox hides them, as under /tmp), or None: without a
    sandbox (danger-full-access, or none can start, when no command runs either) ripgrep runs as
    Piton."""
    if policy.mode == "danger-full-access":
        return None
    # `base` is a real path already: judged by its text, never resolved again, since a folder
    # swapped for a symlink meanwhile would make bwrap mount the symlink's target (a secret) there
    extra = tuple(p for p in (base, Path(rg).parent) if not any(_under(p, root) for root in policy.roots))
    sandbox = make_sandbox(replace(policy.read_only(), extra_dirs=(*policy.extra_dirs, *extra)))
    return None if sandbox.unavailable_reason() else sandbox
